"""What the cache holds, and the bookkeeping that keeps loads and writes in order.

- databases and functions: small, always complete once a catalog is prewarmed;
- a name index of every table per database (type and comment): complete once prewarmed, so a lookup of
  a table that does not exist needs no database round trip;
- table entries (the table, its partitions and statistics) in a size-bounded LRU: whole tables are
  evicted when the memory bound is reached and served from the database until loaded again.

Every write to a table bumps that table's generation; a load that started before the bump is dropped
instead of overwriting newer data with older (the rule Trino's CachingHiveMetastore follows). The
bookkeeping stays bounded under any workload: generations are forgotten in bulk past a size (a floor keeps
every later answer different from any number handed out before), and a table's write lock lives only
while a write holds or awaits it.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import cachetools

from hmsproxy.hive.write_ids import ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.idl.codec import encode
from hmsproxy.idl.fields import present
from hmsproxy.store.cache.own_bytes import HotOwnBytes
from hmsproxy.store.cache.partition_stats import PartitionStats
from hmsproxy.store.cache.partitions import PartitionSet
from hmsproxy.store.ready import Held

TableKey = tuple[str, str, str]   # catalog, database, table
DbKey = tuple[str, str]           # catalog, database
TABLE_OVERHEAD_BYTES = 4096       # a table object with its storage descriptor, roughly
GENERATIONS_KEPT = 10_000         # tables whose generation is remembered; past it all are forgotten at once


@dataclass(frozen=True)
class TableEntry:
    table: hms.Table
    partitions: PartitionSet
    table_stats: dict[str, hms.ColumnStatisticsObj] = field(default_factory=dict)   # column -> stats object
    partition_stats: PartitionStats = field(default_factory=PartitionStats)  # partition name -> column -> stats
    write_ids: ValidWriteIdList | None = None  # transactional tables: the write ids this entry reflects
    version: int = 0  # the table's newest event id when it was loaded (local writes keep it: a lower bound)
    held: Held = field(default_factory=Held, init=False, repr=False, compare=False)   # current while cached

    @property
    def table_id(self) -> int:
        return cast(int, self.table.id)   # None from an upstream Hive 2.3, whose tables have no id

    @functools.cached_property
    def table_bytes(self) -> bytes:
        """The table encoded once per entry (an entry never changes: a write puts a new one), so that get_table
        costs a byte copy instead of an encoding per call."""
        return encode(self.table)

    def size_bytes(self) -> int:
        stats = 512 * (len(self.table_stats) + self.partition_stats.columns)
        return TABLE_OVERHEAD_BYTES + self.partitions.size_bytes() + stats

    def but(self, **changes: Any) -> TableEntry:   # dataclasses.replace's keyword arguments
        return replace(self, **changes)


class _TableLRU(cachetools.LRUCache[TableKey, "TableEntry"]):
    """An LRU bounded by estimated bytes that reports evictions, and tells an entry's holders when it is replaced or
    removed (evictions and clear() included)."""

    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None]) -> None:
        super().__init__(maxsize=max_bytes, getsizeof=lambda entry: entry.size_bytes())
        self._on_evict = on_evict

    def __setitem__(self, key: TableKey, entry: TableEntry) -> None:
        replaced = self.get(key)
        super().__setitem__(key, entry)
        if replaced is not None and replaced is not entry:
            replaced.held.current = False

    def __delitem__(self, key: TableKey) -> None:
        removed = self.get(key)
        super().__delitem__(key)
        if removed is not None:
            removed.held.current = False

    def clear(self) -> None:   # cachetools empties its dicts at once, without popitem
        for entry in list(self.values()):
            entry.held.current = False
        super().clear()

    def popitem(self) -> tuple[TableKey, TableEntry]:  # called by cachetools when room is needed
        key, value = super().popitem()
        self._on_evict(key)
        return key, value


class SharedCache:
    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None] = lambda key: None,
                 generations_kept: int = GENERATIONS_KEPT, hot_bytes: int = 64 << 20) -> None:
        self.lock = threading.RLock()
        # the partitions' own bytes kept expanded while read, up to `hot_bytes` (--cache-hot-bytes; own_bytes.py)
        self.hot = HotOwnBytes(hot_bytes)
        self._databases: dict[DbKey, hms.Database] = {}
        self._complete_catalogs: set[str] = set()
        self._table_index: dict[DbKey, dict[str, tuple[str, str | None]]] = {}   # name -> (type, comment)
        self._functions: dict[DbKey, dict[str, hms.Function]] = {}
        self._tables = _TableLRU(max_bytes, on_evict)
        self._oversized: set[TableKey] = set()   # tables larger than the whole memory bound: never cached
        self._generations: dict[TableKey, int] = {}
        self._generations_kept = generations_kept
        self._writes = 0              # every bump takes the next number, so a generation never repeats
        self._generation_floor = 0    # the generation of every table forgotten (or never written)
        self._catalog_generations: dict[str, int] = {}   # bumped by every write in a catalog
        self._epoch = 0
        self._key_locks: dict[TableKey, _KeyLock] = {}

    # ---- tables ------------------------------------------------------------------------------------

    def get_table(self, key: TableKey) -> TableEntry | None:
        with self.lock:
            return self._tables.get(key)

    def generation(self, key: TableKey) -> tuple[int, int]:
        """Changes with every write to the table and with every clear()."""
        with self.lock:
            return self._epoch, self._generations.get(key, self._generation_floor)

    def writing(self, key: TableKey) -> _KeyWrite:
        """Serializes writes to one table in this process; bumps its generation when the write ends."""
        return _KeyWrite(self, key, bumps=True)

    def writes_held(self, key: TableKey) -> _KeyWrite:
        """Holds off writes to one table in this process, as a write does, without counting as one."""
        return _KeyWrite(self, key, bumps=False)

    def is_being_written(self, key: TableKey) -> bool:
        """Whether a write to the table is under way here (see _KeyLock.writing): a read installed now may be older
        than what the write put in the cache, or than what it commits."""
        with self.lock:
            key_lock = self._key_locks.get(key)
            return key_lock is not None and key_lock.writing

    def bump(self, key: TableKey) -> None:
        """A write to the table: loads that started before it are dropped. Forgetting every generation
        at once raises the floor to the newest number, which is above any a load can have started with
        before a write since; a load that saw no write is at worst dropped and read again."""
        with self.lock:
            self._writes += 1
            self._generations[key] = self._writes
            if len(self._generations) > self._generations_kept:
                self._generations.clear()
                self._generation_floor = self._writes
            self.bump_catalog(key[0])

    def bookkeeping_entries(self) -> dict[str, int]:
        """Sizes of the maps kept beside the cached objects (exported as a metric: they must stay bounded)."""
        with self.lock:
            return {"generations": len(self._generations), "key_locks": len(self._key_locks)}

    def bump_catalog(self, cat: str) -> None:
        """A catalog load that overlapped this write must start again (its name lists may miss it)."""
        with self.lock:
            self._catalog_generations[cat] = self._catalog_generations.get(cat, 0) + 1

    def put_table(self, key: TableKey, entry: TableEntry, loaded_at_generation: tuple[int, int] | None = None) -> bool:
        """Stores an entry; a load (with its starting generation) is dropped if a write came in between.
        False if it was not stored (stale load, or larger than the whole cache)."""
        entry.size_bytes()   # counted (once per set) before the lock: the connection loop's reads wait for it
        with self.lock:
            if loaded_at_generation is not None and self.generation(key) != loaded_at_generation:
                return False
            try:
                self._tables[key] = entry
            except ValueError:  # larger than the memory bound: stays uncached
                self._tables.pop(key, None)
                self._oversized.add(key)
                return False
            return True

    def clear(self) -> None:
        """Forgets everything (the log this cache followed has a gap); loads in flight are dropped."""
        with self.lock:
            self._epoch += 1
            for cat in list(self._catalog_generations):
                self.bump_catalog(cat)
            self._databases.clear()
            self._complete_catalogs.clear()
            self._table_index.clear()
            self._functions.clear()
            self._tables.clear()
            self._oversized.clear()

    def drop_table(self, key: TableKey) -> None:
        with self.lock:
            self._tables.pop(key, None)
            self._oversized.discard(key)

    def table_keys(self, db: DbKey) -> Iterator[TableKey]:
        with self.lock:
            return iter([k for k in self._tables if k[:2] == db])

    def pending_entries(self) -> int:
        """Cached transactional tables that have write ids not committed yet."""
        with self.lock:
            return sum(1 for e in self._tables.values() if e.write_ids is not None and e.write_ids.open_ids)

    def bytes_used(self) -> int:
        with self.lock:
            return int(self._tables.currsize)

    def entries(self) -> list[tuple[TableKey, TableEntry]]:
        """Every cached table entry, as of now (a copy: the cache may change while the caller looks)."""
        with self.lock:
            return list(self._tables.items())

    @property
    def max_bytes(self) -> int:
        return int(self._tables.maxsize)

    def table_count(self) -> int:
        with self.lock:
            return len(self._tables)

    def is_oversized(self, key: TableKey) -> bool:
        with self.lock:
            return key in self._oversized

    # ---- databases, functions and the name index ---------------------------------------------------
    # A database's table names and functions are known (not None) once the database is: a catalog is complete
    # when all of its databases are known, and only then answers listings of databases, tables and functions.

    def catalog_generation(self, cat: str) -> int:
        with self.lock:
            return self._catalog_generations.get(cat, 0)

    def is_complete(self, cat: str) -> bool:
        with self.lock:
            return cat in self._complete_catalogs

    def mark_incomplete(self, cat: str) -> None:
        """Listings of the catalog go to the store until the next prewarm (the index may have missed a write)."""
        with self.lock:
            self._complete_catalogs.discard(cat)

    def install_catalog(self, cat: str, databases: dict[str, hms.Database],
                        meta: Sequence[tuple[str, str, str, str | None]],
                        functions: Sequence[hms.Function]) -> None:
        """A prewarm's read of a whole catalog; the catalog is complete from now on."""
        with self.lock:
            for name, database in databases.items():
                self._databases[(cat, name)] = database
                self._table_index[(cat, name)] = {}
                self._functions[(cat, name)] = {}
            for db, tbl, kind, comment in meta:
                self._table_index[(cat, db)][tbl] = (kind, comment)
            for function in functions:
                self._functions[(cat, present(function.dbName))][present(function.functionName)] = function
            self._complete_catalogs.add(cat)

    def put_database(self, key: DbKey, database: hms.Database, tables: dict[str, tuple[str, str | None]] | None = None,
                     functions: dict[str, hms.Function] | None = None) -> None:
        """A database created or changed. Its table names and functions, when given, are what a database new to
        the cache starts with (empty for a created one); a database already known keeps its own."""
        with self.lock:
            self.bump_catalog(key[0])
            self._databases[key] = database
            if tables is not None:
                self._table_index.setdefault(key, tables)
            if functions is not None:
                self._functions.setdefault(key, functions)

    def forget_database(self, key: DbKey, tables: Sequence[str] = ()) -> None:
        """A dropped database: everything of it, and the entries of `tables` too (named by a caller that read
        them before the drop), are forgotten and their loads in flight dropped."""
        with self.lock:
            for table_key in [*((*key, t) for t in tables), *self.table_keys(key)]:
                self.drop_table(table_key)
                self.bump(table_key)
            self.bump_catalog(key[0])
            self._databases.pop(key, None)
            self._table_index.pop(key, None)
            self._functions.pop(key, None)

    def database(self, key: DbKey) -> hms.Database | None:
        with self.lock:
            return self._databases.get(key)

    def database_names(self, cat: str) -> list[str]:
        with self.lock:
            return sorted(db for c, db in self._databases if c == cat)

    def database_count(self) -> int:
        with self.lock:
            return len(self._databases)

    def knows_tables_of(self, key: DbKey) -> bool:
        with self.lock:
            return key in self._table_index

    def table_names(self, key: DbKey, table_type: str | None = None) -> list[str] | None:
        """The database's tables (of one type), sorted; None when the database's names are not known."""
        with self.lock:
            names = self._table_index.get(key)
            if names is None:
                return None
            return sorted(n for n, (kind, _) in names.items() if table_type is None or kind == table_type)

    def is_indexed(self, key: TableKey) -> bool:
        with self.lock:
            return key[2] in self._table_index.get(key[:2], {})

    def table_meta(self, cat: str) -> list[tuple[str, str, str, str | None]]:
        with self.lock:
            return sorted((db, name, kind, comment) for (c, db), names in self._table_index.items() if c == cat
                          for name, (kind, comment) in names.items())

    def function(self, key: DbKey, name: str) -> hms.Function | None:
        with self.lock:
            return self._functions.get(key, {}).get(name)

    def functions_of(self, cat: str, db: str | None = None) -> list[hms.Function] | None:
        """The functions of a catalog, or of one database; None when that database's are not known."""
        with self.lock:
            if db is not None and (cat, db) not in self._functions:
                return None
            found = [f for (c, d), functions in self._functions.items() if c == cat and (db is None or d == db)
                     for f in functions.values()]
        return sorted(found, key=lambda f: (f.dbName, f.functionName))

    def put_function(self, key: DbKey, name: str, function: hms.Function | None) -> None:
        """A function created, changed (`function`) or dropped (None), in a database whose functions are known."""
        with self.lock:
            self.bump_catalog(key[0])
            functions = self._functions.get(key)
            if functions is None:
                return
            if function is None:
                functions.pop(name, None)
            else:
                functions[name] = function

    # ---- name index --------------------------------------------------------------------------------

    def index_table(self, key: TableKey, table: hms.Table) -> None:
        with self.lock:
            self.bump_catalog(key[0])
            names = self._table_index.get(key[:2])
            if names is not None:
                names[key[2]] = (cast(str, table.tableType), (table.parameters or {}).get("comment"))

    def unindex_table(self, key: TableKey) -> None:
        with self.lock:
            self.bump_catalog(key[0])
            names = self._table_index.get(key[:2])
            if names is not None:
                names.pop(key[2], None)


@dataclass
class _KeyLock:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0   # writes holding or awaiting the lock; at 0 it is removed
    # A write holds the lock: from its commit to its end the cached entry may show it while the table's generation
    # does not yet (the bump comes last), so a read of the table installed meanwhile could be older than the entry.
    writing: bool = False


class _KeyWrite:
    def __init__(self, cache: SharedCache, key: TableKey, bumps: bool) -> None:
        self._cache, self._key, self._bumps = cache, key, bumps

    def __enter__(self) -> None:
        with self._cache.lock:
            key_lock = self._cache._key_locks.setdefault(self._key, _KeyLock())
            key_lock.users += 1
        key_lock.lock.acquire()
        if self._bumps:
            with self._cache.lock:
                key_lock.writing = True

    def __exit__(self, *exc: object) -> None:
        if self._bumps:
            self._cache.bump(self._key)
        with self._cache.lock:
            key_lock = self._cache._key_locks[self._key]
            key_lock.writing = False
            key_lock.lock.release()
            key_lock.users -= 1
            if not key_lock.users:
                del self._cache._key_locks[self._key]

