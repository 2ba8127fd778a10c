"""The ready tier of a store (rpc/tiers.py): answers it holds as Thrift bytes, to be sent as they are, and how
whoever keeps them learns that they are no longer current.

Only a store that keeps answers in memory (the cache) has this tier: it is an optional protocol, not part of
RawStore, and a store without it is simply asked the ordinary way.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

from hmsproxy.store.reader import Reader


class Held:
    """Current while the store holds what it stands for; set off, for good, when that is replaced or removed."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current = True


class Ready(NamedTuple):
    answer: bytes   # a call's answer (the `success` value) as Thrift bytes
    held: Held      # current while the store still answers with these bytes


@runtime_checkable
class ReadyAnswers(Protocol):
    """A store that answers some reads with bytes it holds ready. Each method declines (None) whatever the ordinary
    way must decide; what it answers is byte for byte what the ordinary way would send, and counted as the same
    cache hits."""

    def ready_table(self, reader: Reader, cat: str, db_name: str, tbl_name: str) -> Ready | None:
        """get_table's answer."""

    def ready_partitions_by_filter(self, reader: Reader, cat: str, db_name: str, tbl_name: str, filter_text: str,
                                   max_parts: int, request_limit: int) -> Ready | None:
        """get_partitions_by_filter's answer: its first `max_parts` partitions (all when negative); declined when
        more than `request_limit` (the partition request limit) would be sent, which the ordinary way refuses."""

    def ready_again(self, reader: Reader, held: Held) -> bool:
        """Whether an answer given with `held` is still current: it may be given `reader` again, counted as the
        cache hits it is."""
