"""The database connection: engine per dialect, one transaction per call, id allocation, schema init.

Write transactions run READ COMMITTED on MariaDB/MySQL and PostgreSQL: REPEATABLE READ would fix a
transaction's snapshot at its first plain read, so a decision taken after waiting for a row lock (the
lock mutex, a table's row) would look at data older than the lock. Read-only transactions run
REPEATABLE READ: one snapshot for all their statements, so a read that assembles an object from several
tables never sees half of a concurrent change (a table whose storage descriptor was just replaced).
SQLite is serialised by the file:
a write transaction starts with BEGIN IMMEDIATE, so two processes never interleave their writes, and the
in-process lock spares threads the busy-waiting. On MariaDB/MySQL and PostgreSQL ids are reserved in a
short transaction of their own, so concurrent writers (also in other instances) only contend on
SEQUENCE_TABLE for a moment.

Conflicts the database resolves by failing one side (deadlocks, lock wait timeouts, serialization
failures, SQLite's "database is locked", a unique key taken by a concurrent insert) are retried by
`retrying_conflicts` with backoff: a call sees them only when they persist. All the waits of one such store call
on the database, its retries included, share one deadline, the statement timeout (`wait_bound_s`).

Creating or upgrading the schema is serialised across processes by `schema_lock`.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import math
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from pymysql.constants import CLIENT
from sqlalchemy import Connection, Engine, create_engine, event, insert, inspect, select, text, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.schema import CreateColumn

from hmsproxy.events.journal import Journal
from hmsproxy.events.messages import Event
from hmsproxy.idl import hms
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.hive_versions import HIVE_2_3, HIVE_3_1
from hmsproxy.store.sql.id_blocks import IdBlocks
from hmsproxy.store.sql.layout import FULL, Layout, column_names, install, stored_lower_case
from hmsproxy.store.sql.remembered_tables import Assumption
from hmsproxy.store.sql.row_inserts import Inserts, commit_already_sent, read_every_result, skip_commits_sent
from hmsproxy.store.sql.sequences import (
    ID_COLUMNS,
    MODEL_PREFIX,
    catch_up_sequences,
    reserve,
    single_row_statement,
    single_row_statements,
)
from hmsproxy.store.sql.upgrade import UPGRADABLE_FROM

T = TypeVar("T")
DEFAULT_CONFLICT_RETRIES = 10
RETRY_BASE_S, RETRY_MAX_S = 0.005, 0.5
# A pooled connection used within this many seconds is taken as alive; one idle for longer is pinged when it is
# checked out (a restarted database, a connection a firewall dropped), as SQLAlchemy's pool_pre_ping pings every
# checkout: a busy server saves one round trip per transaction. A connection that breaks all the same fails its
# call once, and SQLAlchemy then replaces every connection of the pool.
PING_IDLE_S = 1.0
POSTGRES_WAIT_MARGIN_S = 2.0  # a client-side wait outlasts the server's statement_timeout, which answers first
LAST_WAIT_S = 0.1   # what a commit or rollback due after a store call's deadline may still wait (wait_bound_s)
# MySQL/MariaDB error codes: 1213 deadlock, 1205 lock wait timeout, 1020 record changed since last read.
MYSQL_CONFLICTS = {1213: "deadlock", 1205: "lock wait timeout", 1020: "write conflict"}
# PostgreSQL SQLSTATEs: serialization failure, deadlock detected.
POSTGRES_CONFLICTS = {"40001": "serialization failure", "40P01": "deadlock"}
SQLITE_BUSY_TIMEOUT_S = 30   # how long an SQLite statement waits for another process's write to end
# The schema lock (schema_lock). MySQL's GET_LOCK names are server-wide: this one is the database's own.
MYSQL_TAKE = text("SELECT GET_LOCK(CONCAT('hmsproxy.schema.', MD5(DATABASE())), :wait)")
MYSQL_RELEASE = text("SELECT RELEASE_LOCK(CONCAT('hmsproxy.schema.', MD5(DATABASE())))")
# PostgreSQL's advisory locks are per database already; the key is ours ("hmsschem" as a number)
POSTGRES_TAKE = text(f"SELECT pg_advisory_xact_lock({int.from_bytes(b'hmsschem', 'big')})")
POSTGRES_LOCK_NOT_AVAILABLE = "55P03"
DEFAULT_SCHEMA_WAIT_S = 300.0   # config.Settings.db_schema_wait_s
log = logging.getLogger(__name__)

def normalise_url(url: str) -> str:
    """Accepts the short forms operators type (`mysql://`, `postgresql://`) and picks our drivers."""
    parsed = make_url(url)
    driver = {"mysql": "mysql+pymysql", "mariadb": "mysql+pymysql", "postgresql": "postgresql+psycopg",
              "postgres": "postgresql+psycopg"}.get(parsed.drivername)
    if driver:
        parsed = parsed.set(drivername=driver)
    if parsed.get_backend_name() == "mysql" and "charset" not in parsed.query:
        parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    return parsed.render_as_string(hide_password=False)


# MySQL/MariaDB without strict mode store text a column's character set cannot hold as '?' (Hive's MySQL
# tables are latin1) and cut text that is too long: strict, they refuse it (dispatch.py says what was refused).
# MariaDB cuts a JSON_ARRAYAGG (json_rows.py) at group_concat_max_len, 1 MB by default: no limit here.
# NO_BACKSLASH_ESCAPES: a quote is the only character pymysql must escape in a string then, which it does with one
# str.replace; otherwise its per-character escaping costs an eighth of the CPU of a bulk add_partitions.
STRICT_SESSION = ("SET SESSION sql_mode = TRIM(BOTH ',' FROM CONCAT(@@SESSION.sql_mode, "
                  "',STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES')), SESSION group_concat_max_len = 4294967295")
# Query keys of a MySQL URL that ask for TLS: SQLAlchemy's ssl_ca, ssl_cert, ssl_key, ssl_capath, ssl_cipher,
# ssl_check_hostname; pymysql's read_default_file and read_default_group (an option file may name ssl-ca).
TLS_QUERY_PREFIXES = ("ssl_", "read_default_")


def _driver_options(url: str, connect_timeout_s: float, statement_timeout_s: float) -> dict[str, Any]:
    """Driver options: what row_inserts relies on (see there), and bounds on every wait on the database, so that
    one that stops answering fails calls within the bound instead of hanging them. MySQL/MariaDB: the client's
    own connect, read and write timeouts (and strict mode), and TLS only where the URL asks for it. PostgreSQL:
    connect timeout, the server's statement_timeout, and TCP keepalives and tcp_user_timeout for a peer that
    vanished from the network (libpq has no read timeout of its own)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "mysql":
        mysql: dict[str, Any] = {
            "connect_timeout": max(1, round(connect_timeout_s)), "read_timeout": statement_timeout_s,
            "write_timeout": statement_timeout_s, "init_command": STRICT_SESSION,
            # row_inserts sends a write's inserts as one query; FOUND_ROWS is SQLAlchemy's own flag, which a
            # client_flag given here replaces (an UPDATE counts the rows it matched, not only those it changed)
            "client_flag": CLIENT.MULTI_STATEMENTS | CLIENT.FOUND_ROWS}
        # pymysql 1.2 tries TLS on every connection nothing configured: it builds an SSL context from the system's
        # certificates for each (18 ms of CPU here), then encrypts without checking whom it talks to. TLS that
        # protects is asked for in the URL (ssl_ca=..., read_default_file=...) and is then required.
        if not any(key.startswith(TLS_QUERY_PREFIXES) for key in parsed.query):
            mysql["ssl_disabled"] = True
        return mysql
    statement_ms = int(statement_timeout_s * 1000)
    # standard_conforming_strings (PostgreSQL's default): row_inserts writes text literals by that rule
    options = f"-c statement_timeout={statement_ms} -c standard_conforming_strings=on"
    return {"connect_timeout": max(1, round(connect_timeout_s)), "options": options,
            "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3,
            "tcp_user_timeout": statement_ms}


