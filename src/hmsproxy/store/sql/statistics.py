"""Table and partition column statistics in TAB_COL_STATS / PART_COL_STATS.

Updating statistics also marks the columns accurate in the owner's COLUMN_STATS_ACCURATE parameter, in
the same transaction, as Hive's ObjectStore does.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, ColumnElement, Connection, Table, delete, insert, select, update

from hmsproxy.events.journal import Journal
from hmsproxy.hive.names import make_partition_name
from hmsproxy.hive.stats_accurate import ACCURATE, mark_columns_accurate
from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lookups import TableRef, no_such_object, table_ref
from hmsproxy.store.sql.stats_codec import obj_to_row, row_to_obj
from hmsproxy.store.sql.tables import current_columns


def _set_param(conn: Connection, table: Table, owner_col: Column[int], owner_id: int, key: str, value: str) -> None:
    where = (owner_col == owner_id) & (table.c.PARAM_KEY == key)
    if conn.execute(select(table.c.PARAM_KEY).where(where)).first() is None:
        conn.execute(insert(table).values({owner_col.name: owner_id, "PARAM_KEY": key, "PARAM_VALUE": value}))
    else:
        conn.execute(update(table).where(where).values(PARAM_VALUE=value))


def _get_param(conn: Connection, table: Table, owner_col: Column[int], owner_id: int, key: str) -> str | None:
    return conn.execute(select(table.c.PARAM_VALUE).where(owner_col == owner_id, table.c.PARAM_KEY == key)).scalar()


class StatisticsStore:
    db: Database
    layout: Layout

    def update_table_column_statistics(self, cat: str, stats: hms.ColumnStatistics,
                                       journal: Journal | None = None) -> None:
        desc = stats.statsDesc
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = table_ref(conn, cat, desc.dbName, desc.tableName, share_lock=True)   # see _write
            known = {c[0]: c[1] for c in current_columns(conn, ref.cd_id)}
            rows = self._rows(stats, known, f"table {desc.dbName}.{desc.tableName}")
            self._write(conn, s.TAB_COL_STATS, s.TABLE_PARAMS, "TBL_ID", ref.tbl_id, "MTableColumnStatistics", rows,
                        {"CAT_NAME": cat, "DB_NAME": desc.dbName, "TABLE_NAME": desc.tableName})

    def update_partition_column_statistics(self, cat: str, stats: hms.ColumnStatistics, values: Sequence[str],
                                           journal: Journal | None = None) -> None:
        desc = stats.statsDesc
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = table_ref(conn, cat, desc.dbName, desc.tableName, share_lock=True)   # see _write
            part_name = make_partition_name(ref.partition_keys, values)
            part = conn.execute(select(s.PARTITIONS.c.PART_ID, s.SDS.c.CD_ID)
                                .join(s.SDS, s.SDS.c.SD_ID == s.PARTITIONS.c.SD_ID, isouter=True)
                                .where(s.PARTITIONS.c.TBL_ID == ref.tbl_id,
                                       s.PARTITIONS.c.PART_NAME == part_name)).first()
            if part is None:
                raise no_such_object(f"partition {part_name} of {desc.dbName}.{desc.tableName} not found")
            known = {c[0]: c[1] for c in current_columns(conn, part.CD_ID)}
            rows = self._rows(stats, known, f"partition {part_name} of {desc.dbName}.{desc.tableName}")
            self._write(conn, s.PART_COL_STATS, s.PARTITION_PARAMS, "PART_ID", part.PART_ID,
                        "MPartitionColumnStatistics", rows,
                        {"CAT_NAME": cat, "DB_NAME": desc.dbName, "TABLE_NAME": desc.tableName,
                         "PARTITION_NAME": part_name})

    def _write(self, conn: Connection, stats_table: Table, params_table: Table, owner: str, owner_id: int, model: str,
               rows: list[dict[str, Any]], fixed: dict[str, object]) -> None:
        """Replaces the given columns' statistics rows of one table or partition and marks them accurate. The caller
        holds the table's row (a locking read): a drop of the table or of partitions, which locks that row first,
        runs wholly before or after, so no row written here outlives its owner."""
        names = [r["COLUMN_NAME"] for r in rows]
        conn.execute(delete(stats_table).where(stats_table.c[owner] == owner_id, stats_table.c.COLUMN_NAME.in_(names)))
        first = self.db.allocate_ids(conn, model, len(rows))
        value_columns = sorted(set().union(*rows))  # columns of different types fill different value columns
        conn.execute(insert(stats_table), [self.layout.values(stats_table, {
            **dict.fromkeys(value_columns), **r, **fixed, owner: owner_id, "CS_ID": first + i})
            for i, r in enumerate(rows)])
        owner_col = params_table.c[owner]
        current = _get_param(conn, params_table, owner_col, owner_id, ACCURATE)
        _set_param(conn, params_table, owner_col, owner_id, ACCURATE, mark_columns_accurate(current, names))

    @staticmethod
    def _rows(stats: hms.ColumnStatistics, known_columns: dict[str, str], owner: str) -> list[dict[str, Any]]:
        last_analyzed = int(time.time())  # the time of writing, whatever the client says (as HMS 2.3 does)
        rows = []
        for obj in stats.statsObj or []:
            name = (obj.colName or "").lower()
            if name not in known_columns:
                raise hms.MetaException(message=f"Column {obj.colName} doesn't exist in {owner}")
            try:
                values = obj_to_row(obj)
            except ValueError as exc:
                raise hms.InvalidInputException(message=str(exc)) from None
            rows.append({**values, "COLUMN_NAME": name, "COLUMN_TYPE": obj.colType, "LAST_ANALYZED": last_analyzed,
                         "ENGINE": stats.engine or "hive"})
        if not rows:
            raise hms.InvalidInputException(message=f"no column statistics given for {owner}")
        return rows

    def get_table_column_statistics(self, cat: str, db_name: str, tbl_name: str,
                                    col_names: Sequence[str]) -> list[hms.ColumnStatisticsObj]:
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            rows = conn.execute(select(s.TAB_COL_STATS).where(
                s.TAB_COL_STATS.c.TBL_ID == ref.tbl_id, s.TAB_COL_STATS.c.COLUMN_NAME.in_(list(col_names)))).all()
        by_name = {r.COLUMN_NAME: row_to_obj(r._mapping) for r in rows}
        return [by_name[c] for c in col_names if c in by_name]

    def get_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_names: Sequence[str],
                                        col_names: Sequence[str]) -> dict[str, list[hms.ColumnStatisticsObj]]:
        """Per partition name, the statistics of the asked columns that exist (in the asked column order)."""
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            result: dict[str, dict[str, hms.ColumnStatisticsObj]] = defaultdict(dict)
            names = list(dict.fromkeys(part_names))
            for start in range(0, len(names), 900):
                for r in conn.execute(select(s.PART_COL_STATS).join(
                        s.PARTITIONS, s.PARTITIONS.c.PART_ID == s.PART_COL_STATS.c.PART_ID).where(
                        s.PARTITIONS.c.TBL_ID == ref.tbl_id,
                        s.PART_COL_STATS.c.PARTITION_NAME.in_(names[start:start + 900]),
                        s.PART_COL_STATS.c.COLUMN_NAME.in_(list(col_names)))):
                    result[r.PARTITION_NAME][r.COLUMN_NAME] = row_to_obj(r._mapping)
        return {p: [cols[c] for c in col_names if c in cols] for p, cols in result.items()}

    def statistics_analyzed_at(self, cat: str, db_name: str, tbl_name: str, part_name: str | None,
                               col_name: str) -> int | None:
        """When a column's statistics were written (ColumnStatisticsDesc.lastAnalyzed); None if it has none."""
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            if part_name is None:
                where = (s.TAB_COL_STATS.c.TBL_ID == ref.tbl_id) & (s.TAB_COL_STATS.c.COLUMN_NAME == col_name)
                return conn.execute(select(s.TAB_COL_STATS.c.LAST_ANALYZED).where(where)).scalar()
            stats = s.PART_COL_STATS
            return conn.execute(select(stats.c.LAST_ANALYZED).where(
                stats.c.PART_ID == self._part_id(conn, ref, part_name), stats.c.COLUMN_NAME == col_name)).scalar()

    def delete_table_column_statistics(self, cat: str, db_name: str, tbl_name: str, col_name: str | None,
                                       journal: Journal | None = None) -> None:
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            self._delete(conn, s.TAB_COL_STATS, s.TAB_COL_STATS.c.TBL_ID == ref.tbl_id, col_name,
                         f"table {db_name}.{tbl_name}")

    def delete_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_name: str,
                                           col_name: str | None, journal: Journal | None = None) -> None:
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            part_id = self._part_id(conn, ref, part_name)
            self._delete(conn, s.PART_COL_STATS, s.PART_COL_STATS.c.PART_ID == part_id, col_name,
                         f"partition {part_name} of {db_name}.{tbl_name}")

    @staticmethod
    def _part_id(conn: Connection, ref: TableRef, part_name: str) -> int:
        part_id: int | None = conn.execute(select(s.PARTITIONS.c.PART_ID).where(
            s.PARTITIONS.c.TBL_ID == ref.tbl_id, s.PARTITIONS.c.PART_NAME == part_name)).scalar()
        if part_id is None:
            raise no_such_object(f"partition {part_name} not found")
        return part_id

    @staticmethod
    def _delete(conn: Connection, table: Table, owner_clause: ColumnElement[bool], col_name: str | None,
                owner: str) -> None:
        clause = owner_clause if col_name is None else owner_clause & (table.c.COLUMN_NAME == col_name)
        deleted = conn.execute(delete(table).where(clause)).rowcount
        if col_name is not None and not deleted:
            raise no_such_object(f"no column statistics for column {col_name} of {owner}")
