"""Hive's refusals of a list of partitions to add, shared by the handler and the SQL store's own guard."""
from __future__ import annotations

from collections.abc import Sequence

from hmsproxy.idl import hms
from hmsproxy.idl.java_text import java_text


def check_new_and_distinct(names: Sequence[str], parts: Sequence[hms.Partition], existing: set[str],
                           if_not_exists: bool) -> None:
    """Hive's checks of partitions to add, in its order: the first one that exists (unless `if_not_exists`),
    then one named twice; its messages print the partition as the client sent it (java_text)."""
    if existing and not if_not_exists:
        first = next(part for name, part in zip(names, parts) if name in existing)
        raise hms.AlreadyExistsException(message=f"Partition already exists: {java_text(first)}")
    seen: set[str] = set()
    for name, part in zip(names, parts):
        if name in seen and name not in existing:
            raise hms.MetaException(message=f"Duplicate partitions in the list: {java_text(part)}")
        seen.add(name)