class EventWatcher(Protocol):
    """Follows the writes that append events, each by a number of its own: told before the query that appends
    them goes out (on MySQL and MariaDB that query commits too, so the events may be in the log before anyone
    knows their ids), then either the events with their ids once the write committed, or that it failed (the
    database may then give those ids to another writer's events, and a commit whose answer was lost reads as
    another writer's)."""

    def sending(self, write: int) -> None: ...

    def committed(self, write: int, events: list[tuple[int, Event]]) -> None: ...

    def abandoned(self, write: int) -> None: ...


class Database:
    """Owns the engine; `transaction()` is the only way the store talks to the database."""

    def __init__(self, url: str, pool_size: int = 16, added_latency_ms: float = 0.0,
                 conflict_retries: int = DEFAULT_CONFLICT_RETRIES, connect_timeout_s: float = 10.0,
                 statement_timeout_s: float = 60.0, ping_idle_s: float = PING_IDLE_S,
                 connection_waited: Callable[[float], None] = lambda seconds: None) -> None:
        self.url = normalise_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        self.conflict_retries = conflict_retries
        self.statement_timeout_s = statement_timeout_s
        if self.is_sqlite:
            self.engine: Engine = create_engine(self.url, connect_args={"check_same_thread": False,
                                                                   "timeout": SQLITE_BUSY_TIMEOUT_S})
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _sqlite_begin)
            self._writer: Engine = self.engine.execution_options(sqlite_begin="BEGIN IMMEDIATE")
            engines = [self.engine]
        else:  # two pools, so that no transaction pays for switching a connection's isolation level
            # Every checkout is an `engine.begin()` block, which ends its transaction (commit, or rollback on
            # error), so the pool's own rollback when a connection comes back would be a wasted round trip.
            pooling = {"pool_size": pool_size, "max_overflow": pool_size, "pool_recycle": 3600,
                       "pool_reset_on_return": None,
                       "connect_args": _driver_options(self.url, connect_timeout_s, statement_timeout_s)}
            self.engine = create_engine(self.url, isolation_level="REPEATABLE READ", **pooling)
            self._writer = create_engine(self.url, isolation_level="READ COMMITTED", **pooling)
            engines = [self.engine, self._writer]
            for engine in engines:
                _ping_when_idle(engine, ping_idle_s)
            if self.engine.dialect.name == "mysql":
                for engine in engines:
                    read_every_result(engine)
                    skip_commits_sent(engine)
                    _bound_mysql_waits(engine, self)
            if self.engine.dialect.name == "postgresql":
                for engine in engines:
                    _bound_postgres_waits(engine, self)
        self.engines = engines   # every pool this database talks through
        self.layout = FULL  # until adopt()
        self._sqlite_lock = threading.RLock()
        self._retrying = threading.local()
        self._id_blocks = IdBlocks()
        self.event_watchers: list[EventWatcher] = []
        self._write_numbers = itertools.count(1)   # the writes the watchers follow
        self.connection_waited = connection_waited   # each wait for a pooled connection, in seconds (a metric's)
        for engine in engines if added_latency_ms > 0 else []:
            _add_round_trip_latency(engine, added_latency_ms / 1000.0)

    @property
    def is_memory(self) -> bool:
        """An in-memory SQLite database: no other process can open it."""
        url = make_url(self.url)
        return self.is_sqlite and (not url.database or ":memory:" in url.database or url.query.get("mode") == "memory")

    @contextlib.contextmanager
    def transaction(self, write: bool = False, journal: Journal | None = None) -> Iterator[Connection]:
        """One database transaction: committed when the block ends, rolled back if it raises.

        A write transaction (every transaction that may write: on SQLite it takes the write lock at once) given
        a journal waits for its `before_commit`, then appends the journal's unwritten events, those the block
        added included, and inserts the rows the block left in the journal, just before it commits (on MySQL and
        MariaDB in the query that commits); after the commit the journal holds their ids. `event_watchers` follow
        the events' fate (EventWatcher). A failed one leaves the journal as it was handed in."""
        if journal is not None and not write:
            raise ValueError("only a write transaction appends events")
        added_from = len(journal.events) if journal is not None else 0
        event_ids: list[int] = []
        appended: list[Event] = []
        write_number: int | None = None   # once its events are on their way
        asked = time.perf_counter()
        try:
            with (
                self._sqlite_lock if self.is_sqlite else contextlib.nullcontext(),
                (self._writer if write else self.engine).begin() as conn,
            ):
                self.connection_waited(time.perf_counter() - asked)
                yield conn
                if journal is not None:
                    journal.before_commit()
                    appended = journal.unwritten()
                    if appended:
                        write_number = next(self._write_numbers)
                        for watcher in self.event_watchers:
                            watcher.sending(write_number)
                    event_ids = self.append_events(conn, appended, journal.rows, commit=True, held=journal.held,
                                                   while_committing=journal.work_while_committing
                                                   if journal.while_committing else None)
        except BaseException:
            if journal is not None:
                journal.rolled_back(added_from)
            if write_number is not None:
                for watcher in self.event_watchers:
                    watcher.abandoned(write_number)
            raise
        if journal is not None:
            journal.committed(event_ids)
        if write_number is not None:
            for watcher in self.event_watchers:
                watcher.committed(write_number, list(zip(event_ids, appended)))

    def connections_in_use(self) -> int:
        """Connections checked out of the pools now (0 for a pool that does not count them)."""
        return sum(getattr(engine.pool, "checkedout", lambda: 0)() for engine in self.engines)

    def adopt(self, layout: Layout) -> None:
        """From now on statements fit the schema the database holds (layout.py); once per layout."""
        if layout == self.layout:
            return
        self.layout = layout
        for engine in self.engines:
            install(engine, layout)

    def append_events(self, conn: Connection, events: Sequence[Event], rows: Inserts = (),
                      commit: bool = False, held: Assumption | None = None,
                      while_committing: Callable[[], None] | None = None) -> list[int]:
        """Appends events to the notification log in `conn`'s transaction, their row ids from this process's
        blocks, and inserts `rows` with them; returns their event ids. `commit`: the transaction has nothing else
        to do, and commits in the same query where it can (doing `while_committing` while that query runs);
        `held`: what the write assumed (event_log.append)."""
        return event_log.append(conn, events, self.allocate_ids(conn, "MNotificationLog", len(events)), self.layout,
                                rows, commit, held, while_committing)

    def allocate_ids(self, conn: Connection, model: str, count: int) -> int:
        """Reserves `count` consecutive ids for a model class; returns the first.

        On a database server they come from a block this process reserved ahead in a transaction of its own
        (id_blocks.py). SQLite has one writer at a time, the caller's: its ids are reserved in its transaction."""
        if count <= 0:
            return 0
        if self.is_sqlite:
            return reserve(conn, model, count)

        def reserve_apart(total: int) -> int:
            with self._writer.begin() as own:
                return reserve(own, model, total)
        return self._id_blocks.take(model, count, reserve_apart)

    def retrying_conflicts(self, call: Callable[[], T], what: str) -> T:
        """Runs `call` (whole database transactions), again with backoff while the database fails it with a
        conflict; a conflict that persists becomes a MetaException saying so. A call nested in another
        retried call runs once: the outer one repeats the whole. The whole has one deadline, the statement
        timeout from its start (wait_bound_s): no attempt begins after it."""
        if getattr(self._retrying, "active", False):
            return call()
        self._retrying.active = True
        self._retrying.deadline = time.monotonic() + self.statement_timeout_s
        try:
            for attempt in range(1, self.conflict_retries + 1):
                try:
                    return call()
                except sa_exc.DBAPIError as exc:
                    conflict = conflict_kind(exc)
                    if conflict is None:
                        raise
                    backoff = random.uniform(0.5, 1.0) * min(RETRY_BASE_S * 2 ** attempt, RETRY_MAX_S)
                    if attempt == self.conflict_retries or time.monotonic() + backoff >= self._retrying.deadline:
                        log.warning("%s: %s persisted after %d attempts", what, conflict, attempt)
                        raise hms.MetaException(
                            message=f"{what} failed: the metastore database reported a {conflict} with concurrent "
                                    f"changes {attempt} times in a row; nothing was changed, try again") from None
                    time.sleep(backoff)
            raise AssertionError("unreachable")
        finally:
            self._retrying.active = False
            self._retrying.deadline = None

    def wait_bound_s(self) -> float:
        """How long the next wait for the database may take: the statement timeout; within a store call
        (retrying_conflicts) what is left of the call's, so that the call as a whole (its statements, commit,
        id reservations, pings, new connections and retries) ends by one deadline instead of each wait taking
        the full timeout in turn. A commit or rollback due after the deadline still gets LAST_WAIT_S."""
        deadline = getattr(self._retrying, "deadline", None)
        if deadline is None:
            return self.statement_timeout_s
        return max(deadline - time.monotonic(), LAST_WAIT_S)

    def check_time_left(self) -> None:
        """Refuses to send a statement or open a connection once the store call's deadline has passed: the
        database that made it late would keep it waiting still."""
        deadline = getattr(self._retrying, "deadline", None)
        if deadline is not None and time.monotonic() >= deadline:
            raise self.engine.dialect.loaded_dbapi.OperationalError(
                f"the metastore database did not answer within {self.statement_timeout_s:g} s")

    def dispose(self) -> None:
        for engine in self.engines:
            engine.dispose()


