"""Finding rows by name (database, table) and the errors HMS raises when they are missing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, bindparam, select

from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.json_rows import json_rows, ordered


@dataclass(frozen=True)
class TableRef:
    """The ids and shape of a table that writes to its partitions and statistics need."""

    tbl_id: int
    db_id: int
    sd_id: int | None
    cd_id: int | None
    location: str | None
    table_type: str | None
    partition_keys: tuple[str, ...]
    partition_key_types: tuple[str, ...]
    columns: list[tuple[str, str, str | None]] | None = None   # (name, type, comment) of its SD; read on request


def no_such_object(message: str) -> Exception:
    return hms.NoSuchObjectException(message=message)


def missing_database_message(cat: str, name: str) -> str:
    """Hive 4's text, which names the catalog (ObjectStore.getDatabase since catalogs came, HIVE-18755);
    Hive 2.3's is the bare name. No client reads it: Spark's 2.3 client turns the exception into its own."""
    return f"database {cat}.{name}"


def database_id(conn: Connection, cat: str, name: str) -> int:
    db_id: int | None = conn.execute(
        select(s.DBS.c.DB_ID).where(s.DBS.c.NAME == name, s.DBS.c.CTLG_NAME == cat)
    ).scalar_one_or_none()
    if db_id is None:
        raise no_such_object(missing_database_message(cat, name))
    return db_id


def _table_query(with_columns: bool) -> Select[Any]:
    """The table's ids and partition keys (aggregated), and its columns `with_columns`; by name, bound at call."""
    keys, cols = s.PARTITION_KEYS.c, s.COLUMNS_V2.c
    key_rows = select(json_rows(keys.INTEGER_IDX, keys.PKEY_NAME, keys.PKEY_TYPE)).where(
        keys.TBL_ID == s.TBLS.c.TBL_ID).scalar_subquery()
    column_rows = select(json_rows(cols.INTEGER_IDX, cols.COLUMN_NAME, cols.TYPE_NAME, cols.COMMENT)).where(
        cols.CD_ID == s.SDS.c.CD_ID).scalar_subquery()
    return (
        select(s.TBLS.c.TBL_ID, s.TBLS.c.DB_ID, s.TBLS.c.SD_ID, s.TBLS.c.TBL_TYPE, s.SDS.c.CD_ID, s.SDS.c.LOCATION,
               key_rows.label("PARTITION_KEYS"), *([column_rows.label("COLUMNS")] if with_columns else []))
        .join(s.DBS, s.DBS.c.DB_ID == s.TBLS.c.DB_ID)
        .join(s.SDS, s.SDS.c.SD_ID == s.TBLS.c.SD_ID, isouter=True)
        .where(s.DBS.c.NAME == bindparam("db_name"), s.DBS.c.CTLG_NAME == bindparam("cat"),
               s.TBLS.c.TBL_NAME == bindparam("tbl_name"))
    )


# Built once: every table-scoped call runs one, and building it (with its cache key) took ~0.1 ms a call.
_TABLE_QUERIES = {(with_columns, locked): _table_query(with_columns).with_for_update(read=True, of=s.TBLS)
                  if locked else _table_query(with_columns)
                  for with_columns in (False, True) for locked in (False, True)}


def find_table(conn: Connection, cat: str, db_name: str, tbl_name: str, with_columns: bool = False,
               share_lock: bool = False) -> TableRef | None:
    """The table's ids and partition keys in one query (every table-scoped call starts here), and its columns in
    the same query `with_columns` (adding partitions compares theirs with them); `share_lock`: a locking read of
    the table's row (MySQL/MariaDB lock every row the query reads)."""
    query = _TABLE_QUERIES[with_columns, share_lock]
    row = conn.execute(query, {"db_name": db_name, "cat": cat, "tbl_name": tbl_name}).first()
    if row is None:
        return None
    partition_keys = ordered(row.PARTITION_KEYS)
    return TableRef(
        tbl_id=row.TBL_ID, db_id=row.DB_ID, sd_id=row.SD_ID, cd_id=row.CD_ID, location=row.LOCATION,
        table_type=row.TBL_TYPE, partition_keys=tuple(k for k, _ in partition_keys),
        partition_key_types=tuple(t for _, t in partition_keys),
        columns=[(name, type_name, comment) for name, type_name, comment in ordered(row.COLUMNS)]
        if with_columns else None,
    )


def table_ref(conn: Connection, cat: str, db_name: str, tbl_name: str, with_columns: bool = False,
              share_lock: bool = False) -> TableRef:
    """`share_lock`: the table's row stays as read until the transaction ends (a drop or alter of it waits)."""
    ref = find_table(conn, cat, db_name, tbl_name, with_columns, share_lock)
    if ref is None:
        raise no_such_object(f"table {db_name}.{tbl_name} does not exist")
    return ref


def locked_table_ref(conn: Connection, cat: str, db_name: str, tbl_name: str) -> TableRef:
    """The table, its TBLS row locked until the transaction ends: concurrent changes of one table run one
    after the other, each seeing the one before (READ COMMITTED), so a compare-and-set decides right."""
    first = table_ref(conn, cat, db_name, tbl_name)
    locked = conn.execute(select(s.TBLS.c.TBL_ID).where(s.TBLS.c.TBL_ID == first.tbl_id).with_for_update()).scalar()
    if locked is None:
        raise no_such_object(f"table {db_name}.{tbl_name} does not exist")
    return table_ref(conn, cat, db_name, tbl_name)  # again: what the previous holder committed


def principal_type_name(value: int | None) -> str | None:
    """PrincipalType enum value -> the name Hive stores in OWNER_TYPE columns."""
    return None if value is None else hms.PrincipalType._VALUES_TO_NAMES.get(value)


def principal_type_value(name: str | None) -> int | None:
    return None if name is None else hms.PrincipalType._NAMES_TO_VALUES.get(name)
