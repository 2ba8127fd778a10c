"""The loader thread: prewarms the cache at start, then (re)loads tables on request.

Prewarm loads every catalog's databases, functions and table names, then every table with its partitions
and statistics: small tables in groups read together (up to GROUP_PARTITIONS partitions or GROUP_TABLES
tables per database transaction, so a remote database costs a few round trips per group), a large table
alone with its partitions streamed. A large prewarm reads its groups in worker processes, as many groups at
once as there are workers (prewarm_workers.py), and its large tables here meanwhile. Requests for a table that
is not loaded yet move it to the front of the queue. Progress is logged and exported as metrics; `complete`
drives /readyz.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from hmsproxy.ops.background import BackgroundLoop
from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.ops.heap import release_free_memory
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore, EntryReader
from hmsproxy.store.cache.prewarm_workers import PrewarmWorkers, WorkerPlan
from hmsproxy.store.cache.shared_cache import TableKey

log = logging.getLogger(__name__)
PROGRESS_INTERVAL_S = 5.0
GROUP_PARTITIONS = 5_000   # partitions of a group read at once: all exist as objects until encoded
GROUP_TABLES = 500          # tables of a group: bounds the lists of names and ids in its queries

# Partitions by catalog, then by (database, table): None for a catalog whose store cannot count them.
PartitionCounts = dict[str, dict[tuple[str, str], int] | None]


class Loader:
    def __init__(self, store: CachedStore, metrics: Metrics, workers: WorkerPlan | None = None) -> None:
        self.store = store
        self.metrics = metrics
        self.worker_plan = workers
        self._counts: PartitionCounts = {}            # what start() counted to decide on workers, for prewarm
        self._workers: PrewarmWorkers | None = None   # started with the loader, closed when prewarm ends
        self.complete = threading.Event()
        self.started = threading.Event()     # set once prewarm has recorded where the log stood
        self.start_event_id = 0
        self._queue: deque[TableKey] = deque()
        self._queued: set[TableKey] = set()
        self._queue_lock = threading.Lock()
        self._loop = BackgroundLoop("cache-loader", self._step)
        self._load_failures = BurstLog("could not load %s into the cache; it is served from the database", 60.0, log)

    def start(self) -> None:
        """Starts the loader's thread, and before it prewarm's worker processes if it is large enough: at that point
        the server may still have no other thread, which lets them be forked (prewarm_workers.py)."""
        self._counts, self._workers = self._start_workers()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def request(self, key: TableKey, urgent: bool = True) -> None:
        """Queues a table for loading; urgent requests (a client is waiting) go to the front."""
        with self._queue_lock:
            if key in self._queued:
                if urgent:
                    self._queue.remove(key)
                    self._queue.appendleft(key)
                return
            self._queued.add(key)
            self._queue.appendleft(key) if urgent else self._queue.append(key)
        self._loop.wake()

    def _next(self) -> TableKey | None:
        """The next table in the queue; None when it is empty or the loader stops."""
        with self._queue_lock:
            if not self._queue or self._loop.stopping:
                return None
            key = self._queue.popleft()
            self._queued.discard(key)
            return key

    def _step(self) -> None:
        """Prewarms at the first run; after it, loads what the queue holds, then waits for a request."""
        if not self.complete.is_set():
            self._prewarm_once()
        while (key := self._next()) is not None:
            self._load(key)

    def _prewarm_once(self) -> None:
        counted, workers, self._counts, self._workers = self._counts, self._workers, {}, None
        try:
            self._prewarm(counted, workers)
        except Exception:
            log.exception("prewarm failed; the cache serves what it loaded and the database the rest")
        finally:
            if workers is not None:
                workers.close()
        self.complete.set()
        self.metrics.prewarm_complete.set(1)

    def _next_group(self, counts: PartitionCounts) -> list[TableKey]:
        """The next table in the queue with the small tables of its catalog that follow it, as one group;
        a large table, or one of a store that cannot count partitions, alone."""
        first = self._next()
        if first is None:
            return []
        group = [first]
        counted = counts.get(first[0])
        if counted is None:
            return group
        partitions = counted.get(first[1:], 0)
        with self._queue_lock:
            while partitions <= GROUP_PARTITIONS and len(group) < GROUP_TABLES and self._queue:
                key = self._queue[0]
                more = counted.get(key[1:], 0)
                if key[0] != first[0] or partitions + more > GROUP_PARTITIONS:
                    break
                self._queue.popleft()
                self._queued.discard(key)
                group.append(key)
                partitions += more
        return group

    def _load_group(self, group: list[TableKey], read: EntryReader | None = None) -> int:
        if len(group) == 1:
            return self._load(group[0])
        try:
            return self.store.load_tables(group, read)
        except Exception as exc:  # the database may be down: the first failure in full, then a count per minute
            self._load_failures.happened(f"{len(group)} tables from {'.'.join(group[0])}", exc_info=exc)
            return 0

    def _load(self, key: TableKey) -> int:
        try:
            return self.store.load_table(key)
        except Exception as exc:  # the database may be down: the first failure in full, then a count per minute
            self._load_failures.happened(".".join(key), exc_info=exc)
            return 0

    def start_after(self) -> int:
        """For the poller: the event id prewarm started from (it waits until prewarm recorded it)."""
        self.started.wait()
        return self.start_event_id

    def prewarm_again(self) -> int:
        """Clears the cache and queues a full prewarm; returns the event id it starts from."""
        self.store.cache.clear()
        return self._load_catalogs()[0]

    def _load_catalogs(self) -> tuple[int, list[TableKey]]:
        """Records the log position *before* loading, so no change made during the load is missed."""
        start = self.store.delegate.current_event_id()
        tables: list[TableKey] = []
        for catalog in self.store.delegate.get_catalog_names():
            tables += self.store.load_catalog(catalog)
        for key in tables:
            self.request(key, urgent=False)
        return start, tables

    def _prewarm(self, counted: PartitionCounts, workers: PrewarmWorkers | None) -> None:
        started = time.monotonic()
        try:
            self.start_event_id, tables = self._load_catalogs()
        finally:
            self.started.set()
        total, done, partitions = len(tables), 0, 0
        self.metrics.prewarm_tables.labels("total").set(total)
        log.info("prewarm: %d databases, %d tables to load", self.store.cache.database_count(), total)
        counts = {cat: counted[cat] if cat in counted else self.store.partition_counts(cat)
                  for cat in {key[0] for key in tables}}
        last_report = started
        for group_partitions, group_tables in self._groups_loaded(counts, workers):
            partitions += group_partitions
            done += group_tables
            self.metrics.prewarm_tables.labels("done").set(done)
            self.metrics.prewarm_partitions.set(partitions)
            self.metrics.prewarm_seconds.set(time.monotonic() - started)
            if time.monotonic() - last_report >= PROGRESS_INTERVAL_S:
                last_report = time.monotonic()
                elapsed = last_report - started
                log.info("prewarm: %d/%d tables, %d partitions in %.1f s (%.0f partitions/s)", done, total,
                         partitions, elapsed, partitions / elapsed if elapsed else 0.0)
        release_free_memory()   # what the reads left behind
        elapsed = time.monotonic() - started
        self.metrics.prewarm_seconds.set(elapsed)
        log.info("prewarm complete: %d tables, %d partitions in %.1f s", done, partitions, elapsed)

    def _start_workers(self) -> tuple[PartitionCounts, PrewarmWorkers | None]:
        """The partition counts of every catalog and, if they add up to enough, prewarm's worker processes; no
        counts without a worker plan (prewarm counts then) or where they cannot be read."""
        if self.worker_plan is None:
            return {}, None
        try:
            counts = {cat: self.store.partition_counts(cat) for cat in self.store.delegate.get_catalog_names()}
        except Exception:   # the database may be down: prewarm reports it
            log.warning("could not count the partitions to prewarm: prewarm reads without worker processes",
                        exc_info=True)
            return {}, None
        partitions = sum(sum(counted.values()) for counted in counts.values() if counted is not None)
        if not self.worker_plan.wanted(partitions):
            return counts, None
        workers = PrewarmWorkers(self.worker_plan, fallback=self.store.read_entries, hot=self.store.cache.hot)
        log.info("prewarm: %d partitions, read by %d worker processes (%s)", partitions, workers.processes,
                 "forked" if workers.forked else "spawned")
        return counts, workers

    def _groups_loaded(self, counts: PartitionCounts,
                       workers: PrewarmWorkers | None) -> Iterator[tuple[int, int]]:
        """(partitions, tables) of each group as it is loaded: one group at a time, or with workers as many at once
        as there are workers (the queue is taken from a group at a time, so that urgent requests still go first)."""
        if workers is None:
            while group := self._next_group(counts):
                yield self._load_group(group), len(group)
            return
        with ThreadPoolExecutor(workers.processes, thread_name_prefix="cache-loader") as threads:
            in_flight: set[Future[tuple[int, int]]] = set()
            while True:
                while len(in_flight) < workers.processes and (group := self._next_group(counts)):
                    in_flight.add(threads.submit(lambda g: (self._load_group(g, workers.read), len(g)), group))
                if not in_flight:
                    return
                finished, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield future.result()