def conflict_kind(error: sa_exc.DBAPIError) -> str | None:
    """What kind of transient conflict a database error is, or None when it is something else."""
    orig: Any = error.orig
    code = orig.args[0] if getattr(orig, "args", None) else None
    sqlstate = getattr(orig, "sqlstate", None)
    if code == 1062 or sqlstate == "23505" or "UNIQUE constraint failed" in str(orig):
        return "duplicate key"  # a concurrent insert won: the repeated call sees it and answers accordingly
    if isinstance(code, int) and code in MYSQL_CONFLICTS:
        return MYSQL_CONFLICTS[code]
    if sqlstate in POSTGRES_CONFLICTS:
        return POSTGRES_CONFLICTS[sqlstate]
    if isinstance(orig, sqlite3.OperationalError) and ("locked" in str(orig) or "busy" in str(orig)):
        return "locked database"
    return None


def retried(method: Callable[..., T]) -> Callable[..., T]:
    """Makes a store method (one database transaction) repeat on conflicts, see `retrying_conflicts`."""
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> T:
        return self.db.retrying_conflicts(lambda: method(self, *args, **kwargs), method.__name__)
    return call


def _ping_when_idle(engine: Engine, idle_s: float) -> None:
    """Pings a pooled connection at checkout when it has been idle for `idle_s` or longer (PING_IDLE_S); a dead
    one is replaced by a new connection before any statement runs on it."""
    @event.listens_for(engine, "checkin")
    def checked_in(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info["checked_in_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def checked_out(dbapi_connection: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        since = record.info.get("checked_in_at")   # none on a new connection: it was just made
        if since is None or time.monotonic() - since < idle_s:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise sa_exc.DisconnectionError(f"a pooled connection idle for {time.monotonic() - since:.0f} s is "
                                            f"gone: {exc}") from exc


def _add_round_trip_latency(engine: Engine, seconds: float) -> None:
    """Models a remote database (benchmarks): every statement and every commit waits `seconds` more."""
    def wait(*_args: object) -> None:
        time.sleep(seconds)

    def wait_unless_sent(conn: Connection) -> None:   # a COMMIT that went with the last query cost nothing more
        if not commit_already_sent(conn.connection):
            time.sleep(seconds)

    event.listen(engine, "before_cursor_execute", wait)
    event.listen(engine, "commit", wait_unless_sent)


def _bound_mysql_waits(engine: Engine, db: Database) -> None:
    """Bounds each wait for a MySQL/MariaDB answer by db.wait_bound_s: pymysql's read and write timeouts
    (attributes it reads at every packet; it takes them only as connect arguments otherwise) are set before
    each thing that waits, a new connection's handshake, a pooled one's ping, a statement, a commit, a rollback.
    A statement or connection due after the store call's deadline is refused (check_time_left)."""
    def bound(driver: Any) -> None:
        driver._read_timeout = driver._write_timeout = db.wait_bound_s()

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Any, record: Any, cargs: Any, cparams: Any) -> None:
        db.check_time_left()
        cparams["read_timeout"] = cparams["write_timeout"] = db.wait_bound_s()
        cparams["connect_timeout"] = min(cparams["connect_timeout"], cparams["read_timeout"])

    @event.listens_for(engine, "checkout", insert=True)   # before _ping_when_idle's ping
    def checked_out(driver: Any, _record: Any, _proxy: Any) -> None:
        bound(driver)

    @event.listens_for(engine, "before_cursor_execute")
    def executing(conn: Connection, *_args: Any) -> None:
        db.check_time_left()
        bound(conn.connection.dbapi_connection)

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def ending(conn: Connection) -> None:
        if not (conn.closed or conn.invalidated) and conn.connection.dbapi_connection is not None:
            bound(conn.connection.dbapi_connection)


def _bound_postgres_waits(engine: Engine, db: Database) -> None:
    """Gives every wait for a PostgreSQL answer a deadline: db.wait_bound_s, and POSTGRES_WAIT_MARGIN_S more,
    so that the server's statement_timeout answers first where it can. libpq has no read timeout: a database
    that takes the bytes and never answers (a stalled proxy, a half-dead peer that still acknowledges) would
    hold a call for ever, where statement_timeout (the server's) and TCP's timeouts see nothing. A
    connection whose wait expired is closed, so the pool drops it and the call fails as a lost database. A
    statement or connection due after the store call's deadline is refused (check_time_left)."""
    import psycopg

    class BoundedWaits(psycopg.Connection):
        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            bound = db.wait_bound_s() + POSTGRES_WAIT_MARGIN_S if timeout is None else timeout
            try:
                return super().wait(gen, interval=interval, timeout=bound)
            except psycopg.errors._WaitTimeout:  # psycopg's own signal that the deadline passed
                self.close()
                raise

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Any, record: Any, cargs: Any, cparams: Any) -> Any:
        db.check_time_left()
        cparams["connect_timeout"] = max(1, math.ceil(min(cparams["connect_timeout"], db.wait_bound_s())))
        return BoundedWaits.connect(*cargs, **cparams)

    @event.listens_for(engine, "before_cursor_execute")
    def executing(*_args: Any) -> None:
        db.check_time_left()


def _sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun by _sqlite_begin, not by the driver
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=OFF")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    """Begins SQLite transactions ourselves: the driver would begin only at the first write, leaving the
    reads before it outside the transaction (two processes could then read and reserve the same id)."""
    conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))


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
    driver: Any = conn.connection.dbapi_connection
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
    for table in s.metadata.sorted_tables:
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
    s.metadata.create_all(conn)
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
