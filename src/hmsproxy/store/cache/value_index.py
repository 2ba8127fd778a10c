"""The partition values of one cached table, sorted per key, so that a filter selects partitions without
reading every one.

For each key a filter compares, and each way it reads that key's values (as strings in Java's order, as
integers, decimals, dates or timestamps: partition_filter.ORDERS), the readings are sorted once, the first time
a filter asks, and kept with the set of partitions they index (PartitionSet is immutable, so the index never
goes stale; a write builds a new set and so a new index). A filter's plan of key ranges becomes positions by
binary search: intersected for AND, united for OR. What the plan cannot narrow (!=, a LIKE with no literal
prefix) leaves every partition a candidate; the filter's predicate then decides on the candidates alone.
"""
from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Sequence
from typing import Any

from hmsproxy.partition_filter import ORDERS, AllOf, AnyOf, Plan, Range


class _SortedReadings:
    """One key's values read in one order, sorted, with the position of the partition each came from."""

    def __init__(self, values: Sequence[tuple[str, ...]], key: int, order: str) -> None:
        read = ORDERS[order]
        readings = [(reading, position) for position, reading in enumerate(read(v[key]) for v in values)
                    if reading is not None]
        readings.sort()
        self.readings: list[Any] = [reading for reading, _ in readings]
        self.positions = array("I", (position for _, position in readings))

    def within(self, bounds: Range) -> Sequence[int]:
        low = 0 if bounds.low is None else (bisect.bisect_left if bounds.low_inclusive else bisect.bisect_right)(
            self.readings, bounds.low)
        high = len(self.readings) if bounds.high is None else (
            bisect.bisect_right if bounds.high_inclusive else bisect.bisect_left)(self.readings, bounds.high)
        return self.positions[low:high] if low < high else ()


class ValueIndex:
    def __init__(self, values: Sequence[tuple[str, ...]]) -> None:
        self._values = values
        self._sorted: dict[tuple[int, str], _SortedReadings] = {}
        self._lock = threading.Lock()   # one build per key and order, however many readers ask at once

    def candidates(self, plan: Plan) -> set[int] | None:
        """The positions of the partitions the plan's ranges hold; None when it narrows nothing."""
        if plan is None:
            return None
        if isinstance(plan, Range):
            return set(self._readings(plan.key, plan.order).within(plan))
        found = [self.candidates(part) for part in plan.parts]
        if isinstance(plan, AllOf):
            narrowed = sorted((f for f in found if f is not None), key=len)
            return narrowed[0].intersection(*narrowed[1:]) if narrowed else None
        assert isinstance(plan, AnyOf)
        if any(f is None for f in found):
            return None
        return set().union(*(f for f in found if f is not None))

    def _readings(self, key: int, order: str) -> _SortedReadings:
        with self._lock:
            readings = self._sorted.get((key, order))
            if readings is None:
                readings = self._sorted[(key, order)] = _SortedReadings(self._values, key, order)
            return readings
