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

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import cachetools

from hmsproxy.store.cache.partitions import PartitionSet
from hmsproxy.txn.write_ids import ValidWriteIdList

TableKey = tuple[str, str, str]   # catalog, database, table
DbKey = tuple[str, str]           # catalog, database
TABLE_OVERHEAD_BYTES = 4096       # a table object with its storage descriptor, roughly
GENERATIONS_KEPT = 10_000         # tables whose generation is remembered; past it all are forgotten at once


@dataclass(frozen=True)
class TableEntry:
    table: Any
    partitions: PartitionSet
    table_stats: dict[str, Any] = field(default_factory=dict)              # column -> stats object
    partition_stats: dict[str, dict[str, Any]] = field(default_factory=dict)  # partition name -> column -> stats
    write_ids: ValidWriteIdList | None = None  # transactional tables: the write ids this entry reflects
    version: int = 0  # the table's newest event id when it was loaded (local writes keep it: a lower bound)

    @property
    def table_id(self) -> int:
        return self.table.id

    def size_bytes(self) -> int:
        stats = 512 * (len(self.table_stats) + sum(len(c) for c in self.partition_stats.values()))
        return TABLE_OVERHEAD_BYTES + self.partitions.size_bytes() + stats

    def but(self, **changes: Any) -> TableEntry:
        return replace(self, **changes)


class _TableLRU(cachetools.LRUCache[TableKey, "TableEntry"]):
    """An LRU bounded by estimated bytes that reports evictions."""

    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None]) -> None:
        super().__init__(maxsize=max_bytes, getsizeof=lambda entry: entry.size_bytes())
        self._on_evict = on_evict

    def popitem(self) -> tuple[TableKey, TableEntry]:  # called by cachetools when room is needed
        key, value = super().popitem()
        self._on_evict(key)
        return key, value


class SharedCache:
    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None] = lambda key: None,
                 generations_kept: int = GENERATIONS_KEPT) -> None:
        self.lock = threading.RLock()
        self.databases: dict[DbKey, Any] = {}
        self.complete_catalogs: set[str] = set()
        self.table_index: dict[DbKey, dict[str, tuple[str, str | None]]] = {}   # name -> (type, comment)
        self.functions: dict[DbKey, dict[str, Any]] = {}
        self.tables = _TableLRU(max_bytes, on_evict)
        self.oversized: set[TableKey] = set()   # tables larger than the whole memory bound: never cached
        self._generations: dict[TableKey, int] = {}
        self._generations_kept = generations_kept
        self._writes = 0              # every bump takes the next number, so a generation never repeats
        self._generation_floor = 0    # the generation of every table forgotten (or never written)
        self.catalog_generations: dict[str, int] = {}   # bumped by every write in a catalog
        self._epoch = 0
        self._key_locks: dict[TableKey, _KeyLock] = {}

    # ---- tables ------------------------------------------------------------------------------------

    def get_table(self, key: TableKey) -> TableEntry | None:
        with self.lock:
            return self.tables.get(key)

    def generation(self, key: TableKey) -> tuple[int, int]:
        """Changes with every write to the table and with every clear()."""
        with self.lock:
            return self._epoch, self._generations.get(key, self._generation_floor)

    def writing(self, key: TableKey) -> _KeyWrite:
        """Serializes writes to one table in this process; bumps its generation when the write ends."""
        return _KeyWrite(self, key)

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
            self.catalog_generations[cat] = self.catalog_generations.get(cat, 0) + 1

    def put_table(self, key: TableKey, entry: TableEntry, loaded_at_generation: tuple[int, int] | None = None) -> bool:
        """Stores an entry; a load (with its starting generation) is dropped if a write came in between.
        False if it was not stored (stale load, or larger than the whole cache)."""
        with self.lock:
            if loaded_at_generation is not None and self.generation(key) != loaded_at_generation:
                return False
            try:
                self.tables[key] = entry
            except ValueError:  # larger than the memory bound: stays uncached
                self.tables.pop(key, None)
                self.oversized.add(key)
                return False
            return True

    def clear(self) -> None:
        """Forgets everything (the log this cache followed has a gap); loads in flight are dropped."""
        with self.lock:
            self._epoch += 1
            for cat in list(self.catalog_generations):
                self.bump_catalog(cat)
            self.databases.clear()
            self.complete_catalogs.clear()
            self.table_index.clear()
            self.functions.clear()
            self.tables.clear()
            self.oversized.clear()

    def drop_table(self, key: TableKey) -> None:
        with self.lock:
            self.tables.pop(key, None)
            self.oversized.discard(key)

    def table_keys(self, db: DbKey) -> Iterator[TableKey]:
        with self.lock:
            return iter([k for k in self.tables if k[:2] == db])

    def pending_entries(self) -> int:
        """Cached transactional tables that have write ids not committed yet."""
        with self.lock:
            return sum(1 for e in self.tables.values() if e.write_ids is not None and e.write_ids.open_ids)

    def bytes_used(self) -> int:
        with self.lock:
            return int(self.tables.currsize)

    def entries(self) -> list[tuple[TableKey, TableEntry]]:
        """Every cached table entry, as of now (a copy: the cache may change while the caller looks)."""
        with self.lock:
            return list(self.tables.items())

    def databases_in(self, cat: str) -> dict[str, Any]:
        with self.lock:
            return {db: database for (c, db), database in self.databases.items() if c == cat}

    def tables_indexed(self, cat: str) -> set[TableKey]:
        with self.lock:
            return {(c, db, tbl) for (c, db), names in self.table_index.items() if c == cat for tbl in names}

    def functions_in(self, cat: str) -> dict[tuple[str, str], Any]:
        with self.lock:
            return {(db, name): f for (c, db), by_name in self.functions.items() if c == cat
                    for name, f in by_name.items()}

    # ---- name index --------------------------------------------------------------------------------

    def index_table(self, key: TableKey, table: Any) -> None:
        with self.lock:
            self.bump_catalog(key[0])
            names = self.table_index.get(key[:2])
            if names is not None:
                names[key[2]] = (table.tableType, (table.parameters or {}).get("comment"))

    def unindex_table(self, key: TableKey) -> None:
        with self.lock:
            self.bump_catalog(key[0])
            names = self.table_index.get(key[:2])
            if names is not None:
                names.pop(key[2], None)


@dataclass
class _KeyLock:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0   # writes holding or awaiting the lock; at 0 it is removed


class _KeyWrite:
    def __init__(self, cache: SharedCache, key: TableKey) -> None:
        self._cache, self._key = cache, key

    def __enter__(self) -> None:
        with self._cache.lock:
            key_lock = self._cache._key_locks.setdefault(self._key, _KeyLock())
            key_lock.users += 1
        key_lock.lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._cache.bump(self._key)
        with self._cache.lock:
            key_lock = self._cache._key_locks[self._key]
            key_lock.lock.release()
            key_lock.users -= 1
            if not key_lock.users:
                del self._cache._key_locks[self._key]

