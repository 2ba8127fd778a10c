"""Which of the declared columns (Hive 4.0.0's, schema.py and hive_only_tables.py) the database holds: a Hive 3.1.0
or 2.3.0 schema is served in place, as Hive's script created it, without the columns Hive added since
(hive_versions.py).

Statements are written for Hive 4.0.0's layout. The engine renders a column the database lacks as the value Hive
implies where it is missing (a 3.1 statistics row is the 'hive' engine's, a table there has no write id), so
reads need nothing else (`install`); writes pass their values through `Layout.values`, which leaves such columns
out. A value the schema cannot hold is refused with a MetaException before anything is written, unless it is one
the older Hive itself did not record (a database's create time, a table's write id): that is dropped, and the
cache forgets it as well (`forget`), so that it answers as the database does.

On PostgreSQL, Hive before 4.0 created its transaction tables unquoted, so they and their columns are stored in
lower case (txns.txn_id) while the rest of its schema is quoted upper case ("TBLS"."TBL_ID"). Statements then
name those unquoted, as Hive's own SQL does, and PostgreSQL folds them.
"""
from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Alias, Connection, Engine, Table, inspect, select, text

from hmsproxy.idl import hms
from hmsproxy.store.domain import Kept
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.hive_only_tables import HIVE_SCHEMA

DEFAULT_CATALOG = "hive"  # before Hive 3 the only one, implied by every row
# What a row means where its schema lacks the column; a column not listed here implies NULL.
_IMPLIED: dict[tuple[str, str], str | int] = {
    ("DBS", "TYPE"): "NATIVE", ("TBLS", "WRITE_ID"): 0, ("PARTITIONS", "WRITE_ID"): 0,
    ("TAB_COL_STATS", "ENGINE"): "hive", ("PART_COL_STATS", "ENGINE"): "hive", ("TXNS", "TXN_TYPE"): 0,
    ("COMPLETED_TXN_COMPONENTS", "CTC_UPDATE_DELETE"): "N",
    **{(table, column): DEFAULT_CATALOG for table, column in (
        ("DBS", "CTLG_NAME"), ("TAB_COL_STATS", "CAT_NAME"), ("PART_COL_STATS", "CAT_NAME"),
        ("NOTIFICATION_LOG", "CAT_NAME"), ("PARTITION_EVENTS", "CAT_NAME"))},
}
# Columns whose values an older Hive did not record at all: dropped on write rather than refused. Each with the
# IDL field that then reads back as the implied value, where the cache keeps one.
_UNRECORDED: dict[tuple[str, str], tuple[type, str] | None] = {
    ("DBS", "CREATE_TIME"): (hms.Database, "createTime"), ("CTLGS", "CREATE_TIME"): (hms.Catalog, "createTime"),
    ("TBLS", "WRITE_ID"): (hms.Table, "writeId"), ("PARTITIONS", "WRITE_ID"): (hms.Partition, "writeId"),
    ("TBLS", "OWNER_TYPE"): (hms.Table, "ownerType"), ("TXNS", "TXN_TYPE"): None,
    ("COMPLETED_TXN_COMPONENTS", "CTC_UPDATE_DELETE"): None,  # Hive 2.3 checks conflicts in WRITE_SET only
}


@dataclass(frozen=True)
class Layout:
    version: str
    absent: frozenset[tuple[str, str]] = frozenset()  # (table, column) of declared columns the database lacks
    folded: frozenset[str] = frozenset()  # declared tables stored under their lower-case name
    absent_tables: frozenset[str] = frozenset()  # declared tables the database lacks (Hive 4's, write ids', ...)
    txn_counter: bool = False  # NEXT_TXN_ID hands out transaction ids (Hive 2.3/3.1, an older hmsproxy)

    @classmethod
    def read(cls, engine: Engine) -> Layout:
        with engine.connect() as conn:
            version = conn.execute(select(s.VERSION.c.SCHEMA_VERSION)).scalar_one()
            present = column_names(conn)
        folded = stored_lower_case(present)
        absent: set[tuple[str, str]] = set()
        absent_tables: set[str] = set()
        for table in HIVE_SCHEMA.sorted_tables:
            stored = table.name.lower() if table.name in folded else table.name
            have = {column.upper() if table.name in folded else column for column in present.get(stored, ())}
            if have:
                absent.update((table.name, column.name) for column in table.columns if column.name not in have)
            else:
                absent_tables.add(table.name)
        return cls(version, frozenset(absent), frozenset(folded), frozenset(absent_tables),
                   txn_counter="NEXT_TXN_ID" in present or "NEXT_TXN_ID" in folded)

    def holds(self, table: Table) -> bool:
        return table.name not in self.absent_tables

    @property
    def write_ids(self) -> bool:
        """Whether the schema keeps table write ids (Hive 3 brought them)."""
        return self.holds(s.TXN_TO_WRITE_ID)

    def lacking(self, what: str) -> hms.MetaException:
        return hms.MetaException(message=(
            f"the metastore database holds Hive's schema {self.version}, which has no place for {what}; upgrade it "
            f"to {s.SCHEMA_VERSION} with `hmsproxy schema upgrade` to use this"))

    def values(self, table: Table, values: dict[str, object]) -> dict[str, object]:
        """The values of an insert or update without the columns the database lacks. A value that would be lost
        raises MetaException, unless the older Hive did not record it either (_UNRECORDED)."""
        if not self.absent:  # Hive 4.0.0's layout: nothing to leave out, on the path of every write
            return values
        kept = {}
        for name, value in values.items():
            key = (table.name, name)
            if key not in self.absent:
                kept[name] = value
            elif key not in _UNRECORDED and value is not None and value != _IMPLIED.get(key):
                raise self.lacking(f"{table.name}.{name} (given {value!r})")
        return kept

    def forget(self, obj: Kept) -> Kept:
        """The object with the fields this schema does not record reset, as reading it back would give them."""
        if not self.absent:   # Hive 4.0.0's layout, on the path of every write's result
            return obj
        for (table, name), kept in _UNRECORDED.items():
            if kept is not None and isinstance(obj, kept[0]) and (table, name) in self.absent:
                setattr(obj, kept[1], _IMPLIED.get((table, name)))
        return obj


