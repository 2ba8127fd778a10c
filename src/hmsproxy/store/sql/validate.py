"""`hmsproxy schema validate`: can hmsproxy serve this database as it is, and would the ids it hands out be new?

What it checks, each difference as one readable line:
- VERSION holds a version hmsproxy serves in place: Hive 4.0.0's, or 3.1.0's or 2.3.0's, each held to Hive
  4.0.0's layout less what Hive's script of that version lacks of it (hive_versions.py);
- every table and column hmsproxy reads or writes is there, with a type of the same kind (text, integer,
  number, yes/no, binary, time): the exact width may differ, as it does between Hive's scripts and ours
  (tests/store/test_schema_layout.py lists those);
- every key of Hive 4.0.0's layout that hmsproxy declares is there: a unique key (or primary key) over the same
  columns, and for a plain index one that starts with the same column; hmsproxy's own extra indexes (OWN_KEYS)
  are only noted, as a database without them is served, slower;
- transaction ids have a source: NEXT_TXN_ID (hmsproxy, Hive 2.3/3.1) or Hive 4's TXN_LOCK_TBL;
- no id counter is behind the ids in use (SEQUENCE_TABLE per JDO model, NOTIFICATION_SEQUENCE, NEXT_LOCK_ID):
  a counter behind would hand out an id twice.
Hive's own tables that hmsproxy does not use are not checked.
"""
from __future__ import annotations

import itertools
from typing import Any, NamedTuple

from sqlalchemy import Column, Dialect, Engine, Table, UniqueConstraint, func, inspect, select, text
from sqlalchemy import types as t
from sqlalchemy.dialects import mysql
from sqlalchemy.types import TypeEngine

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.hive_only_tables import HIVE_SCHEMA
from hmsproxy.store.sql.hive_versions import LACKS, NOTHING_LACKING, SERVED_VERSIONS
from hmsproxy.store.sql.layout import Layout, install
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
    return schema_report(engine)[0]


def schema_report(engine: Engine) -> tuple[list[str], list[str]]:
    """(what keeps hmsproxy from serving the database as it is, hmsproxy's own indexes (OWN_KEYS) it lacks: served
    without them, slower)."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    if "VERSION" not in present:
        return ["no VERSION table: not a metastore schema (`hmsproxy schema init` creates one)"], []
    layout = Layout.read(engine)
    install(engine, layout)  # Hive 2.3/3.1's transaction tables on PostgreSQL: lower case (layout.py)
    present |= layout.folded
    with engine.connect() as conn:
        versions = list(conn.execute(select(s.VERSION.c.SCHEMA_VERSION)).scalars())
    lacks = LACKS.get(versions[0]) if len(versions) == 1 else None
    differences: list[str] = [] if lacks else [
        f"VERSION holds {versions or 'no row'}; hmsproxy serves schema {SERVED_VERSIONS}"]
    lacks = lacks or NOTHING_LACKING
    own_missing: list[str] = []
    keys = present_keys(engine)
    hive_4_ids = "TXN_LOCK_TBL" in present and "NEXT_TXN_ID" not in present
    if "NEXT_TXN_ID" not in present and "TXN_LOCK_TBL" not in present:
        differences.append("no source of transaction ids: neither NEXT_TXN_ID nor Hive 4's TXN_LOCK_TBL")
    for table in HIVE_SCHEMA.sorted_tables:
        if table.name not in present:
            differences += [] if table.name in lacks.tables else [f"table {table.name} is missing"]
            continue
        folded = table.name in layout.folded
        stored = table.name.lower() if folded else table.name
        columns = {column["name"].upper() if folded else column["name"]: column["type"]
                   for column in inspector.get_columns(stored)}
        for column in table.columns:
            if column.name in columns or not lacks.column(table.name, column.name):
                differences += _column_difference(engine, table.name, column, columns)
        table_keys = [key._replace(columns=tuple(None if c is None else c.upper() for c in key.columns)) if folded
                      else key for key in keys.get(stored, [])]
        for line, own in missing_keys(table_keys, table, engine.dialect.name, lacks.keys):
            (own_missing if own else differences).append(line)
    if not differences:  # the counters can be read only where the tables are whole
        differences += _counters_behind(engine, hive_4_ids, lacks.rows)
    return differences, own_missing


def own_keys_missing_on_mysql(engine: Engine) -> list[str]:
    """hmsproxy's own indexes a MySQL/MariaDB database lacks (one line each; none elsewhere): `serve` warns of them
    at start, as one of them (PARTITIONS_TBL_NAME_IDX) decides whether a table's partitions are read alone."""
    if engine.dialect.name != "mysql":
        return []
    keys = present_keys(engine)
    owning = {table for table, _ in s.OWN_KEYS}
    return [line for table in HIVE_SCHEMA.sorted_tables if table.name in owning and table.name in keys
            for line, own in missing_keys(keys[table.name], table, "mysql") if own]


def missing_keys(present: list[Key], table: Table, dialect: str,
                 lacking: frozenset[tuple[str, str]] = frozenset()) -> list[tuple[str, bool]]:
    """(what is missing, whether it is one of hmsproxy's own keys) among the model's keys of a present table on a
    database of `dialect`, given the table's `present` keys, except those named in `lacking` (table, key name)."""
    uniques = {frozenset(key.columns) for key in present if key.unique}
    leading = {key.columns[0] for key in present if key.ordered}
    missing = []
    for unique, columns, name in declared_keys(table, dialect):
        if ((frozenset(columns) in uniques) if unique else (columns[0] in leading)) or (table.name, name) in lacking:
            continue
        kind = "unique key" if unique else "index"
        missing.append((f"table {table.name} has no {kind} on ({', '.join(columns)}) ({name})",
                        (table.name, columns) in s.OWN_KEYS))
    return missing


