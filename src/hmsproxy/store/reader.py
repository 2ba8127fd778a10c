"""Who reads, and at which snapshot: what a cached read needs to know of the call it answers.

The method names the Thrift call (the cache counts its hits and misses per method). Hive 3+ request-style reads
also carry the table's ValidWriteIdList and id: a store that can answer from something older than the database
(the cache) checks them, the database itself needs not. A store hands out a view of itself bound to one reader
(RawStore.serving), so that the read methods keep only the arguments every store uses.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Reader:
    method: str = "internal"             # the Thrift call; "internal" for the server's own reads (prewarm, sync)
    valid_write_ids: str | None = None   # the table's ValidWriteIdList string, as the client sent it
    table_id: int | None = None          # the table id the client expects (None: any)

    def at(self, valid_write_ids: str | None, table_id: int | None) -> Reader:
        """The same call reading at a request's snapshot (an empty list or a negative id: none given)."""
        return replace(self, valid_write_ids=valid_write_ids or None,
                       table_id=table_id if table_id is not None and table_id >= 0 else None)


INTERNAL = Reader()


def shallow_copy(obj: T, **changed: object) -> T:
    """A copy of `obj` sharing all its attributes but `changed`: how the views bound to one call are made, once
    per call (a third of copy.copy's cost)."""
    view: T = object.__new__(type(obj))
    view.__dict__.update(obj.__dict__, **changed)
    return view
