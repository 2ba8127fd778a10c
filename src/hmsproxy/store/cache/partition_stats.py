"""A cached table's partition column statistics, by partition name, held in shards so that a write copies one.

A cache entry never changes: a write makes a new one. With every partition's statistics in one dict, a write to
one partition copied the dict, and the cache's bound counted it entry by entry: work that grew with the table.
Here the names are spread over up to SHARDS dicts by hash, so a write copies the dicts it changes and the map of
shards (at most SHARDS pointers), and the count of column statistics is carried from the map it came from.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

from hmsproxy.idl import hms

SHARDS = 256   # 100,000 partitions with statistics: a write copies about 400 of them

Columns = Mapping[str, hms.ColumnStatisticsObj]   # by column name


class PartitionStats(Mapping[str, Columns]):
    """Partition name -> column name -> statistics; never changes (`changed` makes a new one)."""

    __slots__ = ("_length", "_shards", "columns")

    def __init__(self, shards: dict[int, dict[str, Columns]] | None = None, length: int = 0, columns: int = 0) -> None:
        self._shards = shards or {}
        self._length = length
        self.columns = columns   # column statistics held, over every partition (the cache's size estimate)

    @staticmethod
    def of(by_name: Mapping[str, Columns]) -> PartitionStats:
        return PartitionStats().changed(by_name)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as a plain dict (prewarm's workers send entries): the shards follow str hashes, which differ
        between processes."""
        return PartitionStats.of, (dict(self.items()),)

    def __getitem__(self, name: str) -> Columns:
        return self._shards.get(hash(name) % SHARDS, {})[name]

    def __iter__(self) -> Iterator[str]:
        for shard in self._shards.values():
            yield from shard

    def __len__(self) -> int:
        return self._length

    def changed(self, changes: Mapping[str, Columns | None]) -> PartitionStats:
        """With each named partition's statistics set, or removed where the change is None or empty."""
        copied: dict[int, dict[str, Columns]] = {}   # the shards this change touches, copied once each
        length, columns = self._length, self.columns
        for name, new in changes.items():
            number = hash(name) % SHARDS
            shard = copied.get(number)
            if shard is None:
                shard = copied[number] = dict(self._shards.get(number, {}))
            old = shard.pop(name, None)
            if old is not None:
                length, columns = length - 1, columns - len(old)
            if new:
                shard[name] = new
                length, columns = length + 1, columns + len(new)
        shards = dict(self._shards)
        for number, shard in copied.items():
            if shard:
                shards[number] = shard
            else:
                shards.pop(number, None)
        return PartitionStats(shards, length, columns)

    def renamed(self, old_name: str, new_name: str) -> PartitionStats:
        """With a renamed partition's statistics under its new name."""
        columns = self.get(old_name)
        return self if columns is None else self.changed({old_name: None, new_name: columns})
