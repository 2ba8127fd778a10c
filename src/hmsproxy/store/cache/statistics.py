"""Column statistics in the cache: served from the table entry, updated after each committed write."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from hmsproxy.events.journal import Journal
from hmsproxy.hive.names import make_partition_name
from hmsproxy.hive.stats_accurate import ACCURATE, mark_columns_accurate
from hmsproxy.idl.fields import present
from hmsproxy.store import canonical
from hmsproxy.store.cache.shared_cache import SharedCache, TableEntry, TableKey
from hmsproxy.store.domain import ColumnStatistics, ColumnStatisticsObj, StatsAsStored
from hmsproxy.store.rawstore import RawStore

R = TypeVar("R")


class CachedStatistics:
    """Mixed into CachedStore, whose parts it uses:"""

    delegate: RawStore
    cache: SharedCache
    # Statistics objects as the store returns them, by column name: what an update leaves in the cache
    # (server.py passes the SQL store's stats_codec.stats_as_stored).
    stats_as_stored: StatsAsStored
    _update_entry: Callable[[TableKey, Callable[[TableEntry], TableEntry], int], None]
    if TYPE_CHECKING:
        def _read(self, cat: str, db: str, tbl: str, kind: str, from_cache: Callable[[TableEntry], R],
                  from_db: Callable[[], R]) -> R: ...   # CachedStore._read

    def update_table_column_statistics(self, cat: str, stats: ColumnStatistics, journal: Journal | None = None) -> None:
        desc = stats.statsDesc
        key = (cat, desc.dbName, desc.tableName)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            self.delegate.update_table_column_statistics(cat, stats, journal)
            new_stats = self.stats_as_stored(stats.statsObj)

            def change(entry: TableEntry) -> TableEntry:
                table = canonical.table(entry.table, entry.table_id, cat)
                parameters = present(table.parameters)
                parameters[ACCURATE] = mark_columns_accurate(parameters.get(ACCURATE), list(new_stats))
                self.cache.index_table(key, table)
                return entry.but(table=table, table_stats={**entry.table_stats, **new_stats})

            self._update_entry(key, change, journal.version)

    def update_partition_column_statistics(self, cat: str, stats: ColumnStatistics, values: Sequence[str],
                                           journal: Journal | None = None) -> None:
        desc = stats.statsDesc
        key = (cat, desc.dbName, desc.tableName)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            self.delegate.update_partition_column_statistics(cat, stats, values, journal)
            new_stats = self.stats_as_stored(stats.statsObj)

            def change(entry: TableEntry) -> TableEntry:
                name = make_partition_name(entry.partitions.keys, values)
                [part] = entry.partitions.by_names([name])
                parameters = present(part.parameters)   # a cached partition's are always set (canonical.py)
                parameters[ACCURATE] = mark_columns_accurate(parameters.get(ACCURATE), list(new_stats))
                merged = {**entry.partition_stats.get(name, {}), **new_stats}
                return entry.but(partitions=entry.partitions.with_partitions([part]),
                                 partition_stats=entry.partition_stats.changed({name: merged}))

            self._update_entry(key, change, journal.version)

    def get_table_column_statistics(self, cat: str, db_name: str, tbl_name: str,
                                    col_names: Sequence[str]) -> list[ColumnStatisticsObj]:
        return self._read(cat, db_name, tbl_name, "table_stats",
                          lambda e: [e.table_stats[c] for c in col_names if c in e.table_stats],
                          lambda: self.delegate.get_table_column_statistics(cat, db_name, tbl_name, col_names))

    def get_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_names: Sequence[str],
                                        col_names: Sequence[str]) -> dict[str, list[ColumnStatisticsObj]]:
        def from_cache(entry: TableEntry) -> dict[str, list[ColumnStatisticsObj]]:
            result = {}
            for name in dict.fromkeys(part_names):
                columns = entry.partition_stats.get(name, {})
                found = [columns[c] for c in col_names if c in columns]
                if found:
                    result[name] = found
            return result

        return self._read(cat, db_name, tbl_name, "partition_stats", from_cache,
                          lambda: self.delegate.get_partition_column_statistics(
                              cat, db_name, tbl_name, part_names, col_names))

    def delete_table_column_statistics(self, cat: str, db_name: str, tbl_name: str, col_name: str | None,
                                       journal: Journal | None = None) -> None:
        key = (cat, db_name, tbl_name)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            self.delegate.delete_table_column_statistics(cat, db_name, tbl_name, col_name, journal)
            self._update_entry(key, lambda e: e.but(
                table_stats={} if col_name is None else {c: s for c, s in e.table_stats.items() if c != col_name}),
                journal.version)

    def delete_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_name: str,
                                           col_name: str | None, journal: Journal | None = None) -> None:
        key = (cat, db_name, tbl_name)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            self.delegate.delete_partition_column_statistics(cat, db_name, tbl_name, part_name, col_name, journal)

            def change(entry: TableEntry) -> TableEntry:
                columns = entry.partition_stats.get(part_name, {})
                kept = {} if col_name is None else {c: s for c, s in columns.items() if c != col_name}
                return entry.but(partition_stats=entry.partition_stats.changed({part_name: kept}))

            self._update_entry(key, change, journal.version)
