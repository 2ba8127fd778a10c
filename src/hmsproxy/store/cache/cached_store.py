"""CachedStore: a RawStore that answers reads from memory and writes through to the store it wraps.

Reads: from the shared cache when it holds the answer; otherwise from the delegate (a miss), and the table
is queued for loading. Listings (database, table and function names) come from the prewarmed name
indexes; a lookup of one object (a table, a partition by its values or names, ...) the cache does not
hold always asks the database, so that an object created through another instance is never reported
missing.

Writes: to the delegate first (one database transaction); only after it committed is the cache updated,
from the canonical form of what was written (store/canonical.py), never by reading it back. A failed write
leaves the cache untouched. Renames and cascading column changes drop the table entry and queue a reload.

Snapshots: an entry of a transactional table carries the ValidWriteIdList it reflects, kept current by the
write-id allocations, commits and aborts that pass through here. A read that carries a snapshot (the reader
of the view it goes through, store/reader.py) is answered from the entry only if the entry is as fresh as
the snapshot or newer (TxnIdUtils.compare >= 0) and has the table id the client expects; otherwise from the
database.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TypeVar, cast

from hmsproxy.events.journal import Journal, WorkAhead
from hmsproxy.events.messages import Event
from hmsproxy.hive.names import make_partition_name
from hmsproxy.hive.partition_filter import FilterError, PartitionFilter, compile_partition_filter
from hmsproxy.hive.partition_limits import first_parts, over_request_limit
from hmsproxy.hive.write_ids import ValidWriteIdList, is_fresh_or_newer
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store import canonical
from hmsproxy.store.cache.own_bytes import HotOwnBytes
from hmsproxy.store.cache.partition_stats import PartitionStats
from hmsproxy.store.cache.partitions import PartitionSet, PartitionSetBuilder, encoded_rows
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import DbKey, SharedCache, TableEntry, TableKey
from hmsproxy.store.cache.statistics import CachedStatistics
from hmsproxy.store.cache.transactions import CachedTransactions
from hmsproxy.store.domain import (
    Catalog,
    Database,
    DroppedTable,
    Function,
    Kept,
    NotificationEvent,
    Partition,
    PartitionBatch,
    PartitionSink,
    StatsAsStored,
    Table,
    TableBundle,
    TableChange,
    is_transactional,
    partition_key_types,
)
from hmsproxy.store.rawstore import RawStore
from hmsproxy.store.reader import INTERNAL, Reader, shallow_copy
from hmsproxy.store.ready import Held, Ready

log = logging.getLogger(__name__)
R = TypeVar("R")
T = TypeVar("T")
# A filter's answer up to this many partitions (some 400-700 KB) is copied into one bytes value and sent by the
# connection loop; a larger one goes the ordinary way, sent from the cache's own pieces by a worker, so that the
# loop never copies or waits on a large reply.
READY_PARTITIONS_MAX = 1000
READY_CANDIDATES_MAX = 5000   # and found among at most this many candidates of the index (about a millisecond)
# The lookups of each call the ready tier answers, as the ordinary way counts them when it answers that call from
# the cache (get_partitions_by_filter: the table, the names matching, the partitions by name).
READY_HITS = {"get_table": ("table",), "get_partitions_by_filter": ("table", "partition_names", "partition")}
# A table cached with at most this many partitions is read again in place when another instance changed it
# (CachedStore.refreshed_in_place). Measured, of the poller's time: 4-9 ms for a table without partitions, 12-22 ms
# with 100 (SQLite, PostgreSQL, MariaDB); larger tables are dropped and reloaded by the loader.
REFRESH_MAX_PARTITIONS = 100


@dataclass
class _LoadInFlight:
    """A table load under way: the table's generation when it started, and the newest table version a
    database answer showed meanwhile (the load is not cached if older)."""
    generation: tuple[int, int]
    newest_seen: int = 0


class CachedStore(CachedStatistics, CachedTransactions):
    def __init__(self, delegate: RawStore, cache: SharedCache, policy: CachePolicy, metrics: Metrics,
                 stats_as_stored: StatsAsStored, *,
                 request_load: Callable[[TableKey], None] = lambda key: None,
                 catch_up: Callable[[int], bool] = lambda event_id: False, strict_snapshots: bool = False) -> None:
        self.delegate = delegate
        self.cache = cache
        self.policy = policy
        self.metrics = metrics
        self.stats_as_stored = stats_as_stored
        self.request_load = request_load   # queues a table for the loader (store/cache/prewarm.py)
        # Applies the notification log up to an event id now; False if it cannot (store/cache/poller.py).
        self.catch_up = catch_up
        self.strict_snapshots = strict_snapshots
        self._loads_in_flight: dict[TableKey, list[_LoadInFlight]] = {}
        self.passing_through = False  # set for good when another writer logs no events (store/cache/unlogged_writes.py)
        self.reader = INTERNAL

    def serving(self, reader: Reader) -> CachedStore:
        """A view for one call: a shallow copy that shares the cache, the delegate and all bookkeeping, and
        differs only in whom it counts lookups for and which snapshot its reads must serve."""
        return shallow_copy(self, reader=reader)

    def pass_through(self) -> None:
        """From now on every read goes to the database: another writer changes it without events, so nothing
        cached can be trusted. The cache is emptied; writes may still fill it, but nothing reads it."""
        self.passing_through = True
        self.cache.clear()
        self.metrics.cache_passing_through.set(1)

    @property
    def keeps_write_ids(self) -> bool:
        return self.delegate.keeps_write_ids

    def kept(self, obj: Kept) -> Kept:
        return self.delegate.kept(obj)

    # ---- bookkeeping -------------------------------------------------------------------------------

    def _count(self, kind: str, hit: bool) -> None:
        self.metrics.count_lookup(self.reader.method, kind, hit)

    def _entry(self, cat: str, db: str, tbl: str, kind: str) -> TableEntry | None:
        """The cached entry, or None (counted as a miss, and the table queued for loading).

        A table the cache does not hold is always looked up in the database: with several instances, one
        created elsewhere may not have reached this cache yet, and "does not exist" must never be stale."""
        key = (cat, db, tbl)
        entry = self._cached_entry(key)
        if entry is not None:
            usable = self._serves_snapshot(entry, f"{db}.{tbl}")
            self._count(kind, usable)
            return entry if usable else None
        self._count(kind, False)
        if not self.passing_through and self.cache.is_indexed(key) and self.policy.allows(db, tbl) \
                and not self.cache.is_oversized(key):
            self.request_load(key)
        return None

    def _cached_entry(self, key: TableKey) -> TableEntry | None:
        """The table's entry, where the cache may be read at all (both tiers read entries through this)."""
        return None if self.passing_through else self.cache.get_table(key)

    def _read(self, cat: str, db: str, tbl: str, kind: str, from_cache: Callable[[TableEntry], R],
              from_db: Callable[[], R]) -> R:
        """Answers from the cached entry when it may, else from the database. A database answer tells the
        loads of the table in flight the version it saw, so that none older than that is cached afterwards:
        reads through this instance never go backwards. (A load that starts later reads newer data.)"""
        entry = self._entry(cat, db, tbl, kind)
        if entry is not None:
            return from_cache(entry)
        answer = from_db()
        key = (cat, db, tbl)
        version = self.delegate.table_version(db, tbl)
        with self.cache.lock:
            for load in self._loads_in_flight.get(key, ()):
                load.newest_seen = max(load.newest_seen, version)
            cached = self.cache.get_table(key)
            if cached is not None and cached.version < version:  # a load finished meanwhile, older than this
                self.cache.drop_table(key)
                self.cache.bump(key)
        return answer

    def _serves_snapshot(self, entry: TableEntry, full_name: str) -> bool:
        """Whether the entry may answer the current request's snapshot (see the module docstring)."""
        snapshot = self.reader
        reason = None
        if snapshot.table_id is not None and snapshot.table_id != entry.table_id:
            reason = "table_id"
        elif entry.write_ids is None:
            return True  # not transactional: eventually consistent, as in Hive
        elif snapshot.valid_write_ids is None:
            if self.strict_snapshots:
                raise hms.MetaException(message=f"{full_name} is transactional: reads must carry a validWriteIdList "
                                                "(the server runs in strict snapshot mode)")
            reason = "no_snapshot"
        else:
            try:
                requested = ValidWriteIdList.parse(snapshot.valid_write_ids)
            except ValueError as exc:
                raise hms.MetaException(message=f"invalid validWriteIdList: {exc}") from None
            if not is_fresh_or_newer(entry.write_ids, requested):
                reason = "stale" if requested.table_name == full_name else "other_table"
        if reason is None:
            return True
        self.metrics.cache_snapshot_fallbacks.labels(reason).inc()
        return False

    def load_table(self, key: TableKey) -> int:
        """Loads one table into the cache (prewarm and reloads); returns the partitions loaded."""
        if not self.policy.allows(key[1], key[2]):
            return 0
        with self._loading([key]) as [load]:
            loaded = self._load(key, load)
        if loaded is None:
            # A write here overlapped the read. Once more with this instance's writes to the table held off (each
            # waits at most this read): a table written without pause would otherwise be read again forever.
            with self.cache.writes_held(key), self._loading([key]) as [load]:
                loaded = self._load(key, load)
        if loaded is None:   # a newer database answer or a cleared cache overlapped even that: later
            self.request_load(key)
        return loaded or 0

    def load_tables(self, keys: Sequence[TableKey], read: EntryReader | None = None) -> int:
        """Loads many small tables of one catalog in one read (prewarm); returns the partitions loaded. `read`
        turns (catalog, [(database, table)]) into their entries (default: read_entries, here; prewarm's workers
        read in other processes). Each is installed under the same rule as load_table's."""
        keys = [key for key in keys if self.policy.allows(key[1], key[2])]
        if not keys:
            return 0
        with self._loading(keys) as loads:
            entries = (read or self.read_entries)(keys[0][0], [(db, tbl) for _, db, tbl in keys])
            found = {(present(e.table.dbName).lower(), present(e.table.tableName).lower()): e for e in entries}
            loaded = 0
            for key, load in zip(keys, loads):
                installed = self._install(key, load, found.get((key[1].lower(), key[2].lower())))
                if installed is None:
                    self.request_load(key)   # read again, alone (load_table)
                loaded += installed or 0
            return loaded

    def read_entries(self, cat: str, tables: Sequence[tuple[str, str]]) -> list[TableEntry]:
        """The cache entries of tables read together from the delegate; those that do not exist are left out."""
        return entries_read(self.delegate, cat, tables, hot=self.cache.hot)

    @contextlib.contextmanager
    def _loading(self, keys: Sequence[TableKey]) -> Iterator[list[_LoadInFlight]]:
        """Loads of the tables in flight while the body reads them: a write or a newer read meanwhile marks them."""
        with self.cache.lock:
            loads = [_LoadInFlight(self.cache.generation(key)) for key in keys]
            for key, load in zip(keys, loads):
                self._loads_in_flight.setdefault(key, []).append(load)
        try:
            yield loads
        finally:
            with self.cache.lock:
                for key, load in zip(keys, loads):
                    in_flight = self._loads_in_flight[key]
                    in_flight.remove(load)
                    if not in_flight:
                        del self._loads_in_flight[key]

    def loads_in_flight(self) -> int:
        with self.cache.lock:
            return sum(map(len, self._loads_in_flight.values()))

    def _load(self, key: TableKey, load: _LoadInFlight) -> int | None:
        return self._install(key, load, self._read_entry(key))

    def _read_entry(self, key: TableKey) -> TableEntry | None:
        """The table's entry as the delegate has it now; None if the table does not exist."""
        builder: PartitionSetBuilder | None = None

        def collect(table: Table, chunk: Sequence[Partition], ids: list[int] | None) -> None:
            nonlocal builder
            if builder is None:
                keys = tuple(present(k.name) for k in present(table.partitionKeys))
                builder = PartitionSetBuilder(PartitionSet(keys=keys, hot=self.cache.hot))
            builder.add(chunk, ids)

        try:
            bundle = self.delegate.get_table_bundle(*key, partition_sink=collect)
        except hms.NoSuchObjectException:
            bundle = None
        return None if bundle is None else entry_from_bundle(bundle, builder, hot=self.cache.hot)

    def _install(self, key: TableKey, load: _LoadInFlight, entry: TableEntry | None) -> int | None:
        """Caches a table read (None: it does not exist) unless a change overlapped the read; returns the
        partitions cached, or None when the read was overlapped and must be made again."""
        if entry is None:
            with self.cache.lock:
                if self._unchanged_since(key, load):
                    self.cache.unindex_table(key)
            return 0
        entry.size_bytes()   # counted before the lock (see SharedCache.put_table)
        with self.cache.lock:
            current = self._unchanged_since(key, load) and entry.version >= load.newest_seen
            if current:
                self.cache.index_table(key, entry.table)  # listed even when too large to keep
                self.cache.put_table(key, entry)
                return len(entry.partitions)
        return None

    def _unchanged_since(self, key: TableKey, load: _LoadInFlight) -> bool:
        """Whether no write to the table here began or ended since the load started (under the cache's lock)."""
        return self.cache.generation(key) == load.generation and not self.cache.is_being_written(key)

    # ---- changes made by other instances (store/cache/sync.py) --------------------------------------

    def invalidate(self, key: TableKey, table: Table | None = None, gone: bool = False,
                   refresh: bool = False) -> None:
        """Drops a table's entry and queues a reload, which also settles the table's place in the name
        index from what the database says then (an event may be applied late, after a newer change).
        Tables the cache never holds take `table` (created or renamed to) or `gone` as the index update.

        With `refresh`, a table still there whose entry holds at most REFRESH_MAX_PARTITIONS partitions is read
        again at once and its entry replaced (refreshed_in_place)."""
        if refresh and not gone and self.refreshed_in_place(key):
            return
        with self.cache.writing(key):
            self.cache.drop_table(key)
            if not self.policy.allows(key[1], key[2]):
                if gone:
                    self.cache.unindex_table(key)
                elif table is not None:
                    self.cache.index_table(key, table)
        if self.policy.allows(key[1], key[2]):
            self.request_load(key)

    def refreshed_in_place(self, key: TableKey) -> bool:
        """Reads a small cached table again and replaces its entry; False when it is not cached, too large or
        gone, or a change overlapped the read (the caller then drops the entry).

        Until the new entry is in, reads answer from the old one, the state before the event, as if it came a
        moment later. Dropping it first would send them to the database while the loader reads the same table
        (two reads of it at once on one interpreter, the larger part of the lag another instance's change
        takes to show here). Loads that started before the event are refused, as after a drop."""
        cached = self.cache.get_table(key)
        if cached is None or len(cached.partitions) > REFRESH_MAX_PARTITIONS or not self.policy.allows(key[1], key[2]):
            return False
        self.cache.bump(key)
        try:
            with self._loading([key]) as [load]:
                entry = self._read_entry(key)
                return entry is not None and self._install(key, load, entry) is not None
        except Exception as exc:   # the caller drops the entry: reads then go to the database, as they would
            log.info("could not read %s again in place (%s): dropped for a reload instead", ".".join(key), exc)
            return False

    def settle(self, key: TableKey) -> None:
        """After a write the delegate made itself (hmsproxy in front of an upstream HMS): drops the table's entry
        and sets its place in the name index from the delegate now, so that this instance's next listing shows
        the write; the entry reloads in the background. When the delegate cannot say, the catalog's listings go
        to the delegate until the next prewarm rather than answer from an index that may be stale."""
        try:
            table = self.delegate.get_table(*key)
        except hms.NoSuchObjectException:
            table = None
        except Exception:
            with self.cache.writing(key):
                self.cache.drop_table(key)
                self.cache.mark_incomplete(key[0])
            raise
        with self.cache.writing(key):
            self.cache.drop_table(key)
            if table is None:
                self.cache.unindex_table(key)
            else:
                self.cache.index_table(key, table)
        if table is not None and self.policy.allows(key[1], key[2]):
            self.request_load(key)

    def _read_then_install(self, cat: str, read: Callable[[], R], install: Callable[[R], T]) -> T:
        """Reads from the database, then installs under the cache lock; reads again if a write in the catalog
        overlapped the reads (they may be older than what the cache holds by then)."""
        while True:
            generation = self.cache.catalog_generation(cat)
            value = read()
            with self.cache.lock:
                if self.cache.catalog_generation(cat) == generation:
                    return install(value)

    def refresh_database(self, cat: str, name: str) -> None:
        """Reads a database again (changed elsewhere). A database new to this cache gets its table and
        function names from the database too: tables may have been created through this very instance
        before it learnt of the database, and their events, being its own, are not applied again."""
        def read() -> tuple[Database, dict[str, tuple[str, str | None]], dict[str, Function]]:
            database = self.delegate.get_database(cat, name)
            if self.cache.knows_tables_of((cat, name)):
                return database, {}, {}
            tables = {t: (kind, comment) for db, t, kind, comment in self.delegate.get_table_meta(cat) if db == name}
            return database, tables, {present(f.functionName): f for f in self.delegate.get_functions(cat, name)}

        def install(read_back: tuple[Database, dict[str, tuple[str, str | None]], dict[str, Function]]) -> None:
            database, tables, functions = read_back
            self.cache.put_database((cat, name), database, tables, functions)

        try:
            self._read_then_install(cat, read, install)
        except hms.NoSuchObjectException:
            self.forget_database(cat, name)

    def forget_database(self, cat: str, name: str) -> None:
        self.cache.forget_database((cat, name))

    def refresh_function(self, cat: str, db: str, name: str) -> None:
        def read() -> Function | None:
            try:
                return self.delegate.get_function(cat, db, name)
            except hms.NoSuchObjectException:
                return None

        def install(function: Function | None) -> None:
            self.cache.put_function((cat, db), name, function)

        self._read_then_install(cat, read, install)

    def load_catalog(self, cat: str) -> list[TableKey]:
        """Loads a catalog's databases, functions and table name index; returns its tables to load.
        Reads again if a write in the catalog overlapped the reads, so no name list misses it."""
        def read() -> tuple[dict[str, Database], list[tuple[str, str, str, str | None]], list[Function]]:
            databases = {name: self.delegate.get_database(cat, name) for name in self.delegate.get_database_names(cat)}
            return databases, self.delegate.get_table_meta(cat), self.delegate.get_functions(cat)

        def install(read_back: tuple[dict[str, Database], list[tuple[str, str, str, str | None]], list[Function]]
                    ) -> list[tuple[str, str, str, str | None]]:
            databases, meta, functions = read_back
            self.cache.install_catalog(cat, databases, meta, functions)
            return meta

        meta = self._read_then_install(cat, read, install)
        return [(cat, db, tbl) for db, tbl, _, _ in meta if self.policy.allows(db, tbl)]

    # ---- catalogs and databases --------------------------------------------------------------------

    def get_catalog(self, name: str) -> Catalog:
        return self.delegate.get_catalog(name)

    def get_catalog_names(self) -> list[str]:
        return self.delegate.get_catalog_names()

    def create_database(self, database: Database, journal: Journal | None = None) -> None:
        self.delegate.create_database(database, journal)
        key = cast(DbKey, (database.catalogName, database.name))   # set by the caller
        with self.cache.lock:
            self.cache.forget_database(key)   # what the name may have held before, dropped elsewhere
            self.cache.put_database(key, self.delegate.kept(canonical.database(database)), {}, {})

    def get_database(self, cat: str, name: str) -> Database:
        database = None if self.passing_through else self.cache.database((cat, name))
        self._count("database", database is not None)
        return database if database is not None else self.delegate.get_database(cat, name)

    def get_database_names(self, cat: str) -> list[str]:
        if self.cache.is_complete(cat) and not self.passing_through:
            self._count("database", True)
            return self.cache.database_names(cat)
        self._count("database", False)
        return self.delegate.get_database_names(cat)

    def alter_database(self, cat: str, name: str, database: Database, journal: Journal | None = None) -> None:
        self.delegate.alter_database(cat, name, database, journal)
        with self.cache.lock:
            self.cache.bump_catalog(cat)
            old = self.cache.database((cat, name))
            if old is not None:
                new = canonical.database(old)
                new.parameters = canonical.database(database).parameters
                new.ownerName, new.ownerType = database.ownerName, canonical.database(database).ownerType
                self.cache.put_database((cat, name), new)

    def drop_database(self, cat: str, name: str, cascade: bool, journal: Journal | None = None) -> list[DroppedTable]:
        key: DbKey = (cat, name)
        tables = self.cache.table_names(key) or []
        dropped = self.delegate.drop_database(cat, name, cascade, journal)
        self.cache.forget_database(key, tables)
        return dropped

    # ---- tables ------------------------------------------------------------------------------------

    def create_table(self, table: Table, journal: Journal | None = None) -> int:
        key = cast(TableKey, (table.catName, table.dbName, table.tableName))   # set by the caller
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            tbl_id = self.delegate.create_table(table, journal)
            stored = self.delegate.kept(canonical.table(table, tbl_id, key[0]))
            self.cache.index_table(key, stored)
            if self.policy.allows(key[1], key[2]):
                keys = tuple(present(k.name) for k in present(stored.partitionKeys))
                write_ids = ValidWriteIdList.of(f"{table.dbName}.{table.tableName}", 0) \
                    if self._has_write_ids(stored) else None
                self.cache.put_table(key, TableEntry(stored, PartitionSet(keys=keys, hot=self.cache.hot),
                                                     write_ids=write_ids, version=journal.version))
        return tbl_id

    def _has_write_ids(self, table: Table) -> bool:
        """Whether the table's entry carries write ids: a transactional table's, unless the store keeps none."""
        return is_transactional(table) and self.delegate.keeps_write_ids

    def get_table(self, cat: str, db_name: str, tbl_name: str) -> Table:
        return self._read(cat, db_name, tbl_name, "table", lambda e: e.table,
                          lambda: self.delegate.get_table(cat, db_name, tbl_name))

    # ---- the ready tier (store/ready.py ReadyAnswers; rpc/tiers.py) -----------------------------------
    # Asked of the store itself, not of a serving view (the hot path of the commonest call makes no view), and
    # never a database round trip. Declining (None) counts nothing: the ordinary way then decides, and counts.

    def ready_table(self, reader: Reader, cat: str, db_name: str, tbl_name: str) -> Ready | None:
        """From an entry any reader may read (_entry_for_anyone)."""
        entry = self._entry_for_anyone(reader, (cat, db_name, tbl_name))
        if entry is None:
            return None
        self._count_ready_hit(reader)
        return Ready(entry.table_bytes, entry.held)

    def _entry_for_anyone(self, reader: Reader, key: TableKey) -> TableEntry | None:
        """The cached entry, where any reader may read it (not transactional, no table id asked for): what a
        ready answer may come from."""
        entry = None if reader.table_id is not None else self._cached_entry(key)
        return None if entry is None or entry.write_ids is not None else entry

    def ready_partitions_by_filter(self, reader: Reader, cat: str, db_name: str, tbl_name: str, filter_text: str,
                                   max_parts: int, request_limit: int) -> Ready | None:
        """From an entry any reader may read (_entry_for_anyone), when the partitions are found at once (see
        PartitionSet.matches_at_once: the connection loop asks, and every other client waits while it answers), up
        to READY_PARTITIONS_MAX of them: a larger answer is sent from the cache's own pieces by the ordinary way, not
        copied into one value."""
        entry = self._entry_for_anyone(reader, (cat, db_name, tbl_name))
        if entry is None:
            return None
        keys = partition_key_types(entry.table)
        try:
            partition_filter = compile_partition_filter(filter_text, keys)
        except FilterError:   # the ordinary way answers it, as the declared exception
            return None
        matches = entry.partitions.matches_at_once(partition_filter, READY_CANDIDATES_MAX)
        if matches is None:
            return None
        matches = first_parts(matches, max_parts)
        if len(matches) > READY_PARTITIONS_MAX or over_request_limit(len(matches), request_limit):
            return None
        self._count_ready_hit(reader)
        return Ready(matches.list_bytes(), entry.held)

    def ready_again(self, reader: Reader, held: Held) -> bool:
        if self.passing_through or not held.current:
            return False
        self._count_ready_hit(reader)
        return True

    def _count_ready_hit(self, reader: Reader) -> None:
        """The hits the ordinary way counts when it answers the same call from the cache."""
        for kind in READY_HITS[reader.method]:
            self.metrics.count_lookup(reader.method, kind, True)

    def get_table_bundle(self, cat: str, db_name: str, tbl_name: str,
                         partition_sink: PartitionSink | None = None) -> TableBundle:
        return self.delegate.get_table_bundle(cat, db_name, tbl_name, partition_sink)

    def get_table_bundles(self, cat: str, tables: Sequence[tuple[str, str]]) -> list[TableBundle]:
        return self.delegate.get_table_bundles(cat, tables)

    def partition_counts(self, cat: str) -> dict[tuple[str, str], int] | None:
        return self.delegate.partition_counts(cat)

    def get_table_objects(self, cat: str, db_name: str, tbl_names: Sequence[str]) -> list[Table]:
        if self.passing_through or not self.cache.knows_tables_of((cat, db_name)):
            self._count("table", False)
            return self.delegate.get_table_objects(cat, db_name, tbl_names)
        tables = []
        for name in sorted(set(tbl_names)):
            try:
                tables.append(self.get_table(cat, db_name, name))
            except hms.NoSuchObjectException:
                continue
        return tables

    def get_table_names(self, cat: str, db_name: str, table_type: str | None = None) -> list[str]:
        names = None if self.passing_through else self.cache.table_names((cat, db_name), table_type)
        self._count("table_names", names is not None)
        return names if names is not None else self.delegate.get_table_names(cat, db_name, table_type)

    def get_table_meta(self, cat: str) -> list[tuple[str, str, str, str | None]]:
        if self.passing_through or not self.cache.is_complete(cat):
            self._count("table_names", False)
            return self.delegate.get_table_meta(cat)
        self._count("table_names", True)
        return self.cache.table_meta(cat)

    def alter_table(self, cat: str, db_name: str, tbl_name: str, new_table: Table,
                    partition_location_moves: tuple[str, str] | None = None, cascade: bool = False,
                    expected_parameter: tuple[str, str] | None = None, journal: Journal | None = None) -> None:
        key = (cat, db_name, tbl_name)
        new_key = cast(TableKey, (cat, new_table.dbName, new_table.tableName))   # set by the caller
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            old = self.cache.get_table(key)
            self.delegate.alter_table(cat, db_name, tbl_name, new_table, partition_location_moves, cascade,
                                      expected_parameter, journal)
            self._altered(key, new_key, new_table, old, cascade, journal)

    def alter_tables(self, cat: str, changes: Sequence[TableChange], journal: Journal | None = None) -> None:
        journal = Journal() if journal is None else journal
        keys = {(cat, c.db_name, c.tbl_name): c for c in changes}
        with ExitStack() as writes:
            for key in sorted(keys):   # one order, as every multi-table writer takes them
                writes.enter_context(self.cache.writing(key))
            olds = {key: self.cache.get_table(key) for key in keys}
            self.delegate.alter_tables(cat, changes, journal)
            for key, change in keys.items():
                self._altered(key, key, change.new_table, olds[key], False, journal)

    def _altered(self, key: TableKey, new_key: TableKey, new_table: Table, old: TableEntry | None, cascade: bool,
                 journal: Journal) -> None:
        """The cache after a committed alter: the entry updated in place, or dropped and loaded again where the
        alter changed its name, its partitions' columns or its kind."""
        changes_kind = old is not None and self._has_write_ids(new_table) != (old.write_ids is not None)
        if new_key != key or cascade or old is None or changes_kind:
            self._forget(key)
            with self.cache.lock:  # the name may still hold a table dropped elsewhere, event not yet applied
                self.cache.drop_table(new_key)
                self.cache.index_table(new_key, new_table)
                self.cache.bump(new_key)
            self.request_load(new_key)
            return
        stored = self.delegate.kept(canonical.table(new_table, old.table_id, key[0]))
        columns = {c.name for c in present(stored.sd).cols or []}
        table_stats = {c: s for c, s in old.table_stats.items() if c in columns}
        self.cache.index_table(key, stored)
        self.cache.put_table(key, old.but(table=stored, table_stats=table_stats,
                                          version=max(old.version, journal.version)))

    def _forget(self, key: TableKey) -> None:
        self.cache.drop_table(key)
        self.cache.unindex_table(key)

    def drop_table(self, cat: str, db_name: str, tbl_name: str, journal: Journal | None = None) -> DroppedTable:
        key = (cat, db_name, tbl_name)
        with self.cache.writing(key):
            dropped = self.delegate.drop_table(cat, db_name, tbl_name, journal)
            self._forget(key)
        return dropped

    # ---- partitions --------------------------------------------------------------------------------

    def _update_entry(self, key: TableKey, change: Callable[[TableEntry], TableEntry], version: int) -> None:
        """Applies a committed write to the cached entry, if the table is cached; the entry's version
        becomes the write's newest event id."""
        entry = self.cache.get_table(key)
        if entry is not None:
            changed = change(entry)
            self.cache.put_table(key, changed.but(version=max(changed.version, version)))

    def _canonical_parts(self, key: TableKey, parts: Sequence[Partition]) -> list[Partition]:
        return [self.delegate.kept(canonical.partition(p, key[0], key[1], key[2])) for p in parts]

    def add_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[Partition],
                       if_not_exists: bool = False, journal: Journal | None = None) -> list[Partition]:
        key = (cat, db_name, tbl_name)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        encoded = WorkAhead(lambda: encoded_rows(self._canonical_parts(key, parts)))
        if not if_not_exists:   # with it, only the store learns which of them it adds: encoded after, those alone
            journal.while_committing.append(encoded.run)
        with self.cache.writing(key):
            added = self.delegate.add_partitions(cat, db_name, tbl_name, parts, if_not_exists, journal)
            given = len(added) == len(parts) and all(a is p for a, p in zip(added, parts))
            rows = encoded.result() if given else encoded_rows(self._canonical_parts(key, added))
            self._update_entry(key, lambda e: e.but(partitions=e.partitions.with_encoded(
                rows, journal.partition_ids)), journal.version)
        return added

    def alter_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[Partition],
                         journal: Journal | None = None) -> None:
        key = (cat, db_name, tbl_name)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            self.delegate.alter_partitions(cat, db_name, tbl_name, parts, journal)
            stored = self._canonical_parts(key, parts)
            self._update_entry(key, lambda e: e.but(partitions=e.partitions.with_partitions(stored)), journal.version)

    def rename_partition(self, cat: str, db_name: str, tbl_name: str, old_values: Sequence[str], part: Partition,
                         journal: Journal | None = None) -> None:
        key = (cat, db_name, tbl_name)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            self.delegate.rename_partition(cat, db_name, tbl_name, old_values, part, journal)
            [stored] = self._canonical_parts(key, [part])

            def change(entry: TableEntry) -> TableEntry:
                old_name = make_partition_name(entry.partitions.keys, old_values)
                new_name = make_partition_name(entry.partitions.keys, cast("list[str]", part.values))
                stats = entry.partition_stats.renamed(old_name, new_name)
                kept_id = entry.partitions.id_of(old_name)   # a rename keeps the partition's id
                partitions = entry.partitions.without([old_name]).with_partitions(
                    [stored], None if kept_id is None else {new_name: kept_id})
                return entry.but(partitions=partitions, partition_stats=stats)

            self._update_entry(key, change, journal.version)

    def drop_partitions(self, cat: str, db_name: str, tbl_name: str, names: Sequence[str],
                        if_exists: bool = False, journal: Journal | None = None) -> list[Partition]:
        key = (cat, db_name, tbl_name)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            dropped = self.delegate.drop_partitions(cat, db_name, tbl_name, names, if_exists, journal)

            def change(entry: TableEntry) -> TableEntry:
                stats = entry.partition_stats.changed(dict.fromkeys(names))
                return entry.but(partitions=entry.partitions.without(names), partition_stats=stats)

            self._update_entry(key, change, journal.version)
        return dropped

    def get_partitions(self, cat: str, db_name: str, tbl_name: str, max_parts: int = -1) -> Sequence[Partition]:
        return self._read(cat, db_name, tbl_name, "partition", lambda e: e.partitions.all(max_parts),
                          lambda: self.delegate.get_partitions(cat, db_name, tbl_name, max_parts))

    def get_partitions_by_names(self, cat: str, db_name: str, tbl_name: str, names: Sequence[str]) -> list[Partition]:
        def from_cache(entry: TableEntry) -> list[Partition]:
            found = entry.partitions.by_names(names)
            if len(found) < len(set(names)):  # another instance may have added them: never "missing" from memory
                return self.delegate.get_partitions_by_names(cat, db_name, tbl_name, names)
            return cast("list[Partition]", found)   # an EncodedList, which the codec sends as a list

        return self._read(cat, db_name, tbl_name, "partition", from_cache,
                          lambda: self.delegate.get_partitions_by_names(cat, db_name, tbl_name, names))

    def get_partition(self, cat: str, db_name: str, tbl_name: str, values: Sequence[str]) -> Partition:
        def from_cache(entry: TableEntry) -> Partition:
            found = entry.partitions.by_names([make_partition_name(entry.partitions.keys, values)])
            return found[0] if found else self.delegate.get_partition(cat, db_name, tbl_name, values)

        return self._read(cat, db_name, tbl_name, "partition", from_cache,
                          lambda: self.delegate.get_partition(cat, db_name, tbl_name, values))

    def get_partition_names(self, cat: str, db_name: str, tbl_name: str) -> list[str]:
        return self._read(cat, db_name, tbl_name, "partition_names", lambda e: list(e.partitions.names),
                          lambda: self.delegate.get_partition_names(cat, db_name, tbl_name))

    def get_partition_values(self, cat: str, db_name: str, tbl_name: str) -> list[tuple[str, list[str]]]:
        return self._read(cat, db_name, tbl_name, "partition_names",
                          lambda e: [(n, list(v)) for n, v in zip(e.partitions.names, e.partitions.values)],
                          lambda: self.delegate.get_partition_values(cat, db_name, tbl_name))

    def get_partition_names_by_filter(self, cat: str, db_name: str, tbl_name: str,
                                      partition_filter: PartitionFilter) -> list[str]:
        return self._read(cat, db_name, tbl_name, "partition_names", lambda e: e.partitions.names_matching(
            partition_filter), lambda: self.delegate.get_partition_names_by_filter(cat, db_name, tbl_name,
                                                                                  partition_filter))

    # ---- functions ---------------------------------------------------------------------------------

    def create_function(self, function: Function, journal: Journal | None = None) -> None:
        self.delegate.create_function(function, journal)
        db_key = cast(DbKey, (function.catName, function.dbName))   # the caller sets the names
        self.cache.put_function(db_key, cast(str, function.functionName), canonical.function(function, db_key[0]))

    def get_function(self, cat: str, db_name: str, name: str) -> Function:
        function = None if self.passing_through else self.cache.function((cat, db_name), name)
        self._count("function", function is not None)
        return function if function is not None else self.delegate.get_function(cat, db_name, name)

    def get_functions(self, cat: str, db_name: str | None = None) -> list[Function]:
        found = None if self.passing_through or not self.cache.is_complete(cat) else \
            self.cache.functions_of(cat, db_name)
        self._count("function", found is not None)
        return found if found is not None else self.delegate.get_functions(cat, db_name)

    def alter_function(self, cat: str, db_name: str, name: str, function: Function,
                       journal: Journal | None = None) -> None:
        self.delegate.alter_function(cat, db_name, name, function, journal)
        with self.cache.lock:
            self.cache.put_function((cat, db_name), name, None)
            self.cache.put_function(cast(DbKey, (cat, function.dbName)), cast(str, function.functionName),
                                    canonical.function(function, cat))

    def drop_function(self, cat: str, db_name: str, name: str, journal: Journal | None = None) -> None:
        self.delegate.drop_function(cat, db_name, name, journal)
        self.cache.put_function((cat, db_name), name, None)

    # ---- always answered by the store below: batched partition listings (one indexed range read per batch,
    # for tables too large to list at once), the time statistics were written (asked only by the
    # single-column statistics calls of old clients) and the notification log -----------------------------

    def get_partition_batch(self, cat: str, db_name: str, tbl_name: str, from_id: int, to_id: int, size: int,
                            predicate: Callable[[Sequence[str]], bool] | None, names_only: bool) -> PartitionBatch:
        """From memory when the cached set knows every partition's id (under the snapshot rules of every cached
        read), else from the database, and the table is read again to learn them."""
        def from_db() -> PartitionBatch:
            return self.delegate.get_partition_batch(cat, db_name, tbl_name, from_id, to_id, size, predicate,
                                                     names_only)

        def from_cache(entry: TableEntry) -> PartitionBatch:
            batch = entry.partitions.batch(from_id, to_id, size, predicate, names_only)
            if batch is not None:
                return batch
            self.request_load((cat, db_name, tbl_name))
            return from_db()

        return self._read(cat, db_name, tbl_name, "partition", from_cache, from_db)

    def statistics_analyzed_at(self, cat: str, db_name: str, tbl_name: str, part_name: str | None,
                               col_name: str) -> int | None:
        return self.delegate.statistics_analyzed_at(cat, db_name, tbl_name, part_name, col_name)

    def get_events(self, after: int, limit: int | None = None, *, skip_types: Sequence[str] = (),
                   cat: str | None = None, db: str | None = None,
                   tables: Sequence[str] | None = None) -> list[NotificationEvent]:
        return self.delegate.get_events(after, limit, skip_types=skip_types, cat=cat, db=db, tables=tables)

    def current_event_id(self) -> int:
        return self.delegate.current_event_id()

    def table_version(self, db_name: str, tbl_name: str) -> int:
        return self.delegate.table_version(db_name, tbl_name)

    def count_events(self, after: int, db: str, cat: str | None = None, up_to: int | None = None) -> int:
        return self.delegate.count_events(after, db, cat, up_to)

    def oldest_event_id(self) -> int | None:
        return self.delegate.oldest_event_id()

    def add_events(self, events: Sequence[Event]) -> list[int]:
        return self.delegate.add_events(events)

    def clean_events(self, older_than_s: int) -> int:
        return self.delegate.clean_events(older_than_s)

    def close(self) -> None:
        self.delegate.close()


