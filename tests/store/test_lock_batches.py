"""Lock requests that arrive together are decided in one transaction, each as if it had come alone after the
ones before it: on every backend, requests queued behind a held decision mutex are answered by one batch
with the same states, blockers and errors as one-by-one decisions would give."""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise

import pytest
from sqlalchemy import create_engine, text
from thriftpy2.thrift import TException

from hmsproxy.idl import hms
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.store import SqlStore
from support.databases import fresh_database
from support.polling import wait_for


@pytest.fixture(params=["sqlite", "mariadb", "postgres"])
def store(request, tmp_path):
    with fresh_database(request.param, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        store = SqlStore(db)
        yield store
        store.close()


@contextmanager
def decision_mutex_held(url: str) -> Iterator[None]:
    """Holds what every lock decision takes first (the NEXT_LOCK_ID row; SQLite: the write lock) from a
    connection of its own, so lock requests queue up behind it."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text('SELECT "NL_NEXT" FROM "NEXT_LOCK_ID" FOR UPDATE' if engine.dialect.name == "postgresql"
                              else "SELECT NL_NEXT FROM NEXT_LOCK_ID FOR UPDATE"))
            yield
    finally:
        engine.dispose()


def _component(table: str, kind: int = hms.LockType.EXCLUSIVE) -> hms.LockComponent:
    return hms.LockComponent(type=kind, level=hms.LockLevel.TABLE, dbname="d", tablename=table)


def test_queued_requests_are_decided_together_as_one_by_one(store):
    aborted_txn = store.open_txns(1, "u", "h", None, None)[0]
    store.abort_txns([aborted_txn])
    batches: list[int] = []
    decide = store._decide_new_locks

    def counted(requests):
        batches.append(len(requests))
        return decide(requests)

    store._decide_new_locks = counted
    requests = {"first": ([_component("t")], None)}
    requests |= {f"x{i}": ([_component("t")], None) for i in range(6)}
    requests |= {"aborted": ([_component("t")], aborted_txn),
                 "other table": ([_component("u", hms.LockType.SHARED_READ)], None)}
    got: dict[str, object] = {}

    def ask(name: str) -> None:
        components, txn_id = requests[name]
        try:
            got[name] = store.lock(components, txn_id, "u", "h", None)
        except TException as refused:
            got[name] = refused

    with decision_mutex_held(store.db.url):
        threads = [threading.Thread(target=ask, args=(name,)) for name in requests]
        threads[0].start()
        wait_for(lambda: batches, "the first request took the turn and waits for the mutex", timeout=20,
                 interval=0.001)
        for thread in threads[1:]:
            thread.start()
        wait_for(lambda: store.lock_requests.queued() >= len(requests) - 1, "the other requests queued", timeout=20,
                 interval=0.001)
    for thread in threads:
        thread.join(30)

    assert batches == [1, len(requests) - 1]
    assert isinstance(got["aborted"], hms.TxnAbortedException)
    assert got["first"].state == hms.LockState.ACQUIRED
    assert got["other table"].state == hms.LockState.ACQUIRED
    queue = sorted([got["first"]] + [got[f"x{i}"] for i in range(6)], key=lambda outcome: outcome.lock_id)
    assert queue[0] is got["first"]
    for before, waiting in pairwise(queue):  # each waits for the one before it, as in Hive
        assert (waiting.state, waiting.blocked_by) == (hms.LockState.WAITING, before.lock_id)
    ids = [outcome.lock_id for outcome in got.values() if not isinstance(outcome, Exception)]
    assert len(set(ids)) == len(ids) == len(requests) - 1
    shown = {(lock.lockid, lock.state) for lock in store.show_locks("d", None, None, None)}
    assert shown == {(o.lock_id, o.state) for o in got.values() if not isinstance(o, Exception)}
