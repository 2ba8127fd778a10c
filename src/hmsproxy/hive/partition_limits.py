"""The two limits on a partition listing, as both ways of answering one apply them (rpc/tiers.py): the client's
`max_parts`, which truncates, and metastore.limit.partition.request (`--partition-request-limit`), which refuses."""
from __future__ import annotations

from typing import Protocol, Self, TypeVar


class _Sliceable(Protocol):   # a list, or an EncodedList
    def __getitem__(self, window: slice, /) -> Self: ...


S = TypeVar("S", bound=_Sliceable)


def first_parts(items: S, max_parts: int | None) -> S:
    """The first `max_parts` items; all of them when it is None or negative (Hive's "no limit")."""
    return items if max_parts is None or max_parts < 0 else items[:max_parts]


def over_request_limit(count: int, limit: int) -> bool:
    """Whether a listing of `count` partitions exceeds the request limit (negative: none), and must be refused."""
    return 0 <= limit < count
