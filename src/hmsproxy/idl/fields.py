"""A field the IDL leaves optional where the value at hand always has it."""
from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """The field, which every object that reaches the caller has set although the IDL makes it optional (a
    stored table's name and storage descriptor, a database's location, a partition key's name, ...)."""
    if value is None:
        raise ValueError("an IDL object lacks a field that is always set where it comes from")
    return value
