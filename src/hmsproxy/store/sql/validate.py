"""`hmsproxy schema validate`: can hmsproxy serve this database as it is, and would the ids it hands out be new?

What it checks, each difference as one readable line:
- VERSION holds the version hmsproxy serves;
- every table and column hmsproxy reads or writes is there, with a type of the same kind (text, integer,
  number, yes/no, binary, time): the exact width may differ, as it does between Hive's scripts and ours
  (tests/store/test_schema_layout.py lists those);
- transaction ids have a source: NEXT_TXN_ID (hmsproxy, Hive 2.3/3.1) or Hive 4's TXN_LOCK_TBL;
- no id counter is behind the ids in use (SEQUENCE_TABLE per JDO model, NOTIFICATION_SEQUENCE, NEXT_LOCK_ID):
  a counter behind would hand out an id twice.
Hive's own tables that hmsproxy does not use are not checked.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Engine, func, inspect, select
from sqlalchemy import types as t
from sqlalchemy.dialects import mysql

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.sequences import ID_COLUMNS, MODEL_PREFIX, sequences_behind

_KINDS: list[tuple[type, str]] = [  # most specific first: Boolean is not an Integer in SQLAlchemy, BIT is its own
    (t.Boolean, "yes/no"), (t.Integer, "integer"), (t.Float, "number"), (t.Numeric, "number"),
    (t.String, "text"), (t.LargeBinary, "binary"), (t.DateTime, "time"), (t.TIMESTAMP, "time"),
]
_COUNTERS = [  # (counter column, the ids it hands out)
    (s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID, s.NOTIFICATION_LOG.c.EVENT_ID),
    (s.NEXT_LOCK_ID.c.NL_NEXT, s.HIVE_LOCKS.c.HL_LOCK_EXT_ID),
]


def schema_differences(engine: Engine) -> list[str]:
    """What keeps hmsproxy from serving the database as it is; empty when nothing does."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    if "VERSION" not in present:
        return ["no VERSION table: not a metastore schema (`hmsproxy schema init` creates one)"]
    differences = _version(engine)
    hive_4_ids = "TXN_LOCK_TBL" in present and "NEXT_TXN_ID" not in present
    if "NEXT_TXN_ID" not in present and "TXN_LOCK_TBL" not in present:
        differences.append("no source of transaction ids: neither NEXT_TXN_ID nor Hive 4's TXN_LOCK_TBL")
    for table in s.metadata.sorted_tables:
        if table.name not in present:
            differences.append(f"table {table.name} is missing")
            continue
        columns = {column["name"]: column["type"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            differences += _column_difference(engine, table.name, column, columns)
    if not differences:  # the counters can be read only where the tables are whole
        differences += _counters_behind(engine, hive_4_ids)
    return differences


def _version(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        versions = list(conn.execute(select(s.VERSION.c.SCHEMA_VERSION)).scalars())
    if versions != [s.SCHEMA_VERSION]:
        return [f"VERSION holds {versions or 'no row'}; hmsproxy serves schema {s.SCHEMA_VERSION}"]
    return []


def _column_difference(engine: Engine, table: str, column: Column[Any], present: dict[str, Any]) -> list[str]:
    if column.name not in present:
        return [f"column {table}.{column.name} is missing"]
    declared = column.type
    expected = _kind(declared.load_dialect_impl(engine.dialect) if isinstance(declared, t.TypeDecorator)
                     else declared.dialect_impl(engine.dialect))
    found = _kind(present[column.name])
    if expected != found:
        return [f"column {table}.{column.name} is {present[column.name]} ({found}); hmsproxy needs {expected}"]
    return []


def _kind(column_type: Any) -> str:
    if isinstance(column_type, mysql.BIT) or (isinstance(column_type, mysql.TINYINT)
                                              and getattr(column_type, "display_width", None) == 1):
        return "yes/no"  # MySQL's bit(1), Hive's declaration of most flags, and tinyint(1), MySQL's BOOLEAN
    for sql_type, kind in _KINDS:
        if isinstance(column_type, sql_type):
            return kind
    return type(column_type).__name__.lower()


def _counters_behind(engine: Engine, hive_4_ids: bool) -> list[str]:
    behind = []
    counters = _COUNTERS if hive_4_ids else [*_COUNTERS, (s.NEXT_TXN_ID.c.NTXN_NEXT, s.TXNS.c.TXN_ID)]
    with engine.connect() as conn:
        for model, next_val, highest in sequences_behind(conn):
            ids = ID_COLUMNS[model]
            behind.append(f"SEQUENCE_TABLE {MODEL_PREFIX + model} is at {next_val}, but "
                          f"{ids.table.name}.{ids.name} {highest} is in use")
        for counter, ids in counters:
            next_value = conn.execute(select(counter)).scalar()
            highest = conn.execute(select(func.max(ids))).scalar()
            if next_value is None:
                behind.append(f"{counter.table.name} has no row")
            elif highest is not None and next_value <= highest:
                behind.append(f"{counter.table.name}.{counter.name} is at {next_value}, but "
                              f"{ids.table.name}.{ids.name} {highest} is in use")
    return behind
