"""Setting the schema up: what a database holds and whether hmsproxy serves it (servable_layout), creating Hive
4.0.0's schema or completing one an older hmsproxy created (prepare_schema), and the lock that serialises that
work across processes (schema_lock). Apart from Database (database.py), which serves a schema once it is there.
"""
from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import cast

from sqlalchemy import Connection, insert, inspect, select, text, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.schema import CreateColumn

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.engines import SQLITE_BUSY_TIMEOUT_S
from hmsproxy.store.sql.hive_only_tables import HIVE_SCHEMA
from hmsproxy.store.sql.hive_versions import HIVE_2_3, HIVE_3_1
from hmsproxy.store.sql.layout import column_names, stored_lower_case
from hmsproxy.store.sql.sequences import (
    ID_COLUMNS,
    MODEL_PREFIX,
    catch_up_sequences,
    reserve,
    single_row_statement,
    single_row_statements,
)
from hmsproxy.store.sql.upgrade import UPGRADABLE_FROM

# The schema lock (schema_lock). MySQL's GET_LOCK names are server-wide: this one is the database's own.
MYSQL_TAKE = text("SELECT GET_LOCK(CONCAT('hmsproxy.schema.', MD5(DATABASE())), :wait)")
MYSQL_RELEASE = text("SELECT RELEASE_LOCK(CONCAT('hmsproxy.schema.', MD5(DATABASE())))")
# PostgreSQL's advisory locks are per database already; the key is ours ("hmsschem" as a number)
POSTGRES_TAKE = text(f"SELECT pg_advisory_xact_lock({int.from_bytes(b'hmsschem', 'big')})")
POSTGRES_LOCK_NOT_AVAILABLE = "55P03"
DEFAULT_SCHEMA_WAIT_S = 300.0   # config.Settings.db_schema_wait_s
log = logging.getLogger(__name__)


def schema_exists(db: Database) -> bool:
    return inspect(db.engine).has_table("VERSION")


class SchemaRefused(Exception):
    """The database holds a metastore schema hmsproxy does not serve: it is left exactly as it is."""


@contextlib.contextmanager
def schema_lock(db: Database, wait_s: float = DEFAULT_SCHEMA_WAIT_S) -> Iterator[Connection]:
    """Serialises creating and upgrading the schema across processes: instances started together on an empty
    database would otherwise each find it empty and create it, and all but one fail. The others wait (at most
    `wait_s`, then SchemaRefused) and then find the schema there. Yields the connection that holds the lock, in
    a transaction, to do the work on: on SQLite the lock is that transaction (BEGIN EXCLUSIVE), so no other
    connection could write; on PostgreSQL it is a transaction-level advisory lock, and the work done in that
    transaction is atomic (its DDL is transactional); on MySQL/MariaDB it is the session's GET_LOCK (the server
    commits each DDL statement on its own)."""
    with db._writer.connect() as conn:
        if conn.dialect.name == "mysql":
            _wait_for(lambda seconds: conn.execute(MYSQL_TAKE, {"wait": seconds}).scalar() == 1, db, wait_s)
            conn.commit()
            try:
                with conn.begin():
                    yield conn
            finally:
                if not conn.invalidated:   # a lost session released its lock with it
                    conn.execute(MYSQL_RELEASE)
                    conn.commit()
        elif conn.dialect.name == "postgresql":
            with conn.begin():
                _wait_for(lambda seconds: _postgres_lock(conn, seconds), db, wait_s)
                yield conn
        else:
            _wait_for(lambda seconds: _sqlite_exclusive(conn, seconds), db, wait_s)
            exclusive = conn.get_transaction()
            assert exclusive is not None
            with exclusive:
                yield conn


def _wait_for(take: Callable[[float], bool], db: Database, wait_s: float) -> None:
    """Takes the schema lock with `take(seconds)` (True once held), saying so when another process holds it.
    Waits in slices shorter than the statement timeout, which would otherwise end a long wait as a lost
    database."""
    if take(0):
        return
    log.info("waiting for another instance to create or upgrade the schema of this database (at most %g s, "
             "--db-schema-wait-s)", wait_s)
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        if take(min(left, db.statement_timeout_s / 2)):
            log.info("the schema lock is ours: going on")
            return
    raise SchemaRefused(f"another hmsproxy (or `hmsproxy schema upgrade`) held this database's schema lock for more "
                        f"than {wait_s:g} s while creating or upgrading the schema; nothing was changed. Start again "
                        "once it is done, or give it longer with --db-schema-wait-s.")


def _postgres_lock(conn: Connection, wait_s: float) -> bool:
    """One try at the transaction's advisory lock, waiting at most `wait_s` (in a savepoint, so that a wait
    that ran out leaves the transaction usable)."""
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {max(1, int(wait_s * 1000))}")
            conn.execute(POSTGRES_TAKE)
    except sa_exc.OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != POSTGRES_LOCK_NOT_AVAILABLE:
            raise
        return False
    conn.exec_driver_sql("SET LOCAL lock_timeout = DEFAULT")   # the schema work waits on other locks as usual
    return True


def _sqlite_exclusive(conn: Connection, wait_s: float) -> bool:
    """One try at BEGIN EXCLUSIVE, waiting at most `wait_s` for the writer in another process to finish."""
    driver = cast(sqlite3.Connection, conn.connection.dbapi_connection)
    driver.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
    try:
        conn.execution_options(sqlite_begin="BEGIN EXCLUSIVE").begin()
    except sa_exc.OperationalError as exc:
        if "locked" not in str(exc.orig):
            raise
        return False
    finally:
        driver.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_S * 1000}")
    return True


def check_servable(db: Database) -> str:
    """What the database holds (servable_layout)."""
    with db.engine.connect() as conn:
        return servable_layout(conn)


