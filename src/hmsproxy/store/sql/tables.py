"""Tables in TBLS / TABLE_PARAMS / PARTITION_KEYS with their storage descriptor."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import cast

from sqlalchemy import Connection, delete, insert, select, update

from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.store.canonical import write_id
from hmsproxy.store.domain import DroppedTable, TableChange
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.descriptors import (
    delete_descriptors,
    insert_columns,
    insert_descriptors,
    load_descriptors,
    params_rows,
    remove_unused_columns,
)
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lookups import (
    TableRef,
    database_id,
    find_table,
    locked_table_ref,
    no_such_object,
    principal_type_name,
    principal_type_value,
)
from hmsproxy.store.sql.row_deletes import Deletions
from hmsproxy.store.sql.row_inserts import insert_at_commit


def current_columns(conn: Connection, cd_id: int | None) -> list[tuple[str, str, str | None]]:
    if cd_id is None:
        return []
    return [tuple(r) for r in conn.execute(
        select(s.COLUMNS_V2.c.COLUMN_NAME, s.COLUMNS_V2.c.TYPE_NAME, s.COLUMNS_V2.c.COMMENT)
        .where(s.COLUMNS_V2.c.CD_ID == cd_id).order_by(s.COLUMNS_V2.c.INTEGER_IDX))]


def column_tuples(cols: Sequence[hms.FieldSchema] | None) -> list[tuple[str | None, str | None, str | None]]:
    return [(c.name, c.type, c.comment) for c in cols or []]


# Deletes partitions (ids, their descriptors' ids) and then more rows: PartitionStore's, which TableStore uses
DeletePartitionRows = Callable[[Connection, Sequence[int], Sequence[int | None], Deletions], None]


class TableStore:
    db: Database
    layout: Layout
    _delete_partition_rows: DeletePartitionRows   # PartitionStore

    def create_table(self, table: hms.Table, journal: Journal | None = None) -> int:
        """Writes the table; returns its id. The caller has normalised names and filled defaults."""
        cat, db_name, tbl_name = present(table.catName), present(table.dbName), present(table.tableName)
        sd = present(table.sd)   # the handler refuses a table without one
        with self.db.transaction(write=True, journal=journal) as conn:
            db_id = database_id(conn, cat, db_name)
            if find_table(conn, cat, db_name, tbl_name) is not None:
                raise hms.AlreadyExistsException(message=f"Table {table.tableName} already exists")
            cd_id = insert_columns(self.db, conn, _columns(sd))
            [sd_id] = insert_descriptors(self.db, conn, [sd], [cd_id])
            tbl_id = self.db.allocate_ids(conn, "MTable", 1)
            conn.execute(insert(s.TBLS).values(self.layout.values(
                s.TBLS, {"TBL_ID": tbl_id, "DB_ID": db_id, "SD_ID": sd_id, **_table_columns(table)})))
            self._write_table_children(conn, tbl_id, table, journal)
            return tbl_id

    @staticmethod
    def _write_table_children(conn: Connection, tbl_id: int, table: hms.Table, journal: Journal | None) -> None:
        keys = [{"TBL_ID": tbl_id, "PKEY_NAME": k.name, "PKEY_TYPE": k.type, "PKEY_COMMENT": k.comment,
                 "INTEGER_IDX": i} for i, k in enumerate(table.partitionKeys or [])]
        insert_at_commit(conn, [(s.TABLE_PARAMS, params_rows("TBL_ID", tbl_id, table.parameters)),
                                (s.PARTITION_KEYS, keys)], journal)

    def get_table(self, cat: str, db_name: str, tbl_name: str) -> hms.Table:
        with self.db.transaction() as conn:
            tables = self._load_tables(conn, cat, db_name, [tbl_name])
        if not tables:
            raise no_such_object(f"{db_name}.{tbl_name} table not found")
        return tables[0]

    def get_table_objects(self, cat: str, db_name: str, tbl_names: Sequence[str]) -> list[hms.Table]:
        with self.db.transaction() as conn:
            database_id(conn, cat, db_name)
            tables: list[hms.Table] = []
            unique = sorted(set(tbl_names))
            for start in range(0, len(unique), 500):
                tables += self._load_tables(conn, cat, db_name, unique[start:start + 500])
        return tables

    def get_table_names(self, cat: str, db_name: str, table_type: str | None = None) -> list[str]:
        with self.db.transaction() as conn:
            db_id = database_id(conn, cat, db_name)
            query = select(s.TBLS.c.TBL_NAME).where(s.TBLS.c.DB_ID == db_id)
            if table_type is not None:
                query = query.where(s.TBLS.c.TBL_TYPE == table_type)
            return sorted(conn.execute(query).scalars())

    def get_table_meta(self, cat: str) -> list[tuple[str, str, str, str | None]]:
        """(db, table, table type, comment) of every table in a catalog, for get_table_meta."""
        with self.db.transaction() as conn:
            rows = conn.execute(
                select(s.DBS.c.NAME, s.TBLS.c.TBL_NAME, s.TBLS.c.TBL_TYPE, s.TABLE_PARAMS.c.PARAM_VALUE)
                .join(s.DBS, s.DBS.c.DB_ID == s.TBLS.c.DB_ID)
                .join(s.TABLE_PARAMS, (s.TABLE_PARAMS.c.TBL_ID == s.TBLS.c.TBL_ID)
                      & (s.TABLE_PARAMS.c.PARAM_KEY == "comment"), isouter=True)
                .where(s.DBS.c.CTLG_NAME == cat)
            ).all()
        return sorted((r[0], r[1], r[2], r[3]) for r in rows)

    def _load_tables(self, conn: Connection, cat: str, db_name: str, names: Sequence[str]) -> list[hms.Table]:
        rows = conn.execute(
            select(s.TBLS, s.DBS.c.NAME.label("DB_NAME"))
            .join(s.DBS, s.DBS.c.DB_ID == s.TBLS.c.DB_ID)
            .where(s.DBS.c.NAME == db_name, s.DBS.c.CTLG_NAME == cat, s.TBLS.c.TBL_NAME.in_(names))
        ).all()
        if not rows:
            return []
        ids = [r.TBL_ID for r in rows]
        params: dict[int, dict[str, str]] = defaultdict(dict)
        for tbl_id, key, value in conn.execute(select(s.TABLE_PARAMS.c.TBL_ID, s.TABLE_PARAMS.c.PARAM_KEY,
                                                      s.TABLE_PARAMS.c.PARAM_VALUE).where(s.TABLE_PARAMS.c.TBL_ID.in_(ids))):
            params[tbl_id][key] = value if value is not None else ""
        keys: dict[int, list[hms.FieldSchema]] = defaultdict(list)
        for tbl_id, name, type_name, comment in conn.execute(
            select(s.PARTITION_KEYS.c.TBL_ID, s.PARTITION_KEYS.c.PKEY_NAME, s.PARTITION_KEYS.c.PKEY_TYPE,
                   s.PARTITION_KEYS.c.PKEY_COMMENT).where(s.PARTITION_KEYS.c.TBL_ID.in_(ids))
            .order_by(s.PARTITION_KEYS.c.TBL_ID, s.PARTITION_KEYS.c.INTEGER_IDX)
        ):
            keys[tbl_id].append(hms.FieldSchema(name=name, type=type_name, comment=comment))
        sds = load_descriptors(conn, select(s.TBLS.c.SD_ID).where(s.TBLS.c.TBL_ID.in_(ids)))
        tables = []
        for r in sorted(rows, key=lambda row: row.TBL_NAME):
            tables.append(hms.Table(
                tableName=r.TBL_NAME, dbName=r.DB_NAME, owner=r.OWNER, createTime=r.CREATE_TIME,
                lastAccessTime=r.LAST_ACCESS_TIME, retention=r.RETENTION, sd=sds.get(r.SD_ID),
                partitionKeys=keys.get(r.TBL_ID, []), parameters=params.get(r.TBL_ID, {}),
                viewOriginalText=r.VIEW_ORIGINAL_TEXT, viewExpandedText=r.VIEW_EXPANDED_TEXT,
                tableType=r.TBL_TYPE, temporary=False, rewriteEnabled=bool(r.IS_REWRITE_ENABLED),
                catName=cat, ownerType=principal_type_value(r.OWNER_TYPE), writeId=r.WRITE_ID or 0, id=r.TBL_ID,
            ))
        return tables

    def alter_table(self, cat: str, db_name: str, tbl_name: str, new_table: hms.Table,
                    partition_location_moves: tuple[str, str] | None = None, cascade: bool = False,
                    expected_parameter: tuple[str, str] | None = None, journal: Journal | None = None) -> None:
        """Replaces the table's definition in place (same id). On rename, partition locations under the old
        table location move to the new one; with cascade, partitions take the table's new columns.

        With `expected_parameter` (key, value) it is a compare-and-set (Hive 4, HIVE-26882; what Iceberg
        commits without locks rely on): the stored value of that table parameter must still be the
        expected one, decided here under the table's row lock, else nothing changes."""
        with self.db.transaction(write=True, journal=journal) as conn:
            self._alter_table_in(conn, cat, db_name, tbl_name, new_table, partition_location_moves, cascade,
                                 expected_parameter, journal)

    def alter_tables(self, cat: str, changes: Sequence[TableChange], journal: Journal | None = None) -> None:
        """Several tables' alters in one transaction, all or none (the Iceberg REST catalog's multi-table
        commit); the tables are locked in name order, so two such calls cannot deadlock on each other."""
        with self.db.transaction(write=True, journal=journal) as conn:
            for change in sorted(changes, key=lambda c: (c.db_name, c.tbl_name)):
                self._alter_table_in(conn, cat, change.db_name, change.tbl_name, change.new_table, None, False,
                                     change.expected_parameter, journal)

    def _alter_table_in(self, conn: Connection, cat: str, db_name: str, tbl_name: str, new_table: hms.Table,
                        partition_location_moves: tuple[str, str] | None, cascade: bool,
                        expected_parameter: tuple[str, str] | None, journal: Journal | None) -> None:
        ref = locked_table_ref(conn, cat, db_name, tbl_name)
        if expected_parameter is not None:
            _check_expected_parameter(conn, ref.tbl_id, *expected_parameter)
        new_db, new_name = present(new_table.dbName), present(new_table.tableName)   # normalised by the handler
        sd = present(new_table.sd)   # the handler refuses a table without one
        renamed = (new_db, new_name) != (db_name, tbl_name)
        new_db_id = ref.db_id
        if renamed:
            try:
                new_db_id = database_id(conn, cat, new_db)
            except hms.NoSuchObjectException:
                raise hms.InvalidOperationException(
                    message=f"Unable to change partition or table. Database {new_table.dbName} "
                            "does not exist") from None
            if find_table(conn, cat, new_db, new_name) is not None:
                raise hms.InvalidOperationException(
                    message=f"new table {new_table.dbName}.{new_table.tableName} already exists")
        old_columns = current_columns(conn, ref.cd_id)
        new_columns = column_tuples(sd.cols)
        cd_id = ref.cd_id if new_columns == old_columns and ref.cd_id is not None else \
            insert_columns(self.db, conn, _columns(sd))
        [sd_id] = insert_descriptors(self.db, conn, [sd], [cd_id])
        conn.execute(update(s.TBLS).where(s.TBLS.c.TBL_ID == ref.tbl_id).values(self.layout.values(
            s.TBLS, {"DB_ID": new_db_id, "SD_ID": sd_id, **_table_columns(new_table)})))
        delete_descriptors(conn, [ref.sd_id], first=[(s.TABLE_PARAMS.c.TBL_ID, [ref.tbl_id]),
                                                     (s.PARTITION_KEYS.c.TBL_ID, [ref.tbl_id])],
                           in_use=[cd_id])
        self._write_table_children(conn, ref.tbl_id, new_table, journal)
        if cascade and cd_id != ref.cd_id:
            self._cascade_columns(conn, ref, cd_id)
        dropped_columns = {c[0] for c in old_columns} - {c[0] for c in new_columns}
        self._after_table_change(conn, ref, new_table, renamed, dropped_columns)
        if renamed and partition_location_moves is not None:
            self._move_partition_locations(conn, ref.tbl_id, *partition_location_moves)
        if renamed:
            _move_write_ids(conn, self.layout, (db_name, tbl_name), (new_db, new_name))

    @staticmethod
    def _cascade_columns(conn: Connection, ref: TableRef, cd_id: int) -> None:
        part_sds = select(s.PARTITIONS.c.SD_ID).where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)
        old_cds = set(conn.execute(select(s.SDS.c.CD_ID).where(s.SDS.c.SD_ID.in_(part_sds)).distinct()).scalars())
        conn.execute(update(s.SDS).where(s.SDS.c.SD_ID.in_(part_sds)).values(CD_ID=cd_id))
        remove_unused_columns(conn, old_cds)

    @staticmethod
    def _after_table_change(conn: Connection, ref: TableRef, new_table: hms.Table, renamed: bool,
                            dropped_columns: set[str]) -> None:
        """Keeps statistics rows in step: renamed table names (only on a rename: every partition's rows otherwise),
        and no stats for dropped columns."""
        if renamed:
            names = {"DB_NAME": new_table.dbName, "TABLE_NAME": new_table.tableName}
            conn.execute(update(s.TAB_COL_STATS).where(s.TAB_COL_STATS.c.TBL_ID == ref.tbl_id).values(**names))
            part_ids = select(s.PARTITIONS.c.PART_ID).where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)
            conn.execute(update(s.PART_COL_STATS).where(s.PART_COL_STATS.c.PART_ID.in_(part_ids)).values(**names))
        if dropped_columns:
            conn.execute(delete(s.TAB_COL_STATS).where(s.TAB_COL_STATS.c.TBL_ID == ref.tbl_id,
                                                       s.TAB_COL_STATS.c.COLUMN_NAME.in_(dropped_columns)))

    @staticmethod
    def _move_partition_locations(conn: Connection, tbl_id: int, old_prefix: str, new_prefix: str) -> None:
        rows = conn.execute(
            select(s.SDS.c.SD_ID, s.SDS.c.LOCATION).join(s.PARTITIONS, s.PARTITIONS.c.SD_ID == s.SDS.c.SD_ID)
            .where(s.PARTITIONS.c.TBL_ID == tbl_id)
        ).all()
        old = old_prefix.rstrip("/")
        changes = [
            {"sd": sd_id, "loc": new_prefix.rstrip("/") + location[len(old):]}
            for sd_id, location in rows
            if location and (location == old or location.startswith(old + "/"))
        ]
        for change in changes:
            conn.execute(update(s.SDS).where(s.SDS.c.SD_ID == change["sd"]).values(LOCATION=change["loc"]))

    def drop_table(self, cat: str, db_name: str, tbl_name: str, journal: Journal | None = None) -> DroppedTable:
        with self.db.transaction(write=True, journal=journal) as conn:
            return self._drop_table_in(conn, cat, db_name, tbl_name)

    def _drop_table_in(self, conn: Connection, cat: str, db_name: str, tbl_name: str) -> DroppedTable:
        """Locks the table's row first: an add of partitions under way commits before the drop reads them, and
        none starts until the drop commits (PartitionStore.add_partitions), so none is left behind."""
        try:
            ref = locked_table_ref(conn, cat, db_name, tbl_name)
        except hms.NoSuchObjectException:
            raise no_such_object(f"{db_name}.{tbl_name} table not found") from None
        tables = self._load_tables(conn, cat, db_name, [tbl_name])
        partition_rows = conn.execute(
            select(s.PARTITIONS.c.PART_ID, s.PARTITIONS.c.SD_ID, s.SDS.c.LOCATION)
            .join(s.SDS, s.SDS.c.SD_ID == s.PARTITIONS.c.SD_ID, isouter=True)
            .where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)
        ).all()
        self._delete_partition_rows(
            conn, [r.PART_ID for r in partition_rows], [*(r.SD_ID for r in partition_rows), ref.sd_id],
            [(column, [ref.tbl_id]) for column in (s.TAB_COL_STATS.c.TBL_ID, s.TABLE_PARAMS.c.TBL_ID,
                                                    s.PARTITION_KEYS.c.TBL_ID, s.TBLS.c.TBL_ID)])
        _move_write_ids(conn, self.layout, (db_name, tbl_name), None)
        return DroppedTable(tables[0], [r.LOCATION for r in partition_rows if r.LOCATION])


