"""The partition values of one cached table, sorted per key, so that a filter selects partitions without
reading every one.

For each key a filter compares, and each way it reads that key's values (as strings in Java's order, as
integers, decimals, dates or timestamps: partition_filter.ORDERS), the readings are sorted once, the first time
a filter asks, and kept with the set of partitions they index (PartitionSet is immutable, so the index never
goes stale; a write builds a new set and so a new index). A filter's plan of key ranges becomes positions by
binary search: for AND the candidates of its narrowest part only (counted first, without collecting them; the
predicate tests the other parts), for OR the union of its parts. What the plan cannot narrow (!=, a LIKE with
no literal prefix) leaves every partition a candidate; the filter's predicate then decides on the candidates.
"""
from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from hmsproxy.partition_filter import ORDERS, AllOf, AnyOf, Plan, Range


class _SortedReadings:
    """One key's values read in one order, sorted, with the position of the partition each came from."""

    def __init__(self, column: Sequence[str], order: str) -> None:
        read = ORDERS[order]
        readings = [(reading, position) for position, reading in enumerate(map(read, column)) if reading is not None]
        readings.sort()
        self.readings: list[Any] = [reading for reading, _ in readings]
        self.positions = array("I", (position for _, position in readings))

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

    def candidates(self, plan: Plan) -> set[int] | None:
        """Positions of partitions, among them every one the plan's ranges hold; None when it narrows nothing."""
        if plan is None:
            return None
        if isinstance(plan, Range):
            readings = self._readings(plan.key, plan.order)
            start, end = readings.span(plan)
            return set(readings.positions[start:end])
        if isinstance(plan, AllOf):
            counted = [(count, i) for i, count in enumerate(map(self._count, plan.parts)) if count is not None]
            return self.candidates(plan.parts[min(counted)[1]]) if counted else None
        assert isinstance(plan, AnyOf)
        found = [self.candidates(part) for part in plan.parts]
        if any(f is None for f in found):
            return None
        return set().union(*(f for f in found if f is not None))

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
