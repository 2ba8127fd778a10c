"""What the cache holds, and the bookkeeping that keeps loads and writes in order.

- databases and functions: small, always complete once a catalog is prewarmed;
- a name index of every table per database (type and comment): complete once prewarmed, so a lookup of
  a table that does not exist needs no database round trip;
- table entries (the table, its partitions and statistics) in a size-bounded LRU: whole tables are
  evicted when the memory bound is reached and served from the database until loaded again.

Every write to a table bumps that table's generation; a load that started before the bump is dropped
instead of overwriting newer data with older (the rule Trino's CachingHiveMetastore follows).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

import cachetools

from hmsproxy.store.cache.partitions import PartitionSet
from hmsproxy.txn.write_ids import ValidWriteIdList

TableKey = tuple[str, str, str]   # catalog, database, table
DbKey = tuple[str, str]           # catalog, database
TABLE_OVERHEAD_BYTES = 4096       # a table object with its storage descriptor, roughly


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

    def but(self, **changes: Any) -> "TableEntry":
        return replace(self, **changes)


class _TableLRU(cachetools.LRUCache):
    """An LRU bounded by estimated bytes that reports evictions."""

    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None]) -> None:
        super().__init__(maxsize=max_bytes, getsizeof=lambda entry: entry.size_bytes())
        self._on_evict = on_evict

    def popitem(self):  # called by cachetools when room is needed
        key, value = super().popitem()
        self._on_evict(key)
        return key, value


class SharedCache:
    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None] = lambda key: None) -> None:
        self.lock = threading.RLock()
        self.databases: dict[DbKey, Any] = {}
        self.complete_catalogs: set[str] = set()
        self.table_index: dict[DbKey, dict[str, tuple[str, str | None]]] = {}   # name -> (type, comment)
        self.functions: dict[DbKey, dict[str, Any]] = {}
        self.tables = _TableLRU(max_bytes, on_evict)
        self.oversized: set[TableKey] = set()   # tables larger than the whole memory bound: never cached
        self._generations: dict[TableKey, int] = {}
        self.catalog_generations: dict[str, int] = {}   # bumped by every write in a catalog
        self._epoch = 0
        self._key_locks: dict[TableKey, threading.Lock] = {}

    # ---- tables ------------------------------------------------------------------------------------

    def get_table(self, key: TableKey) -> TableEntry | None:
        with self.lock:
            return self.tables.get(key)

    def generation(self, key: TableKey) -> tuple[int, int]:
        """Changes with every write to the table and with every clear()."""
        with self.lock:
            return self._epoch, self._generations.get(key, 0)

    def writing(self, key: TableKey) -> "_KeyWrite":
        """Serializes writes to one table in this process; bumps its generation when the write ends."""
        with self.lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        return _KeyWrite(self, key, lock)

    def bump(self, key: TableKey) -> None:
        with self.lock:
            self._generations[key] = self._generations.get(key, 0) + 1
            self.bump_catalog(key[0])

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
            return iter([k for k in self.tables.keys() if k[:2] == db])

    def pending_entries(self) -> int:
        """Cached transactional tables that have write ids not committed yet."""
        with self.lock:
            return sum(1 for e in self.tables.values() if e.write_ids is not None and e.write_ids.open_ids)

    def bytes_used(self) -> int:
        with self.lock:
            return int(self.tables.currsize)

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


class _KeyWrite:
    def __init__(self, cache: SharedCache, key: TableKey, lock: threading.Lock) -> None:
        self._cache, self._key, self._lock = cache, key, lock

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._cache.bump(self._key)
        self._lock.release()

