"""Conflicts the database resolves by failing one side are repeated inside the server: real deadlocks on
MariaDB and PostgreSQL and a locked SQLite file, made with two connections, are retried until the call
succeeds, and a conflict that persists answers a MetaException that says what happened."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from hmsproxy.idl import hms
from hmsproxy.store.sql.database import Database
from support.databases import fresh_database


def _deadlock(db: Database) -> None:
    """Two transactions lock rows a and b in opposite orders; the database fails one of them with its
    deadlock error, which is raised here whichever side it chose (the other commits)."""
    first_locked, second_locked = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def other() -> None:
        try:
            with db.engine.begin() as conn:
                conn.execute(text("UPDATE pair SET v = v + 1 WHERE k = 'b'"))
                second_locked.set()
                first_locked.wait(10)
                conn.execute(text("UPDATE pair SET v = v + 1 WHERE k = 'a'"))
        except BaseException as exc:  # the side the database chose to fail
            failure.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE pair SET v = v + 1 WHERE k = 'a'"))
            second_locked.wait(10)
            first_locked.set()
            conn.execute(text("UPDATE pair SET v = v + 1 WHERE k = 'b'"))
    finally:
        thread.join()
    if failure:
        raise failure[0]


@pytest.fixture(params=["mariadb", "postgres"])
def server_db(request, tmp_path):
    with fresh_database(request.param, tmp_path) as url:
        db = Database(url, conflict_retries=4)
        with db.engine.begin() as conn:
            conn.execute(text("CREATE TABLE pair (k VARCHAR(8) PRIMARY KEY, v INTEGER)"))
            conn.execute(text("INSERT INTO pair VALUES ('a', 0), ('b', 0)"))
        yield db
        db.dispose()


def test_a_deadlocked_call_is_repeated_until_it_succeeds(server_db):
    attempts = []

    def call() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            _deadlock(server_db)  # raises the database's deadlock error
            raise AssertionError("the database resolved no deadlock")
        return "done"

    assert server_db.retrying_conflicts(call, "test_call") == "done"
    assert len(attempts) == 3


def test_a_persistent_conflict_answers_a_meta_exception(server_db):
    attempts = []

    def call() -> None:
        attempts.append(1)
        _deadlock(server_db)

    try:
        server_db.retrying_conflicts(call, "test_call")
    except hms.MetaException as exc:
        assert "test_call failed" in exc.message and "deadlock" in exc.message
    else:
        pytest.fail("a persistent deadlock was not answered with a MetaException")
    assert len(attempts) == 4


def test_a_locked_sqlite_database_is_waited_out(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    db = Database(url, conflict_retries=5)
    with db.transaction(write=True) as conn:
        conn.execute(text("CREATE TABLE t (v INTEGER)"))
    impatient = create_engine(url, connect_args={"timeout": 0})  # "database is locked" at once, no busy wait
    release, holding = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with Database(url).transaction(write=True) as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    holding.wait(10)
    attempts = []

    def call() -> int:
        attempts.append(1)
        if len(attempts) == 2:  # the other writer commits before the second attempt
            release.set()
            holder.join()
        with impatient.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (2)"))
        return len(attempts)

    assert db.retrying_conflicts(call, "insert") == 2
    with db.transaction() as conn:
        assert sorted(conn.execute(text("SELECT v FROM t")).scalars()) == [1, 2]
    impatient.dispose()
    db.dispose()