def declared_keys(table: Table, dialect: str) -> list[tuple[bool, tuple[str, ...], str]]:
    """(unique, columns, name) of the model's primary key, unique constraints and indexes of a table, as a database
    of `dialect` has them."""
    keys = []
    if table.primary_key.columns:
        keys.append((True, tuple(c.name for c in table.primary_key.columns), "primary key"))
    keys += [(True, tuple(c.name for c in constraint.columns), str(constraint.name))
             for constraint in table.constraints if isinstance(constraint, UniqueConstraint)]
    keys += [(bool(index.unique), tuple(c.name for c in index.columns), str(index.name))
             for index in s.indexes_on(table, dialect)]
    return keys


class Key(NamedTuple):
    name: str | None  # None: a key the database left unnamed (SQLite's primary and unique keys)
    unique: bool
    columns: tuple[str | None, ...]  # None: an expression, not a column
    primary: bool = False
    ordered: bool = True  # serves lookups by its leading columns: not a MariaDB hash (a unique key too long)


def present_keys(engine: Engine) -> dict[str, list[Key]]:
    """Every table's primary key, unique keys and indexes, as the database has them. On MySQL/MariaDB read from
    information_schema: SQLAlchemy's reflection misses keys with prefix lengths and MariaDB's hashed unique keys."""
    keys: dict[str, list[Key]] = {}
    if engine.dialect.name == "mysql":
        query = text("SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME, INDEX_TYPE "
                     "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
                     "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX")
        with engine.connect() as conn:
            rows = conn.execute(query).all()
        for (table, name), group in itertools.groupby(rows, key=lambda row: (row[0], row[1])):
            members = list(group)
            keys.setdefault(table, []).append(Key(name, not members[0][2], tuple(row[3] for row in members),
                                                  name == "PRIMARY", members[0][4] != "HASH"))
        return keys
    inspector = inspect(engine)
    for (_, table), primary in inspector.get_multi_pk_constraint().items():
        if primary["constrained_columns"]:
            keys.setdefault(table, []).append(Key(primary["name"], True, tuple(primary["constrained_columns"]), True))
    for (_, table), uniques in inspector.get_multi_unique_constraints().items():
        keys.setdefault(table, []).extend(Key(u["name"], True, tuple(u["column_names"])) for u in uniques)
    for (_, table), indexes in inspector.get_multi_indexes().items():
        keys.setdefault(table, []).extend(Key(i["name"], bool(i["unique"]), tuple(i["column_names"]))
                                          for i in indexes if not i.get("duplicates_constraint"))
    return keys


def _column_difference(engine: Engine, table: str, column: Column[Any], present: dict[str, Any]) -> list[str]:
    if column.name not in present:
        return [f"column {table}.{column.name} is missing"]
    expected = _kind(dialect_type(column, engine.dialect))
    found = _kind(present[column.name])
    if expected != found:
        return [f"column {table}.{column.name} is {present[column.name]} ({found}); hmsproxy needs {expected}"]
    return []


def dialect_type(column: Column[Any], dialect: Dialect) -> TypeEngine[Any]:
    """The type a model column has on a database: a variant's, or what a TypeDecorator stores."""
    declared = column.type
    return declared.load_dialect_impl(dialect) if isinstance(declared, t.TypeDecorator) \
        else declared.dialect_impl(dialect)


def _kind(column_type: object) -> str:
    if isinstance(column_type, mysql.BIT) or (isinstance(column_type, mysql.TINYINT)
                                              and getattr(column_type, "display_width", None) == 1):
        return "yes/no"  # MySQL's bit(1), Hive's declaration of most flags, and tinyint(1), MySQL's BOOLEAN
    for sql_type, kind in _KINDS:
        if isinstance(column_type, sql_type):
            return kind
    return type(column_type).__name__.lower()


def _counters_behind(engine: Engine, hive_4_ids: bool, rows_added_later: frozenset[str]) -> list[str]:
    behind = []
    counters = _COUNTERS if hive_4_ids else [*_COUNTERS, (s.NEXT_TXN_ID.c.NTXN_NEXT, s.TXNS.c.TXN_ID)]
    with engine.connect() as conn:
        for model, next_val, highest in sequences_behind(conn):
            ids = ID_COLUMNS[model]
            behind.append(f"SEQUENCE_TABLE {MODEL_PREFIX + model} is at {next_val}, but "
                          f"{ids.table.name}.{ids.name} {highest} is in use")
        for counter, ids in counters:
            next_value = conn.execute(select(counter)).scalar()
            highest_id = conn.execute(select(func.max(ids))).scalar()
            if next_value is None:
                behind += [] if counter.table.name in rows_added_later else [f"{counter.table.name} has no row"]
            elif highest_id is not None and next_value <= highest_id:
                behind.append(f"{counter.table.name}.{counter.name} is at {next_value}, but "
                              f"{ids.table.name}.{ids.name} {highest_id} is in use")
    return behind
