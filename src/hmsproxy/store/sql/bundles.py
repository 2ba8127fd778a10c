"""Table bundles, what the cache loads: a table with its partitions and statistics, read in one transaction.

One table at a time streams its partitions in chunks (a table of any size); many small tables at once are
read with a fixed number of queries for all of them together (prewarm), so a database far away costs a few
round trips per group of tables instead of some thirty per table.

A bundle's version (newest event id) and write ids are read before its content: under READ COMMITTED
(PostgreSQL's default) later statements may see newer commits, so the content is never older than what the
bundle claims, only possibly newer (which is safe to serve).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, select

from hmsproxy.hive.write_ids import ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.idl.partition_bytes import EncodedPartitions
from hmsproxy.store.domain import PartitionSink, TableBundle, is_transactional
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.lookups import TableRef, no_such_object, table_ref
from hmsproxy.store.sql.stats_codec import row_to_obj

Statistics = dict[str, hms.ColumnStatisticsObj]   # by column name


class BundleStore:
    db: Database
    _load_tables: Callable[[Connection, str, str, Sequence[str]], list[hms.Table]]                     # TableStore
    _partition_id_ranges: Callable[[Connection, TableRef], list[ColumnElement[bool]]]            # PartitionStore
    _read_encoded_partitions: Callable[[Connection, str, dict[int, tuple[str, str]], ColumnElement[bool], bool],
                                       dict[int, tuple[EncodedPartitions, list[int]]]]             # PartitionStore
    table_write_ids: Callable[[Connection, str, str], ValidWriteIdList | None]                   # TransactionStore

    def partition_counts(self, cat: str) -> dict[tuple[str, str], int] | None:
        """(database, table) -> number of partitions, for the tables of the catalog that have any. Counted by table id
        first (from the index on PARTITIONS.TBL_ID alone, half the time of grouping the join by names), then named."""
        per_table = (select(s.PARTITIONS.c.TBL_ID, func.count().label("parts"))
                     .group_by(s.PARTITIONS.c.TBL_ID).subquery())
        counted = (select(s.DBS.c.NAME, s.TBLS.c.TBL_NAME, per_table.c.parts)
                   .select_from(per_table).join(s.TBLS, s.TBLS.c.TBL_ID == per_table.c.TBL_ID)
                   .join(s.DBS, s.DBS.c.DB_ID == s.TBLS.c.DB_ID).where(s.DBS.c.CTLG_NAME == cat))
        with self.db.transaction() as conn:
            return {(db, table): count for db, table, count in conn.execute(counted)}

    def get_table_bundle(self, cat: str, db_name: str, tbl_name: str,
                         partition_sink: PartitionSink | None = None) -> TableBundle:
        """One table; with a sink, its partitions go there chunk by chunk and the bundle's list stays empty."""
        with self.db.transaction() as conn:
            version = event_log.table_version(conn, db_name, tbl_name)
            transactional = (db_name.lower(), tbl_name.lower()) in _transactional(conn, cat, [db_name], [tbl_name])
            write_ids = self.table_write_ids(conn, db_name, tbl_name) if transactional else None
            tables = self._load_tables(conn, cat, db_name, [tbl_name])
            if not tables:
                raise no_such_object(f"{db_name}.{tbl_name} table not found")
            if is_transactional(tables[0]) and write_ids is None:  # became transactional in between
                write_ids = self.table_write_ids(conn, db_name, tbl_name)
            ref = table_ref(conn, cat, db_name, tbl_name)
            chunks: list[EncodedPartitions] = []
            ids: list[int] = []
            if ref.partition_keys:
                for chunk in self._partition_id_ranges(conn, ref):
                    read = self._read_encoded_partitions(conn, cat, {ref.tbl_id: (db_name, tbl_name)}, chunk, True)
                    loaded, loaded_ids = read[ref.tbl_id]
                    if partition_sink is None:
                        chunks.append(loaded)
                        ids += loaded_ids
                    else:
                        partition_sink(tables[0], loaded, loaded_ids)
            table_stats, partition_stats = _statistics(conn, [ref.tbl_id])
        return TableBundle(tables[0], EncodedPartitions.joined(chunks), table_stats.get(ref.tbl_id, {}),
                           partition_stats.get(ref.tbl_id, {}), write_ids, version, ids)

    def get_table_bundles(self, cat: str, tables: Sequence[tuple[str, str]]) -> list[TableBundle]:
        """The bundles of many tables of a catalog, (database, table) each, read together: for tables small
        enough that all their partitions may exist as objects at once. Tables that do not exist are left out."""
        databases = sorted({db for db, _ in tables})
        with self.db.transaction() as conn:
            versions = event_log.table_versions(conn, databases)
            transactional = _transactional(conn, cat, databases, [table for _, table in tables])
            write_ids = {key: self.table_write_ids(conn, *key) for key in tables
                         if (key[0].lower(), key[1].lower()) in transactional}
            loaded: list[Any] = []   # hms.Table: the names and ids SQL always gives still to be narrowed
            for db in databases:
                loaded += self._load_tables(conn, cat, db, [table for d, table in tables if d == db])
            for table in loaded:
                key = (table.dbName, table.tableName)
                if is_transactional(table) and write_ids.get(key) is None:  # became transactional in between
                    write_ids[key] = self.table_write_ids(conn, *key)
            partitioned = {t.id: (t.dbName, t.tableName) for t in loaded if t.partitionKeys}
            read: dict[int, tuple[EncodedPartitions, list[int]]] = {}
            if partitioned:
                kept = s.PARTITIONS.c.TBL_ID.in_(list(partitioned))
                read = self._read_encoded_partitions(conn, cat, partitioned, kept, True)
            table_stats, partition_stats = _statistics(conn, [t.id for t in loaded])
        bundles = []
        for t in loaded:
            parts, ids = read.get(t.id) or (EncodedPartitions.none(), [])   # unpartitioned tables are not read
            bundles.append(TableBundle(t, parts, table_stats.get(t.id, {}), partition_stats.get(t.id, {}),
                                       write_ids.get((t.dbName, t.tableName)),
                                       versions.get((t.dbName.lower(), t.tableName.lower()), 0), ids))
        return bundles