def servable_layout(conn: Connection) -> str:
    """What the database holds: "empty"; "hive-4" (Hive 4.0.0's schema, as Hive's schematool and hmsproxy
    create it: served as it is); "hive-3.1" or "hive-2.3" (Hive 3.1.0's or 2.3.0's, served as they are:
    store/sql/layout.py); or "legacy" (the schema an older hmsproxy created, with transaction ids from
    NEXT_TXN_ID: brought up to date at start). Anything else is refused before a thing is written, so that
    hmsproxy never creates tables in a Hive database: another VERSION, or Hive's tables without one."""
    tables = set(inspect(conn).get_table_names())
    tables |= stored_lower_case(tables)
    version = _stored_version(conn) if "VERSION" in tables else None
    if version is None and not tables & {"DBS", "TBLS"}:
        return "empty"
    if version == s.SCHEMA_VERSION and "NEXT_TXN_ID" in tables:
        return "legacy"
    if version == s.SCHEMA_VERSION and "TXN_LOCK_TBL" in tables:
        return "hive-4"
    if version in (HIVE_2_3, HIVE_3_1) and "NEXT_TXN_ID" in tables:
        return f"hive-{version[:3]}"
    found = f"Hive metastore schema {version}" if version else "a Hive metastore schema with no VERSION row"
    needed = (f"this database holds {found}; hmsproxy serves Hive {s.SCHEMA_VERSION}'s, {HIVE_3_1}'s and "
              f"{HIVE_2_3}'s schemas")
    if version in UPGRADABLE_FROM:
        raise SchemaRefused(
            f"{needed}. Stop every metastore that uses it, back it up, then upgrade it with: hmsproxy schema upgrade "
            f"--db '{conn.engine.url.render_as_string(hide_password=True)}' (--dry-run prints the SQL first). "
            "Nothing was changed.")
    raise SchemaRefused(f"{needed} (as Hive's schematool or hmsproxy creates it) and upgrades Hive "
                        f"{', '.join(UPGRADABLE_FROM[:-1])}. Nothing was changed.")


def _add_new_columns(conn: Connection) -> list[str]:
    """Adds the columns a newer hmsproxy declares to the tables of a schema an older one created (create_all
    adds only whole tables). Such columns are nullable or have a default, so existing rows need nothing."""
    preparer = conn.dialect.identifier_preparer
    added = []
    present = column_names(conn)
    for table in HIVE_SCHEMA.sorted_tables:
        have = present.get(table.name, set())
        for column in table.columns:
            if column.name in have:
                continue
            assert column.nullable or column.server_default is not None, f"{table.name}.{column.name}"
            ddl = CreateColumn(column).compile(dialect=conn.dialect)
            conn.execute(text(f"ALTER TABLE {preparer.format_table(table)} ADD COLUMN {ddl}"))
            added.append(f"{table.name}.{column.name}")
    return added


def schema_version(db: Database) -> str | None:
    if not schema_exists(db):
        return None
    with db.transaction() as conn:
        return _stored_version(conn)


def _stored_version(conn: Connection) -> str | None:
    return conn.execute(select(s.VERSION.c.SCHEMA_VERSION)).scalar_one_or_none()


def init_schema(db: Database, default_catalog_location: str, wait_s: float = DEFAULT_SCHEMA_WAIT_S) -> bool:
    """prepare_schema under the schema lock (schema_lock): instances started together create it once."""
    with schema_lock(db, wait_s) as conn:
        return prepare_schema(conn, default_catalog_location)


def prepare_schema(conn: Connection, default_catalog_location: str) -> bool:
    """Creates Hive 4.0.0's schema with the rows Hive's script inserts and the default catalog; False if it
    was already there. A Hive 4.0.0 schema is served as it is: only a default catalog whose location Hive's
    script left to the metastore ('TBD') gets the warehouse, as the Java HMS does at its start. A schema an
    older hmsproxy created gets the tables and columns it lacks. Any other schema is refused before anything
    is written (servable_layout)."""
    layout = servable_layout(conn)
    if layout == "hive-2.3":  # no catalogs to locate: the default one is implied (store/sql/databases.py)
        conn.execute(single_row_statement(s.NOTIFICATION_SEQUENCE))  # Hive 2.3 leaves it to the first event's writer
        return False
    if layout in ("hive-4", "hive-3.1"):
        conn.execute(update(s.CTLGS).where(s.CTLGS.c.NAME == "hive", s.CTLGS.c.LOCATION_URI == "TBD")
                     .values(LOCATION_URI=default_catalog_location))
        return False
    created = layout == "empty"
    HIVE_SCHEMA.create_all(conn)
    if not created:
        for column in _add_new_columns(conn):
            log.info("added column %s, which this hmsproxy declares and the schema lacked", column)
        for model in catch_up_sequences(conn):
            log.info("moved the %s id counter past the ids in use", model)
    if created:
        conn.execute(insert(s.VERSION).values(VER_ID=1, SCHEMA_VERSION=s.SCHEMA_VERSION,
                                              VERSION_COMMENT="Hive release version " + s.SCHEMA_VERSION))
        conn.execute(insert(s.SEQUENCE_TABLE), [
            {"SEQUENCE_NAME": MODEL_PREFIX + model, "NEXT_VAL": 1} for model in ID_COLUMNS
        ])
        ctlg_id = reserve(conn, "MCatalog", 1)
        conn.execute(insert(s.CTLGS).values(CTLG_ID=ctlg_id, NAME="hive", DESC="Default catalog for Hive",
                                            LOCATION_URI=default_catalog_location))
    for statement in single_row_statements():
        conn.execute(statement)
    return created
