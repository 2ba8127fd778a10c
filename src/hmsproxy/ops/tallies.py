"""Per-call counts kept without locks: each thread adds to its own tallies, and a scrape adds them up.

prometheus_client's Counter and Histogram take a lock on every increment, and a labelled histogram several:
on a cached get_table that was a fifth of the server's CPU per call. Here a call adds to a dict only its own
thread writes (no lost update, no lock); the metrics collector (metrics.py) sums every thread's dict when
Prometheus scrapes. The tallies of threads that ended are folded into one, so the list of threads stays bounded.
"""
from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class _Rows(Generic[K]):
    """key -> a row of `width` numbers, one dict per thread, summed element by element when asked."""

    def __init__(self, width: int) -> None:
        self._width = width
        self._local = threading.local()
        self._threads: list[tuple[threading.Thread, dict[K, list[float]]]] = []
        self._ended: dict[K, list[float]] = {}
        self._lock = threading.Lock()   # guards the two above: taken once per thread, and by totals()

    def row(self, key: K) -> list[float]:
        """This thread's row of `key`, for it alone to add to."""
        try:
            mine: dict[K, list[float]] = self._local.rows
        except AttributeError:
            mine = self._local.rows = {}
            with self._lock:
                self._threads.append((threading.current_thread(), mine))
        found = mine.get(key)
        if found is None:
            found = mine[key] = [0.0] * self._width
        return found

    def totals(self) -> dict[K, list[float]]:
        with self._lock:
            alive = [(thread, mine, thread.is_alive()) for thread, mine in self._threads]   # asked once each
            for _, mine, is_alive in alive:
                if not is_alive:   # its thread writes no more
                    self._add_into(self._ended, mine)
            self._threads = [(thread, mine) for thread, mine, is_alive in alive if is_alive]
            live = [mine for _, mine in self._threads]
            summed = {key: list(row) for key, row in self._ended.items()}
        for mine in live:
            self._add_into(summed, mine)
        return summed

    def _add_into(self, total: dict[K, list[float]], part: dict[K, list[float]]) -> None:
        for key, row in list(part.items()):   # copied at once: its thread may add a key meanwhile
            into = total.setdefault(key, [0.0] * self._width)
            for i, amount in enumerate(row):
                into[i] += amount


class Tallies(Generic[K]):
    """Sums by key (a label tuple), added to by any thread."""

    def __init__(self) -> None:
        self._rows: _Rows[K] = _Rows(1)

    def add(self, key: K, amount: float = 1.0) -> None:
        self._rows.row(key)[0] += amount

    def totals(self) -> dict[K, float]:
        return {key: row[0] for key, row in self._rows.totals().items()}


class HistogramTallies(Generic[K]):
    """Observations by key, counted in buckets (upper bounds, as Prometheus' `le`), with their sum."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self._rows: _Rows[K] = _Rows(len(self.bounds) + 2)   # a count per bound and for +Inf, then the sum

    def observe(self, key: K, value: float) -> None:
        row = self._rows.row(key)
        row[bisect.bisect_left(self.bounds, value)] += 1
        row[-1] += value

    def totals(self) -> dict[K, tuple[list[float], float]]:
        """key -> (cumulative counts for each bound and +Inf, sum of the values)."""
        return {key: (list(itertools.accumulate(row[:-1])), row[-1]) for key, row in self._rows.totals().items()}
