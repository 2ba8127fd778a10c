"""Prewarm's group reads in worker processes, so that a large prewarm uses more than the one core the GIL gives.

Reading a group of tables, building their partitions and encoding them is nearly all of a prewarm's CPU. A
worker opens the server's database as the server does (its own connection; the store reads the schema's
layout) and sends back the group's cache entries: bytes, strings and arrays, pickled. The loader installs
them under the same rule as the entries it reads itself (CachedStore.load_tables), so a write that overlaps
a worker's read is caught as it is for any load. Workers live while prewarm runs, and start only for a
prewarm of at least `min_partitions` partitions.

Started while the server's process has no other thread (before the loader's), the workers are forked: they
share the modules the server imported, where a spawned worker imports them again (about a second of CPU each,
a fifth of a 100k-partition prewarm on two cores). With other threads about (a test process), forking could
copy a lock another thread holds, so they are spawned.

A worker that dies (killed, out of memory) breaks the pool: the loader then reads the rest itself.
"""
from __future__ import annotations

import logging
import multiprocessing
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from hmsproxy.store.cache.cached_store import EntryReader, entries_read
from hmsproxy.store.cache.own_bytes import HotOwnBytes
from hmsproxy.store.cache.shared_cache import TableEntry
from hmsproxy.store.rawstore import RawStore

log = logging.getLogger(__name__)


class StoreOpener(Protocol):
    """How a worker opens the server's store (server.py gives the SQL store's DatabaseAccess); sent to each worker,
    so picklable."""

    def open(self) -> RawStore: ...


@dataclass(frozen=True)
class WorkerPlan:
    """How many worker processes prewarm starts, and from how many partitions on."""
    database: StoreOpener
    processes: int
    min_partitions: int

    def wanted(self, partitions: int) -> bool:
        return self.processes > 0 and partitions >= self.min_partitions


class PrewarmWorkers:
    """Worker processes, each with its own connection to the database, reading groups of tables."""

    def __init__(self, plan: WorkerPlan, fallback: EntryReader, hot: HotOwnBytes | None = None) -> None:
        self.processes = plan.processes
        self._fallback = fallback
        self._hot = hot   # the cache's, where the entries read by a worker are kept hot once here
        self._broken = False
        self.forked = threading.active_count() == 1
        context = multiprocessing.get_context("fork" if self.forked else "spawn")
        self._executor = ProcessPoolExecutor(plan.processes, mp_context=context, initializer=_open,
                                             initargs=(plan.database,))
        if self.forked:   # a fork pool forks every worker at its first task, before it starts a thread of its own
            self._executor.submit(int)

    def read(self, cat: str, tables: Sequence[tuple[str, str]]) -> list[TableEntry]:
        """The entries of the tables (database, table each) that exist, read by a worker (by `fallback` here once
        a worker died)."""
        if not self._broken:
            try:
                entries = self._executor.submit(_read_group, cat, list(tables)).result()
                return entries if self._hot is None else \
                    [entry.but(partitions=entry.partitions.kept_in(self._hot)) for entry in entries]
            except BrokenExecutor:
                if not self._broken:
                    log.warning("a prewarm worker process died: the loader reads the rest of the tables itself")
                self._broken = True
        return self._fallback(cat, tables)

    def close(self) -> None:
        """Stops the workers once the reads under way are done (nothing waits for them)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


_store: RawStore | None = None   # a worker process's store, opened once by the pool's initializer


def _open(database: StoreOpener) -> None:
    global _store
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the server decides when its workers stop
    _store = database.open()


def _read_group(cat: str, tables: list[tuple[str, str]]) -> list[TableEntry]:
    assert _store is not None, "the pool's initializer opens the store"
    return entries_read(_store, cat, tables, hot=None)   # the set is kept hot where it arrives (read)