def _transactional(conn: Connection, cat: str, databases: Sequence[str], tables: Sequence[str]) -> set[tuple[str, str]]:
    """(database, table), lower-case, of those of the named tables whose `transactional` parameter is true."""
    rows = conn.execute(select(s.DBS.c.NAME, s.TBLS.c.TBL_NAME, s.TABLE_PARAMS.c.PARAM_VALUE)
                        .join(s.TBLS, s.TBLS.c.TBL_ID == s.TABLE_PARAMS.c.TBL_ID)
                        .join(s.DBS, s.DBS.c.DB_ID == s.TBLS.c.DB_ID)
                        .where(s.DBS.c.CTLG_NAME == cat, s.DBS.c.NAME.in_(databases), s.TBLS.c.TBL_NAME.in_(tables),
                               s.TABLE_PARAMS.c.PARAM_KEY == "transactional"))
    return {(db.lower(), table.lower()) for db, table, value in rows if str(value).lower() == "true"}


def _statistics(conn: Connection, tbl_ids: Sequence[int]
                ) -> tuple[dict[int, Statistics], dict[int, dict[str, Statistics]]]:
    """Column statistics of the tables (by TBL_ID) and of their partitions (by TBL_ID, then partition name)."""
    table_stats: dict[int, Statistics] = defaultdict(dict)
    for r in conn.execute(select(s.TAB_COL_STATS).where(s.TAB_COL_STATS.c.TBL_ID.in_(tbl_ids))):
        table_stats[r.TBL_ID][r.COLUMN_NAME] = row_to_obj(r._mapping)
    partition_stats: dict[int, dict[str, Statistics]] = defaultdict(lambda: defaultdict(dict))
    for r in conn.execute(select(s.PART_COL_STATS, s.PARTITIONS.c.TBL_ID.label("OWNER_TBL_ID"))
                          .join(s.PARTITIONS, s.PARTITIONS.c.PART_ID == s.PART_COL_STATS.c.PART_ID)
                          .where(s.PARTITIONS.c.TBL_ID.in_(tbl_ids))):
        partition_stats[r.OWNER_TBL_ID][r.PARTITION_NAME][r.COLUMN_NAME] = row_to_obj(r._mapping)
    return table_stats, {tbl_id: dict(by_name) for tbl_id, by_name in partition_stats.items()}
