"""How the engine of each dialect connects: the URL forms operators type, driver options (strict MySQL sessions,
TLS only where asked, PostgreSQL's statement timeout), pings of idle pooled connections, a bound on every wait for
the database, SQLite's pragmas and BEGIN. Database (database.py) builds its engines with these; the transactions
it runs on them are its own job.
"""
from __future__ import annotations

import math
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from pymysql.connections import Connection as MySQLConnection
from pymysql.constants import CLIENT
from sqlalchemy import Connection, Dialect, Engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry

from hmsproxy.store.sql.row_inserts import commit_already_sent

if TYPE_CHECKING:
    from hmsproxy.store.sql.database import Database

# A pooled connection used within this many seconds is taken as alive; one idle for longer is pinged when it is
# checked out (a restarted database, a connection a firewall dropped), as SQLAlchemy's pool_pre_ping pings every
# checkout: a busy server saves one round trip per transaction. A connection found broken all the same makes
# SQLAlchemy replace every connection of the pool, and the store call runs once more if it had not begun to commit
# (Database.retrying_conflicts).
PING_IDLE_S = 1.0
POSTGRES_WAIT_MARGIN_S = 2.0  # a client-side wait outlasts the server's statement_timeout, which answers first
SQLITE_BUSY_TIMEOUT_S = 30   # how long an SQLite statement waits for another process's write to end
WAL_SWITCH_RETRY_S = 0.01


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


def driver_options(url: str, connect_timeout_s: float, statement_timeout_s: float) -> dict[str, object]:
    """Driver options: what row_inserts relies on (see there), and bounds on every wait on the database, so that
    one that stops answering fails calls within the bound instead of hanging them. MySQL/MariaDB: the client's
    own connect, read and write timeouts (and strict mode), and TLS only where the URL asks for it. PostgreSQL:
    connect timeout, the server's statement_timeout, and TCP keepalives and tcp_user_timeout for a peer that
    vanished from the network (libpq has no read timeout of its own)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "mysql":
        mysql: dict[str, object] = {
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


def ping_when_idle(engine: Engine, idle_s: float) -> None:
    """Pings a pooled connection at checkout when it has been idle for `idle_s` or longer (PING_IDLE_S); a dead
    one is replaced by a new connection before any statement runs on it."""
    @event.listens_for(engine, "checkin")
    def checked_in(_dbapi_connection: object, record: ConnectionPoolEntry) -> None:
        record.info["checked_in_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def checked_out(dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, _proxy: object) -> None:
        since = record.info.get("checked_in_at")   # none on a new connection: it was just made
        if since is None or time.monotonic() - since < idle_s:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise sa_exc.DisconnectionError(f"a pooled connection idle for {time.monotonic() - since:.0f} s is "
                                            f"gone: {exc}") from exc


def add_round_trip_latency(engine: Engine, seconds: float) -> None:
    """Models a remote database (benchmarks): every statement and every commit waits `seconds` more."""
    def wait(*_args: object) -> None:
        time.sleep(seconds)

    def wait_unless_sent(conn: Connection) -> None:   # a COMMIT that went with the last query cost nothing more
        if not commit_already_sent(conn.connection):
            time.sleep(seconds)

    event.listen(engine, "before_cursor_execute", wait)
    event.listen(engine, "commit", wait_unless_sent)


def bound_mysql_waits(engine: Engine, db: Database) -> None:
    """Bounds each wait for a MySQL/MariaDB answer by db.wait_bound_s: pymysql's read and write timeouts
    (attributes it reads at every packet; it takes them only as connect arguments otherwise) are set before
    each thing that waits, a new connection's handshake, a pooled one's ping, a statement, a commit, a rollback.
    A statement or connection due after the store call's deadline is refused (check_time_left)."""
    def bound(driver: MySQLConnection) -> None:
        driver._read_timeout = driver._write_timeout = db.wait_bound_s()

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Dialect, record: ConnectionPoolEntry, cargs: object, cparams: dict[str, Any]) -> None:
        db.check_time_left()
        cparams["read_timeout"] = cparams["write_timeout"] = db.wait_bound_s()
        cparams["connect_timeout"] = min(cparams["connect_timeout"], cparams["read_timeout"])

    @event.listens_for(engine, "checkout", insert=True)   # before ping_when_idle's ping
    def checked_out(driver: MySQLConnection, _record: object, _proxy: object) -> None:
        bound(driver)

    @event.listens_for(engine, "before_cursor_execute")
    def executing(conn: Connection, *_args: object) -> None:
        db.check_time_left()
        bound(conn.connection.dbapi_connection)

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def ending(conn: Connection) -> None:
        if not (conn.closed or conn.invalidated) and conn.connection.dbapi_connection is not None:
            bound(conn.connection.dbapi_connection)


def bound_postgres_waits(engine: Engine, db: Database) -> None:
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
    def connect(dialect: Dialect, record: ConnectionPoolEntry, cargs: Any, cparams: dict[str, Any]) -> BoundedWaits:
        db.check_time_left()
        cparams["connect_timeout"] = max(1, math.ceil(min(cparams["connect_timeout"], db.wait_bound_s())))
        return BoundedWaits.connect(*cargs, **cparams)

    @event.listens_for(engine, "before_cursor_execute")
    def executing(*_args: object) -> None:
        db.check_time_left()


def sqlite_pragmas(dbapi_conn: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun by sqlite_begin, not by the driver
    cursor = dbapi_conn.cursor()
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=OFF")
    cursor.close()


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """Write-ahead logging, which the file keeps once switched. Processes opening a new file at one moment all try
    the switch, and SQLite refuses all but one at once ("database is locked") rather than wait out the busy timeout
    (they would deadlock): a refused one tries again, and finds the file switched."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(WAL_SWITCH_RETRY_S)


def sqlite_begin(conn: Connection) -> None:
    """Begins SQLite transactions ourselves: the driver would begin only at the first write, leaving the
    reads before it outside the transaction (two processes could then read and reserve the same id)."""
    conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))