def _check_expected_parameter(conn: Connection, tbl_id: int, key: str, expected: str) -> None:
    stored = conn.execute(select(s.TABLE_PARAMS.c.PARAM_VALUE).where(
        s.TABLE_PARAMS.c.TBL_ID == tbl_id, s.TABLE_PARAMS.c.PARAM_KEY == key)).scalar()
    if stored != expected:  # Hive's text: Iceberg matches its prefix to retry the commit
        raise hms.MetaException(message=f"The table has been modified. The parameter value for key '{key}' is "
                                        f"'{stored}'. The expected was value was '{expected}'")


def _move_write_ids(conn: Connection, layout: Layout, old: tuple[str, str], new: tuple[str, str] | None) -> None:
    """Write ids belong to a table name: they follow a rename and go with a drop, as in Hive."""
    if not layout.write_ids:
        return
    for table, db_col, table_col in ((s.NEXT_WRITE_ID, "NWI_DATABASE", "NWI_TABLE"),
                                     (s.TXN_TO_WRITE_ID, "T2W_DATABASE", "T2W_TABLE")):
        where = (table.c[db_col] == old[0]) & (table.c[table_col] == old[1])
        if new is None:
            conn.execute(delete(table).where(where))
        else:
            conn.execute(update(table).where(where).values({db_col: new[0], table_col: new[1]}))


def _columns(sd: hms.StorageDescriptor) -> Sequence[hms.FieldSchema]:
    """The descriptor's columns, which the handler fills (None would fail in insert_columns, as it always has)."""
    return cast(Sequence[hms.FieldSchema], sd.cols)


def _table_columns(table: hms.Table) -> dict[str, object]:
    return {
        "TBL_NAME": table.tableName, "OWNER": table.owner, "OWNER_TYPE": principal_type_name(table.ownerType),
        "CREATE_TIME": table.createTime or 0, "LAST_ACCESS_TIME": table.lastAccessTime or 0,
        "RETENTION": table.retention or 0, "TBL_TYPE": table.tableType,
        "VIEW_ORIGINAL_TEXT": table.viewOriginalText, "VIEW_EXPANDED_TEXT": table.viewExpandedText,
        "IS_REWRITE_ENABLED": bool(table.rewriteEnabled), "WRITE_ID": write_id(table.writeId),
    }
