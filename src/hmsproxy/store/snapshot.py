"""The transaction snapshot a read carries (Hive 3+ requests send the table's ValidWriteIdList and id).

The handler states it for the duration of one call; a store that can answer from something older than the
database (the cache) checks it, the database itself needs not. A context variable keeps the RawStore
methods free of arguments only one implementation uses.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ReadSnapshot:
    valid_write_ids: str | None = None   # the table's ValidWriteIdList string, as the client sent it
    table_id: int | None = None          # the table id the client expects (None or -1: any)


NO_SNAPSHOT = ReadSnapshot()
request_snapshot: contextvars.ContextVar[ReadSnapshot] = contextvars.ContextVar("request_snapshot",
                                                                                default=NO_SNAPSHOT)


@contextlib.contextmanager
def reading_at(valid_write_ids: str | None, table_id: int | None) -> Iterator[None]:
    token = request_snapshot.set(ReadSnapshot(valid_write_ids or None,
                                              table_id if table_id is not None and table_id >= 0 else None))
    try:
        yield
    finally:
        request_snapshot.reset(token)
