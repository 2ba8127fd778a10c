"""The partition values of one cached table, sorted per key, so that a filter selects partitions without
reading every one.

For each key a filter compares, and each way it reads that key's values (as strings in Java's order, as
integers, decimals, dates or timestamps: partition_filter.plan.ORDERS), the readings are sorted once, the first time
a filter asks, and kept with the set of partitions they index (PartitionSet is immutable, so the index never
goes stale; a write builds a new set and so a new index). A filter's plan of key ranges becomes positions by
binary search: for OR the union of its parts; for AND the positions of its narrowest part (counted first,
without collecting them), kept where each other range holds them too, which the rank of a partition's reading
tells in one comparison. Where every part is a comparison the positions are exactly the matches and the
filter's predicate tests none of them. What the plan cannot narrow (!=, a LIKE with no literal prefix) leaves
every partition a candidate; the filter's predicate then decides on the candidates.
"""
from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from hmsproxy.hive.partition_filter.plan import ORDERS, AllOf, AnyOf, Plan, Range

NO_RANK = 0xFFFFFFFF   # the rank of a value that does not read in an order: past the end of every span


class _SortedReadings:
    """One key's values read in one order, sorted, with the position of the partition each came from."""

    def __init__(self, column: Sequence[str], order: str) -> None:
        read = ORDERS[order]
        readings = [(reading, position) for position, reading in enumerate(map(read, column)) if reading is not None]
        readings.sort()
        self.readings: list[Any] = [reading for reading, _ in readings]
        self.positions = array("I", (position for _, position in readings))
        # by position, where its reading is in `readings` (NO_RANK: it has none), so a range's span tells at once
        # whether it holds that partition
        self.ranks = array("I", [NO_RANK]) * len(column)
        for rank, position in enumerate(self.positions):
            self.ranks[position] = rank

    def span(self, bounds: Range) -> tuple[int, int]:
        """Where the readings within the bounds are: [start, end) of the sorted readings."""
        low = 0 if bounds.low is None else (bisect.bisect_left if bounds.low_inclusive else bisect.bisect_right)(
            self.readings, bounds.low)
        high = len(self.readings) if bounds.high is None else (
            bisect.bisect_right if bounds.high_inclusive else bisect.bisect_left)(self.readings, bounds.high)
        return low, max(low, high)


class ValueIndex:
    def __init__(self, column: Callable[[int], Sequence[str]]) -> None:
        self._column = column   # every partition's value of one key (by its position), in partition order
        self._sorted: dict[tuple[int, str], _SortedReadings] = {}
        self._lock = threading.Lock()   # one build per key and order, however many readers ask at once

    def select(self, plan: Plan) -> tuple[list[int] | None, bool]:
        """Positions of partitions, sorted, among them every one the plan's ranges hold (None when it narrows
        nothing); and whether they are exactly the filter's matches (every range it took is exact)."""
        if plan is None:
            return None, False
        if isinstance(plan, Range):
            readings = self._readings(plan.key, plan.order)
            start, end = readings.span(plan)
            return sorted(readings.positions[start:end]), plan.exact
        if isinstance(plan, AllOf):
            counted = [(count, i) for i, count in enumerate(map(self._count, plan.parts)) if count is not None]
            if not counted:
                return None, False
            narrowest = min(counted)[1]
            positions, exact = self.select(plan.parts[narrowest])
            assert positions is not None   # a part with a count narrows
            for i, part in enumerate(plan.parts):
                if i == narrowest:
                    continue
                if isinstance(part, Range):
                    positions, exact = self._within(part, positions), exact and part.exact
                else:
                    exact = False
            return positions, exact
        assert isinstance(plan, AnyOf)
        found = [self.select(part) for part in plan.parts]
        if any(positions is None for positions, _ in found):
            return None, False
        return sorted(set().union(*(positions or () for positions, _ in found))), all(exact for _, exact in found)

    def selected_at_once(self, plan: Plan, most: int) -> list[int] | None:
        """The positions `select` gives, when they are exactly the matches and cost no more than binary searches
        and `most` steps: every key and order the plan reads is sorted already and it selects from at most `most`
        candidates. None otherwise."""
        if plan is None or not self._sorted_already(plan):
            return None
        count = self._count(plan)
        if count is None or count > most:
            return None
        positions, exact = self.select(plan)
        return positions if exact else None

    def _sorted_already(self, plan: Plan) -> bool:
        if isinstance(plan, Range):
            return (plan.key, plan.order) in self._sorted
        return plan is not None and all(map(self._sorted_already, plan.parts))

    def _within(self, bounds: Range, positions: list[int]) -> list[int]:
        """The positions whose reading lies within the bounds."""
        readings = self._readings(bounds.key, bounds.order)
        start, end = readings.span(bounds)
        ranks = readings.ranks
        return [position for position in positions if start <= ranks[position] < end]

    def _count(self, plan: Plan) -> int | None:
        """How many candidates the plan selects, at most, found without collecting them (None: every one)."""
        if plan is None:
            return None
        if isinstance(plan, Range):
            start, end = self._readings(plan.key, plan.order).span(plan)
            return end - start
        counts = [self._count(part) for part in plan.parts]
        if isinstance(plan, AllOf):
            return min((c for c in counts if c is not None), default=None)
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    def _readings(self, key: int, order: str) -> _SortedReadings:
        with self._lock:
            readings = self._sorted.get((key, order))
            if readings is None:
                readings = self._sorted[(key, order)] = _SortedReadings(self._column(key), order)
            return readings
