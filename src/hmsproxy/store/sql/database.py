"""The database a store talks to: one transaction per call, its events appended and its ids allocated.

Its engines connect as engines.py sets them up; the schema they serve is set up by schema_setup.py.

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
`retrying_conflicts` with backoff: a call sees them only when they persist. So is, once, a pooled connection
that turns out broken (the database restarted, a link cut) before the call began to commit: the database
rolled that transaction back, and the pool's connections are replaced. All the waits of one such store call
on the database, its retries included, share one deadline, the statement timeout (`wait_bound_s`).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from hmsproxy.events.journal import Held, Journal
from hmsproxy.events.messages import Event
from hmsproxy.idl import hms
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql.engines import (
    PING_IDLE_S,
    SQLITE_BUSY_TIMEOUT_S,
    add_round_trip_latency,
    bound_mysql_waits,
    bound_postgres_waits,
    driver_options,
    normalise_url,
    ping_when_idle,
    sqlite_begin,
    sqlite_pragmas,
)
from hmsproxy.store.sql.id_blocks import IdBlocks
from hmsproxy.store.sql.layout import FULL, Layout, install
from hmsproxy.store.sql.row_inserts import Inserts, read_every_result, skip_commits_sent
from hmsproxy.store.sql.sequences import reserve

T = TypeVar("T")
DEFAULT_CONFLICT_RETRIES = 10
RETRY_BASE_S, RETRY_MAX_S = 0.005, 0.5
LAST_WAIT_S = 0.1   # what a commit or rollback due after a store call's deadline may still wait (wait_bound_s)
# MySQL/MariaDB error codes: 1213 deadlock, 1205 lock wait timeout, 1020 record changed since last read.
MYSQL_CONFLICTS = {1213: "deadlock", 1205: "lock wait timeout", 1020: "write conflict"}
# PostgreSQL SQLSTATEs: serialization failure, deadlock detected.
POSTGRES_CONFLICTS = {"40001": "serialization failure", "40P01": "deadlock"}
log = logging.getLogger(__name__)


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
            event.listen(self.engine, "connect", sqlite_pragmas)
            event.listen(self.engine, "begin", sqlite_begin)
            self._writer: Engine = self.engine.execution_options(sqlite_begin="BEGIN IMMEDIATE")
            engines = [self.engine]
        else:  # two pools, so that no transaction pays for switching a connection's isolation level
            # Every checkout is an `engine.begin()` block, which ends its transaction (commit, or rollback on
            # error), so the pool's own rollback when a connection comes back would be a wasted round trip.
            pooling = {"pool_size": pool_size, "max_overflow": pool_size, "pool_recycle": 3600,
                       "pool_reset_on_return": None,
                       "connect_args": driver_options(self.url, connect_timeout_s, statement_timeout_s)}
            self.engine = create_engine(self.url, isolation_level="REPEATABLE READ", **pooling)
            self._writer = create_engine(self.url, isolation_level="READ COMMITTED", **pooling)
            engines = [self.engine, self._writer]
            for engine in engines:
                ping_when_idle(engine, ping_idle_s)
            if self.engine.dialect.name == "mysql":
                for engine in engines:
                    read_every_result(engine)
                    skip_commits_sent(engine)
                    bound_mysql_waits(engine, self)
            if self.engine.dialect.name == "postgresql":
                for engine in engines:
                    bound_postgres_waits(engine, self)
        self.engines = engines   # every pool this database talks through
        self.layout = FULL  # until adopt()
        self._sqlite_lock = threading.RLock()
        self._retrying = threading.local()
        self._id_blocks = IdBlocks()
        self.event_watchers: list[EventWatcher] = []
        self._write_numbers = itertools.count(1)   # the writes the watchers follow
        self.connection_waited = connection_waited   # each wait for a pooled connection, in seconds (a metric's)
        for engine in engines if added_latency_ms > 0 else []:
            add_round_trip_latency(engine, added_latency_ms / 1000.0)

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
                self._retrying.commit_begun = True   # from here a lost connection leaves the outcome unknown
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
                      commit: bool = False, held: Held | None = None,
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
                self._retrying.commit_begun = False
                try:
                    return call()
                except sa_exc.DBAPIError as exc:
                    if attempt == 1 and exc.connection_invalidated and not self._retrying.commit_begun:
                        log.info("%s: a pooled connection was found broken before anything was committed; "
                                 "trying once more on a new one", what)
                        continue
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
        deadline: float | None = getattr(self._retrying, "deadline", None)
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


class _OnDatabase(Protocol):
    """A store part: SqlStore's mixins, each given the Database."""
    db: Database


S = TypeVar("S", bound=_OnDatabase)
P = ParamSpec("P")


def retried(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """Makes a store method (one database transaction) repeat on conflicts, see `retrying_conflicts`."""
    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.db.retrying_conflicts(lambda: method(self, *args, **kwargs), method.__name__)
    return call