EntryReader = Callable[[str, Sequence[tuple[str, str]]], list[TableEntry]]


def entries_read(store: RawStore, cat: str, tables: Sequence[tuple[str, str]], *, hot: HotOwnBytes | None
                 ) -> list[TableEntry]:
    """The cache entries of tables read together from `store` (database, table each), with their sizes counted;
    tables that do not exist are left out. `hot`: the cache's, where their partitions are read (none in a worker
    process)."""
    entries = [entry_from_bundle(bundle, hot=hot) for bundle in store.get_table_bundles(cat, tables)]
    for entry in entries:
        entry.size_bytes()
    return entries


def entry_from_bundle(bundle: TableBundle, partitions: PartitionSetBuilder | None = None, *,
                      hot: HotOwnBytes | None) -> TableEntry:
    """The cache entry of a loaded table; its partitions come from the builder they streamed into, or from
    the bundle's list (a set kept hot in `hot`: the cache's, or none in a prewarm worker process)."""
    keys = tuple(present(k.name) for k in bundle.table.partitionKeys or [])
    builder = partitions or PartitionSetBuilder(PartitionSet(keys=keys, hot=hot))
    builder.add(bundle.partitions, bundle.partition_ids)
    return TableEntry(
        table=bundle.table, partitions=builder.build(), table_stats=bundle.table_stats,
        partition_stats=PartitionStats.of(bundle.partition_stats), write_ids=bundle.write_ids, version=bundle.version,
    )