def column_names(conn: Connection) -> dict[str, set[str]]:
    """The column names of each table of the database. On MySQL/MariaDB in one query: SQLAlchemy's reflection reads
    each table's SHOW CREATE TABLE, 83 round trips and parses, a sixth of a second of every start through a database
    1 ms away."""
    if conn.dialect.name != "mysql":
        return {name: {column["name"] for column in columns}
                for (_, name), columns in inspect(conn).get_multi_columns().items()}
    query = text("SELECT c.TABLE_NAME, c.COLUMN_NAME FROM information_schema.COLUMNS c "
                 "JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME "
                 "WHERE c.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE'")
    present: dict[str, set[str]] = {}
    for table, column in conn.execute(query):
        present.setdefault(table, set()).add(column)
    return present


FULL = Layout(s.SCHEMA_VERSION)  # Hive 4.0.0's schema, every column there
# Hive's transaction tables, which its PostgreSQL scripts before 4.0.0 created unquoted (NEXT_TXN_ID is not declared:
# Hive 4 has none).
_TRANSACTION_TABLES = frozenset({
    "NEXT_TXN_ID", "TXNS", "TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS", "HIVE_LOCKS", "NEXT_LOCK_ID",
    "COMPACTION_QUEUE", "NEXT_COMPACTION_QUEUE_ID", "COMPLETED_COMPACTIONS", "AUX_TABLE", "WRITE_SET",
    "TXN_TO_WRITE_ID", "NEXT_WRITE_ID", "MIN_HISTORY_LEVEL", "MATERIALIZATION_REBUILD_LOCKS", "REPL_TXN_MAP",
    "RUNTIME_STATS"})


def stored_lower_case(present_tables: Container[str]) -> set[str]:
    """The transaction tables stored under their lower-case name, given the names the database has."""
    return {name for name in _TRANSACTION_TABLES if name not in present_tables and name.lower() in present_tables}


def install(engine: Engine, layout: Layout) -> None:
    """Makes the engine's statements fit the layout: a column the database lacks is rendered as the value Hive
    implies, and lower-case tables are named unquoted."""
    _unquote_folded_names(engine, layout)
    if not layout.absent:
        return
    implied = {key: _IMPLIED.get(key) for key in layout.absent}

    class LayoutCompiler(engine.dialect.statement_compiler):  # type: ignore[name-defined,misc]
        def visit_column(self, column: Any, add_to_result_map: Any = None, **kw: Any) -> str:
            table = column.table.element if isinstance(column.table, Alias) else column.table
            key = (getattr(table, "name", None), column.name)
            if key not in implied:
                return str(super().visit_column(column, add_to_result_map=add_to_result_map, **kw))
            if add_to_result_map is not None:  # rows still carry the column under its name
                add_to_result_map(column.name, column.name, (column, column.name, column.key), column.type)
            value = implied[key]
            return "NULL" if value is None else str(self.render_literal_value(value, column.type))

    engine.dialect.statement_compiler = LayoutCompiler


def _unquote_folded_names(engine: Engine, layout: Layout) -> None:
    """Makes the engine name the layout's lower-case tables and their columns unquoted, so that PostgreSQL folds
    them. A name is quoted or not wherever it appears, so a column name that an upper-case table has as well
    stays quoted: of the folded tables' columns only RUNTIME_STATS.CREATE_TIME, which hmsproxy does not use."""
    if not layout.folded:
        return
    upper_case = {column.name for table in HIVE_SCHEMA.sorted_tables if table.name not in layout.folded
                  for column in table.columns}
    names = set(layout.folded) | {"NTXN_NEXT"} | {column.name for table in HIVE_SCHEMA.sorted_tables
                                                  if table.name in layout.folded for column in table.columns}
    names -= upper_case
    preparer = engine.dialect.identifier_preparer
    requires_quotes = preparer._requires_quotes  # SQLAlchemy's hook for "this name must be quoted"
    preparer._requires_quotes = (  # type: ignore[method-assign]
        lambda value: value not in names and requires_quotes(value))
    preparer._strings.clear()  # names already quoted before
