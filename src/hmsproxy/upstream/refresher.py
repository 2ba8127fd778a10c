"""Keeps the cache of `serve --upstream` whole and, when the upstream keeps no notification log, current.

Every few seconds it makes sure the cache was prewarmed (a prewarm fails while the upstream is down at start, and a
write that could not be read back empties the cache): if not, it prewarms again. While the upstream's notification
log shows no event (it keeps none, or an empty one), it looks for a first event, which hands the work to the poller,
and every interval it revalidates the cache cheaply instead of reloading it: database objects, the table name list
(one get_table_meta), the function list (one get_all_functions), every cached table's object (one
get_table_objects_by_name per database: a write changes its parameters, transient_lastDdlTime among them) and each
cached partitioned table's partition names. What differs is dropped and reloaded. A change no cheap read shows
(a partition altered in place without a table change) waits for the table's next reload: that is the limit of
running without a log, said in the README.
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from hmsproxy.hive.names import DEFAULT_CATALOG
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.ops.background import BackgroundLoop
from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.shared_cache import TableEntry, TableKey
from hmsproxy.store.domain import Function, Table, TableMeta

log = logging.getLogger(__name__)
TABLES_PER_CALL = 100   # get_table_objects_by_name batch
WHOLENESS_CHECK_S = 5.0  # how soon a cache emptied while the upstream was down is prewarmed again


class Refresher:
    def __init__(self, store: CachedStore, metrics: Metrics, *, interval_s: float, revalidate: bool,
                 prewarm_again: Callable[[], int], prewarmed: Callable[[], bool],
                 follow_log: Callable[[], None]) -> None:
        self.store = store
        self.metrics = metrics
        self.interval_s = interval_s
        self.revalidate = revalidate         # until the upstream's log shows its first event
        self._prewarm_again = prewarm_again
        self._prewarmed = prewarmed          # the first prewarm has ended (well or not)
        self._follow_log = follow_log
        self._failures = BurstLog("cannot revalidate the cache against the upstream HMS: %s", 60.0, log)
        self._check_s = min(interval_s, WHOLENESS_CHECK_S)
        self._loop = BackgroundLoop("upstream-refresher", self._step, first_wait_s=self._check_s)
        self._last_revalidation = 0.0

    def start(self) -> None:
        self._last_revalidation = time.monotonic()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _step(self) -> float:
        try:
            if self.prewarm_if_needed() or self.log_found():
                return self._check_s
            if self.revalidate and time.monotonic() - self._last_revalidation >= self.interval_s:
                self._last_revalidation = time.monotonic()
                self.revalidate_once()
        except Exception as exc:   # the upstream is down: try again next time
            self._failures.happened(exc)
        return self._check_s

    def prewarm_if_needed(self) -> bool:
        """Prewarms again when the first prewarm has ended and the cache is not whole; True if it did."""
        if not self._prewarmed() or self.store.cache.is_complete(DEFAULT_CATALOG):
            return False
        log.info("the cache is not whole (the upstream was unreachable): prewarming again")
        self._prewarm_again()
        self.metrics.upstream_revalidated.labels("prewarm").inc()
        return True

    def log_found(self) -> bool:
        """Whether the upstream's log has just shown its first event: from then on the poller follows it (an empty
        log and none look alike at start)."""
        if not self.revalidate or self.store.delegate.current_event_id() == 0:
            return False
        log.info("the upstream's notification log has events: following it instead of revalidating")
        self.revalidate = False
        self._follow_log()
        return True

    def revalidate_once(self) -> int:
        """Compares the cache with the upstream and drops what differs; returns how many objects it dropped."""
        return self._databases() + self._functions() + self._table_names() + self._tables()

    def _databases(self) -> int:
        upstream = self.store.delegate
        cached = {db: self.store.cache.database((DEFAULT_CATALOG, db))
                  for db in self.store.cache.database_names(DEFAULT_CATALOG)}
        names = set(upstream.get_database_names(DEFAULT_CATALOG))
        stale = [db for db in names | set(cached)
                 if db not in names or db not in cached or upstream.get_database(DEFAULT_CATALOG, db) != cached[db]]
        for db in stale:
            self.store.refresh_database(DEFAULT_CATALOG, db)
        for key in _keys(self.store.cache.table_meta(DEFAULT_CATALOG)):
            if key[1] in names - set(cached) and self.store.policy.allows(key[1], key[2]):
                self.store.request_load(key)   # a new database's tables, as their creation events would
        self.metrics.upstream_revalidated.labels("database").inc(len(stale))
        return len(stale)

    def _functions(self) -> int:
        cached = _by_name(self.store.cache.functions_of(DEFAULT_CATALOG) or [])
        current = _by_name(self.store.delegate.get_functions(DEFAULT_CATALOG))
        stale = [key for key in set(cached) | set(current) if cached.get(key) != current.get(key)]
        for db, name in stale:
            self.store.refresh_function(DEFAULT_CATALOG, db, name)
        self.metrics.upstream_revalidated.labels("function").inc(len(stale))
        return len(stale)

    def _table_names(self) -> int:
        stale = _keys(self.store.cache.table_meta(DEFAULT_CATALOG)) ^ _keys(self.store.delegate.get_table_meta(
            DEFAULT_CATALOG))
        for key in stale:
            self.store.settle(key)
        self.metrics.upstream_revalidated.labels("table_name").inc(len(stale))
        return len(stale)

    def _tables(self) -> int:
        by_db: dict[str, dict[str, tuple[TableKey, TableEntry]]] = defaultdict(dict)
        for key, entry in self.store.cache.entries():
            if key[0] == DEFAULT_CATALOG:
                by_db[key[1]][key[2]] = (key, entry)
        stale: list[TableKey] = []
        upstream = self.store.delegate
        for db, entries in by_db.items():
            names = sorted(entries)
            for start in range(0, len(names), TABLES_PER_CALL):
                current = {present(t.tableName).lower(): t for t in
                           upstream.get_table_objects(DEFAULT_CATALOG, db, names[start:start + TABLES_PER_CALL])}
                stale += [key for key, entry in map(entries.__getitem__, names[start:start + TABLES_PER_CALL])
                          if not self._current(key, entry, current.get(key[2]))]
        for key in stale:
            self.store.invalidate(key)
        self.metrics.upstream_revalidated.labels("table").inc(len(stale))
        return len(stale)

    def _current(self, key: TableKey, entry: TableEntry, table: Table | None) -> bool:
        """Whether the entry still shows the upstream's table: the same object and the same partition names."""
        if table is None or table != entry.table:
            return False
        if not table.partitionKeys:
            return True
        try:
            return tuple(self.store.delegate.get_partition_names(*key)) == entry.partitions.names
        except hms.NoSuchObjectException:
            return False


def _keys(meta: Sequence[TableMeta]) -> set[TableKey]:
    return {(DEFAULT_CATALOG, db, tbl) for db, tbl, _, _ in meta}


def _by_name(functions: Sequence[Function]) -> dict[tuple[str, str], Function]:
    return {(present(f.dbName), present(f.functionName)): f for f in functions}
