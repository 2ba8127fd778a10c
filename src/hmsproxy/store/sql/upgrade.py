"""`hmsproxy schema upgrade`: a metastore database of Hive 2.3.0 up to 4.0.0-beta-1 brought to Hive 4.0.0's layout.

The upgrade is planned from what the database holds, not replayed from a list of past scripts: the layout it
goes to is the one schema.py and hive_only_tables.py declare (Hive 4.0.0's, see tests/store/test_schema_layout.py),
so it compares each table, column, width, nullability and key with that declaration and plans the statements that
close the gap. What a comparison cannot know comes from the facts of Hive's releases: renamed columns and tables, the
values Hive's upgrades give to new columns of existing rows, and the data Hive's upgrades rewrite (DATA_STEPS).

Why not Alembic: its revisions describe one project's own history and record it in a table of its own
(alembic_version), which Hive's tools would see as a stranger in their schema; the starting points here are
Hive's releases, told apart by Hive's VERSION row, and each needs a different path.

Planning from what is there makes the upgrade resumable: after a failure (MySQL commits each DDL statement on
its own) it is run again and plans only what is still missing; every data step is written to be repeatable.
On PostgreSQL the whole upgrade is one transaction. VERSION changes last.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    Dialect,
    Engine,
    Table,
    Update,
    and_,
    exists,
    func,
    insert,
    inspect,
    literal,
    select,
    update,
)
from sqlalchemy import types as t
from sqlalchemy.dialects import mysql
from sqlalchemy.schema import CreateColumn, CreateIndex, CreateTable, UniqueConstraint
from sqlalchemy.sql.elements import ClauseElement

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.hive_only_tables import HIVE_SCHEMA, MV_CREATION_METADATA, PARTITION_EVENTS, WM_RESOURCEPLAN
from hmsproxy.store.sql.sequences import catch_up_statements, single_row_statements
from hmsproxy.store.sql.validate import Key, declared_keys, dialect_type, present_keys

UPGRADABLE_FROM = ("2.3.0", "3.0.0", "3.1.0", "3.2.0", "4.0.0-alpha-1", "4.0.0-alpha-2", "4.0.0-beta-1", "4.0.0")
RENAMED_COLUMNS = {  # Hive 3.0.0 counts compactions in write ids
    ("COMPACTION_QUEUE", "CQ_HIGHEST_TXN_ID"): "CQ_HIGHEST_WRITE_ID",
    ("COMPLETED_COMPACTIONS", "CC_HIGHEST_TXN_ID"): "CC_HIGHEST_WRITE_ID",
}
DROPPED_TABLES = ("INDEX_PARAMS", "IDXS")  # Hive's indexes, gone since Hive 3; Hive 4.0.0's upgrade drops them
# Values Hive's upgrades give the rows that exist when a NOT NULL column without a default comes.
FILLS: dict[tuple[str, str], str | int] = {
    ("COMPLETED_TXN_COMPONENTS", "CTC_UPDATE_DELETE"): "N",
    ("MV_CREATION_METADATA", "MATERIALIZATION_TIME"): 0,
}
LEGACY_COUNTER = "NEXT_TXN_ID"  # Hive 2.3-3.2's transaction id counter; Hive 4 renames it TXN_LOCK_TBL


class UpgradeRefused(Exception):
    """The database holds no schema this command upgrades; nothing was changed."""


@dataclass
class Step:
    why: str
    statements: list[str] = field(default_factory=list)


@dataclass
class _Layout:
    """The tables and columns the database will have once the steps planned so far have run."""
    columns: dict[str, dict[str, Mapping[str, Any]]]
    keys: dict[str, list[Key]]


def plan(engine: Engine) -> tuple[str, list[Step]]:
    """(the version found, the steps that bring the database to Hive 4.0.0's layout)."""
    version = _version(engine)
    dialect = engine.dialect
    inspector = inspect(engine)
    layout = _Layout({name: {c["name"]: c for c in columns} for (_, name), columns
                      in inspector.get_multi_columns().items()}, present_keys(engine))
    ddl = _Ddl(engine)
    steps = [
        Step("names as Hive 4 spells them", _renames(layout, ddl)),
        Step("tables Hive 4 has", _new_tables(layout, ddl)),
        Step("columns Hive 4 has", _new_columns(layout, ddl)),
    ]
    data = Step("data as Hive's upgrades leave it")
    for introduced_in, statements in DATA_STEPS:
        if _older(version, introduced_in):
            data.statements += [_sql(statement, dialect) for statement in statements(layout)]
    seeds = Step("rows Hive's scripts insert; id counters past the ids in use",
                 [_sql(seed, dialect) for seed in _seeds()])
    steps += [
        data,
        Step("column types and nullability as Hive 4 declares them", _retyped_columns(engine, layout, ddl)),
        Step("transaction ids from TXNS, continuing above every id Hive handed out", _txns_numbered(layout, ddl)),
        seeds,
        Step("keys and indexes as Hive 4 declares them", _keys(layout, ddl)),
        Step("tables Hive 4 dropped", [ddl.drop_table(name) for name in DROPPED_TABLES if name in layout.columns]),
        Step("version", [_sql(update(s.VERSION).values(SCHEMA_VERSION=s.SCHEMA_VERSION,
                                                       VERSION_COMMENT=f"Hive release version {s.SCHEMA_VERSION}"),
                              dialect)] if version != s.SCHEMA_VERSION else []),
    ]
    steps = [step for step in steps if step.statements]
    if steps == [seeds]:  # every seed is planned and harmless to repeat, but alone it is no upgrade
        return version, []
    return version, steps


def statement_count(steps: list[Step]) -> int:
    return sum(len(step.statements) for step in steps)


def run(engine: Engine, steps: list[Step], progress: Callable[[Step], None]) -> None:
    """Runs the steps on one connection: in one transaction on PostgreSQL, where DDL is transactional."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            with conn.begin():
                _execute(conn, steps, progress)
        else:
            _execute(conn.execution_options(isolation_level="AUTOCOMMIT"), steps, progress)


def _execute(conn: Connection, steps: list[Step], progress: Callable[[Step], None]) -> None:
    for step in steps:
        progress(step)
        for statement in step.statements:
            conn.exec_driver_sql(statement)


def refuse_sqlite(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        raise UpgradeRefused("`hmsproxy schema upgrade` upgrades Hive's MySQL/MariaDB and PostgreSQL metastores; an "
                             "SQLite metastore of an older hmsproxy is brought up to date by `hmsproxy serve` itself")


def _version(engine: Engine) -> str:
    refuse_sqlite(engine)
    tables = set(inspect(engine).get_table_names())
    if "VERSION" not in tables:
        raise UpgradeRefused("no VERSION table: this is not a Hive metastore database (`hmsproxy schema init` "
                             "creates one in an empty database)")
    with engine.connect() as conn:
        versions = list(conn.execute(select(s.VERSION.c.SCHEMA_VERSION)).scalars())
    if len(versions) != 1 or versions[0] not in UPGRADABLE_FROM:
        raise UpgradeRefused(f"VERSION holds {versions or 'no row'}; `hmsproxy schema upgrade` upgrades Hive "
                             f"{', '.join(UPGRADABLE_FROM[:-1])} to {s.SCHEMA_VERSION}. Nothing was changed.")
    return str(versions[0])


def _older(version: str, than: str) -> bool:
    return UPGRADABLE_FROM.index(version) < UPGRADABLE_FROM.index(than)


def _sql(statement: ClauseElement, dialect: Dialect) -> str:
    return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


class _Ddl:
    """The few DDL statements SQLAlchemy does not write, in each database's words."""

    def __init__(self, engine: Engine) -> None:
        self.dialect = engine.dialect
        self.mysql = engine.dialect.name == "mysql"
        self.quote = engine.dialect.identifier_preparer.quote

    def rename_table(self, old: str, new: str) -> str:
        if self.mysql:
            return f"RENAME TABLE {self.quote(old)} TO {self.quote(new)}"
        return f"ALTER TABLE {self.quote(old)} RENAME TO {self.quote(new)}"

    def rename_column(self, table: str, old: str, new: str) -> str:
        return f"ALTER TABLE {self.quote(table)} RENAME COLUMN {self.quote(old)} TO {self.quote(new)}"

    def add_column(self, column: Column[Any]) -> str:
        return f"ALTER TABLE {self.quote(column.table.name)} ADD COLUMN {self.column(column)}"

    def column(self, column: Column[Any]) -> str:
        return str(CreateColumn(column).compile(dialect=self.dialect))

    def retype(self, column: Column[Any], nullable: bool) -> list[str]:
        table, name = self.quote(column.table.name), self.quote(column.name)
        if self.mysql:
            copy = _copy(column, nullable)
            return [f"ALTER TABLE {table} MODIFY COLUMN {self.column(copy)}"]
        type_sql = column.type.compile(dialect=self.dialect)
        return [f"ALTER TABLE {table} ALTER COLUMN {name} TYPE {type_sql} USING {name}::{type_sql}"]

    def set_nullable(self, column: Column[Any], nullable: bool) -> str:
        if self.mysql:
            return f"ALTER TABLE {self.quote(column.table.name)} MODIFY COLUMN {self.column(_copy(column, nullable))}"
        change = "DROP NOT NULL" if nullable else "SET NOT NULL"
        return f"ALTER TABLE {self.quote(column.table.name)} ALTER COLUMN {self.quote(column.name)} {change}"

    def drop_key(self, table: str, key: Key) -> list[str]:
        assert key.name is not None  # MySQL and PostgreSQL name every key
        if self.mysql:
            return [f"ALTER TABLE {self.quote(table)} DROP PRIMARY KEY" if key.primary
                    else f"DROP INDEX {self.quote(key.name)} ON {self.quote(table)}"]
        # PostgreSQL: a primary or unique key is a constraint, an index is not; dropping either way is harmless
        return [f"ALTER TABLE {self.quote(table)} DROP CONSTRAINT IF EXISTS {self.quote(key.name)}",
                f"DROP INDEX IF EXISTS {self.quote(key.name)}"]

    def add_primary_key(self, table: str, columns: tuple[str, ...]) -> str:
        return f"ALTER TABLE {self.quote(table)} ADD PRIMARY KEY ({', '.join(map(self.quote, columns))})"

    def drop_table(self, table: str) -> str:
        return f"DROP TABLE {self.quote(table)}"


def _copy(column: Column[Any], nullable: bool) -> Column[Any]:
    """The model's column with another nullability, still bound to its table (for the DDL compiler)."""
    copy = column._copy()
    copy.nullable = nullable
    copy.table = column.table
    return copy


def _model_tables() -> dict[str, Table]:
    return {table.name: table for table in HIVE_SCHEMA.sorted_tables}


def _renames(layout: _Layout, ddl: _Ddl) -> list[str]:
    """Hive before 4.0.0 created its transaction tables unquoted on PostgreSQL (lower-case names) and named two
    compaction columns after transaction ids; Hive 4 spells them as the model does."""
    statements = []
    wanted = {name: set(table.c.keys()) for name, table in _model_tables().items()}
    wanted[LEGACY_COUNTER] = {"NTXN_NEXT"}
    for name in list(layout.columns):
        target = name.upper()
        if name != target and target in wanted and target not in layout.columns:
            statements.append(ddl.rename_table(name, target))
            layout.columns[target] = {column: {**found, "table_was": name}
                                      for column, found in layout.columns.pop(name).items()}
            layout.keys[target] = layout.keys.pop(name, [])
    for name, columns in layout.columns.items():
        for present in list(columns):
            target = RENAMED_COLUMNS.get((name, present.upper()), present.upper())
            if present != target and target in wanted.get(name, ()) and target not in columns:
                statements.append(ddl.rename_column(name, present, target))
                columns[target] = {"name_was": present, **columns.pop(present)}
                layout.keys[name] = [key._replace(columns=tuple(target if c == present else c for c in key.columns))
                                     for key in layout.keys.get(name, [])]
    return statements


def _new_tables(layout: _Layout, ddl: _Ddl) -> list[str]:
    statements = []
    for name, table in _model_tables().items():
        if name in layout.columns or (name == s.TXN_LOCK_TBL.name and LEGACY_COUNTER in layout.columns):
            continue  # TXN_LOCK_TBL is NEXT_TXN_ID renamed, below
        statements.append(str(CreateTable(table).compile(dialect=ddl.dialect)))
        statements += [str(CreateIndex(index).compile(dialect=ddl.dialect))
                       for index in s.indexes_on(table, ddl.dialect.name)]
        layout.columns[name] = {column.name: {"name": column.name} for column in table.columns}
        layout.keys[name] = [Key(str(key_name), unique, columns, key_name == "primary key")
                             for unique, columns, key_name in declared_keys(table, ddl.dialect.name)]
    return statements


def _new_columns(layout: _Layout, ddl: _Ddl) -> list[str]:
    """Columns the model declares that a present table lacks. One that is NOT NULL without a default is added
    nullable, given its value (FILLS) and made NOT NULL with the other nullability changes."""
    statements = []
    for name, table in _model_tables().items():
        present = layout.columns.get(name)
        if present is None:
            continue
        for column in table.columns:
            if column.name in present:
                continue
            later = not column.nullable and column.server_default is None
            statements.append(ddl.add_column(_copy(column, True) if later else column))
            present[column.name] = {"name": column.name, "added": True}
    return statements


def _capacity(column_type: object, on_mysql: bool) -> float:
    """How many characters (or bytes) a text or binary column holds; 0 for other kinds."""
    if isinstance(column_type, (mysql.LONGTEXT, mysql.LONGBLOB)):
        return 2 ** 32 - 1
    if isinstance(column_type, (mysql.MEDIUMTEXT, mysql.MEDIUMBLOB)):
        return 2 ** 24 - 1
    if isinstance(column_type, (mysql.TINYTEXT, mysql.TINYBLOB)):
        return 255
    if isinstance(column_type, (t.String, t.LargeBinary)):
        length = getattr(column_type, "length", None)
        return float(length) if length else (65535 if on_mysql else float("inf"))  # MySQL's TEXT and BLOB
    return 0


def _retyped_columns(engine: Engine, layout: _Layout, ddl: _Ddl) -> list[str]:
    """Widens a text or binary column narrower than the model's (Hive widened several over its releases; one that
    is wider stays), and gives a column the model's nullability: NOT NULL only where no row holds a NULL once
    the data steps have run."""
    statements = []
    with engine.connect() as conn:
        for name, table in _model_tables().items():
            present = layout.columns.get(name, {})
            for column in table.columns:
                found = present.get(column.name)
                if found is None or "type" not in found:  # new, as the model declares it
                    if found is not None and found.get("added") and not column.nullable and \
                            column.server_default is None:
                        statements.append(ddl.set_nullable(column, False))
                    continue
                model_type = dialect_type(column, ddl.dialect)
                nullable = bool(found["nullable"])
                if _capacity(model_type, ddl.mysql) > _capacity(found["type"], ddl.mysql) > 0:
                    statements += ddl.retype(column, nullable)
                if column.primary_key or nullable == column.nullable:
                    continue
                if column.nullable or (name, column.name) in FILLS or not _holds_null(
                        conn, found.get("table_was", name), found.get("name_was", column.name)):
                    statements.append(ddl.set_nullable(column, bool(column.nullable)))
    return statements


def _holds_null(conn: Connection, table: str, column: str) -> bool:
    quote = conn.dialect.identifier_preparer.quote
    return conn.exec_driver_sql(f"SELECT 1 FROM {quote(table)} WHERE {quote(column)} IS NULL LIMIT 1").first() \
        is not None


def _txns_numbered(layout: _Layout, ddl: _Ddl) -> list[str]:
    """Hive 4 numbers transactions by TXNS.TXN_ID itself and keeps NEXT_TXN_ID's row as TXN_LOCK_TBL, the
    commit mutex. A committed row at the highest id the counter handed out keeps the next one above it (Hive's
    own upgrade starts above the highest id still in TXNS or COMPLETED_TXN_COMPONENTS, which can hand out an
    id a read-only transaction already had)."""
    if LEGACY_COUNTER not in layout.columns:
        return []
    q = ddl.quote
    txns, counter = q("TXNS"), q(LEGACY_COUNTER)
    statements = [
        f"INSERT INTO {txns} ({q('TXN_ID')}, {q('TXN_STATE')}, {q('TXN_STARTED')}, {q('TXN_LAST_HEARTBEAT')}, "
        f"{q('TXN_USER')}, {q('TXN_HOST')}) SELECT {q('NTXN_NEXT')} - 1, 'c', 0, 0, '', '' FROM {counter} "
        f"WHERE {q('NTXN_NEXT')} - 1 > (SELECT COALESCE(MAX({q('TXN_ID')}), 0) FROM {txns} AS highest)",
    ]
    if ddl.mysql:  # rows of other tables refer to TXN_ID: MySQL checks those while the column changes
        statements += ["SET FOREIGN_KEY_CHECKS = 0",
                       f"ALTER TABLE {txns} MODIFY COLUMN {q('TXN_ID')} BIGINT NOT NULL AUTO_INCREMENT",
                       "SET FOREIGN_KEY_CHECKS = 1"]
    else:  # as PostgreSQL's bigserial, which Hive 4.0.0's script declares
        sequence = q("TXNS_TXN_ID_seq")
        statements += [f"CREATE SEQUENCE IF NOT EXISTS {sequence} OWNED BY {txns}.{q('TXN_ID')}",
                       f"SELECT setval('{sequence}', (SELECT MAX({q('TXN_ID')}) FROM {txns}))",
                       f"ALTER TABLE {txns} ALTER COLUMN {q('TXN_ID')} SET DEFAULT nextval('{sequence}')"]
    if "TXN_LOCK_TBL" in layout.columns:  # an older hmsproxy created both; the counter has served its purpose
        statements.append(ddl.drop_table(LEGACY_COUNTER))
    else:
        statements += [ddl.rename_table(LEGACY_COUNTER, "TXN_LOCK_TBL"),
                       ddl.rename_column("TXN_LOCK_TBL", "NTXN_NEXT", "TXN_LOCK")]
        layout.columns["TXN_LOCK_TBL"] = {"TXN_LOCK": {"name": "TXN_LOCK"}}
        layout.keys["TXN_LOCK_TBL"] = []
    del layout.columns[LEGACY_COUNTER]
    return statements


def _keys(layout: _Layout, ddl: _Ddl) -> list[str]:
    """The model's primary keys, unique keys and indexes: a key of the model's name over other columns (Hive
    changed several) is replaced; a missing one is created. Hive's other indexes stay."""
    statements = []
    for name, table in _model_tables().items():
        present = layout.keys.get(name, [])
        by_name = {key.name.upper(): key for key in present if key.name is not None}
        for unique, columns, key_name in declared_keys(table, ddl.dialect.name):
            if key_name == "primary key":
                primary = next((key for key in present if key.primary), None)
                if primary is None or primary.columns != columns:
                    statements += ddl.drop_key(name, primary) if primary else []
                    statements.append(ddl.add_primary_key(name, columns))
                continue
            if any(key.unique == unique and (set(key.columns) == set(columns) if unique else key.columns == columns)
                   for key in present):
                continue
            clash = by_name.get(key_name.upper())
            if clash is not None:
                statements += ddl.drop_key(name, clash)
            statements.append(_create_key(table, key_name, ddl))
    return statements


def _create_key(table: Table, name: str, ddl: _Ddl) -> str:
    index = next((index for index in table.indexes if index.name == name), None)
    if index is not None:
        return str(CreateIndex(index).compile(dialect=ddl.dialect))
    constraint = next(c for c in table.constraints if isinstance(c, UniqueConstraint) and c.name == name)
    columns = ", ".join(ddl.quote(column.name) for column in constraint.columns)
    return f"ALTER TABLE {ddl.quote(table.name)} ADD CONSTRAINT {ddl.quote(name)} UNIQUE ({columns})"


# ---- data: what Hive's upgrades write, from the facts of their scripts --------------------------------------

def _s3n_to_s3a(column: Column[str]) -> Update:
    return update(column.table).where(func.substr(column, 1, 6) == "s3n://").values(
        {column.name: func.concat("s3a", func.substr(column, 4))})


def _fill(column: Column[Any], value: object, *where: ColumnElement[bool]) -> Update:
    return update(column.table).where(column.is_(None), *where).values({column.name: value})


def _to_3_0_0(layout: _Layout) -> list[ClauseElement]:
    """Hive 3.0.0: catalogs; a misspelt SerDe key; s3n locations become s3a; write ids for the transactional
    tables (equal to transaction ids, which named their delta directories until then)."""
    sp, tp, t2w, nwi = s.SERDE_PARAMS, s.TABLE_PARAMS, s.TXN_TO_WRITE_ID, s.NEXT_WRITE_ID
    statements: list[ClauseElement] = [
        update(sp).where(sp.c.PARAM_KEY == "colelction.delim").values(PARAM_KEY="collection.delim"),
        *(_s3n_to_s3a(c) for c in (s.FUNC_RU.c.RESOURCE_URI, s.SKEWED_COL_VALUE_LOC_MAP.c.LOCATION,
                                   s.SDS.c.LOCATION, s.DBS.c.DB_LOCATION_URI)),
        _fill(s.NOTIFICATION_LOG.c.CAT_NAME, "hive", s.NOTIFICATION_LOG.c.DB_NAME.isnot(None)),
        _fill(PARTITION_EVENTS.c.CAT_NAME, "hive", PARTITION_EVENTS.c.DB_NAME.isnot(None)),
        _fill(s.TXN_COMPONENTS.c.TC_WRITEID, s.TXN_COMPONENTS.c.TC_TXNID),
        _fill(s.COMPLETED_TXN_COMPONENTS.c.CTC_WRITEID, s.COMPLETED_TXN_COMPONENTS.c.CTC_TXNID),
    ]
    transactional = (select(s.DBS.c.NAME, s.TBLS.c.TBL_NAME).join_from(s.TBLS, s.DBS, s.TBLS.c.DB_ID == s.DBS.c.DB_ID)
                     .join(tp, and_(tp.c.TBL_ID == s.TBLS.c.TBL_ID, tp.c.PARAM_KEY == "transactional",
                                    func.lower(tp.c.PARAM_VALUE) == "true"))).subquery()
    if LEGACY_COUNTER in layout.columns:
        statements.append(insert(nwi).from_select(
            ["NWI_DATABASE", "NWI_TABLE", "NWI_NEXT"],
            select(transactional.c.NAME, transactional.c.TBL_NAME, select(s.NEXT_TXN_ID.c.NTXN_NEXT).scalar_subquery())
            .where(~exists().where(nwi.c.NWI_DATABASE == transactional.c.NAME,
                                   nwi.c.NWI_TABLE == transactional.c.TBL_NAME))))
    open_txns = s.TXNS.alias("open_txns")
    statements.append(insert(t2w).from_select(
        ["T2W_DATABASE", "T2W_TABLE", "T2W_TXNID", "T2W_WRITEID"],
        select(transactional.c.NAME, transactional.c.TBL_NAME, open_txns.c.TXN_ID, open_txns.c.TXN_ID)
        .where(~exists().where(t2w.c.T2W_DATABASE == transactional.c.NAME, t2w.c.T2W_TABLE == transactional.c.TBL_NAME,
                               t2w.c.T2W_TXNID == open_txns.c.TXN_ID))))
    return statements


def _to_3_1_0(layout: _Layout) -> list[ClauseElement]:
    return [_fill(s.COMPLETED_TXN_COMPONENTS.c.CTC_UPDATE_DELETE, "N"),
            _fill(MV_CREATION_METADATA.c.MATERIALIZATION_TIME, 0)]


def _to_4_0_0_alpha_1(layout: _Layout) -> list[ClauseElement]:
    """Hive 4.0.0-alpha-1: workload namespaces; statistics per engine; MultiDelimitSerDe moved out of contrib."""
    return [_fill(WM_RESOURCEPLAN.c.NS, "default"),
            _fill(s.TAB_COL_STATS.c.ENGINE, "hive"), _fill(s.PART_COL_STATS.c.ENGINE, "hive"),
            _fill(s.DBS.c.TYPE, "NATIVE"),
            update(s.SERDES).where(s.SERDES.c.SLIB == "org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe")
            .values(SLIB="org.apache.hadoop.hive.serde2.MultiDelimitSerDe")]


def _to_4_0_0_beta_1(layout: _Layout) -> list[ClauseElement]:
    """Hive 4.0.0-beta-1: Kudu tables name Kudu's formats and SerDe."""
    kudu_tables = select(s.TBLS.c.SD_ID).join_from(s.TBLS, s.TABLE_PARAMS, s.TBLS.c.TBL_ID == s.TABLE_PARAMS.c.TBL_ID) \
        .where(s.TABLE_PARAMS.c.PARAM_VALUE.contains("KuduStorageHandler", autoescape=True))
    kudu_serdes = select(s.SDS.c.SERDE_ID).where(s.SDS.c.SD_ID.in_(kudu_tables))
    return [update(s.SDS).where(s.SDS.c.SD_ID.in_(kudu_tables)).values(
                INPUT_FORMAT="org.apache.hadoop.hive.kudu.KuduInputFormat",
                OUTPUT_FORMAT="org.apache.hadoop.hive.kudu.KuduOutputFormat"),
            update(s.SERDES).where(s.SERDES.c.SERDE_ID.in_(kudu_serdes)).values(
                SLIB="org.apache.hadoop.hive.kudu.KuduSerDe")]


DATA_STEPS: list[tuple[str, Callable[[_Layout], list[ClauseElement]]]] = [
    ("3.0.0", _to_3_0_0), ("3.1.0", _to_3_1_0), ("4.0.0-alpha-1", _to_4_0_0_alpha_1),
    ("4.0.0-beta-1", _to_4_0_0_beta_1),
]


def _seeds() -> list[ClauseElement]:
    """The rows Hive's scripts insert (the default catalog, whose location the metastore sets at its start, and
    the single-row counters), and id counters moved past the ids in use: each only where missing or behind."""
    statements: list[ClauseElement] = [insert(s.CTLGS).from_select(
        ["CTLG_ID", "NAME", "DESC", "LOCATION_URI"],
        select(func.coalesce(select(func.max(s.CTLGS.c.CTLG_ID)).scalar_subquery(), 0) + 1, literal("hive"),
               literal("Default catalog for Hive"), literal("TBD"))
        .where(~exists().where(s.CTLGS.alias("hive").c.NAME == "hive")))]
    return [*statements, *single_row_statements(), *catch_up_statements().values()]
