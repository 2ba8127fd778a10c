"""Wake-ups between instances: a change through one instance reaches another's cache through the wake-up its
commit sends, not the timed poll (set to a minute here, past the wait's timeout); and an idle instance reads
the notification log's head, not the log."""
from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import event

from hmsproxy.idl import hms
from hmsproxy.ops.config import Settings
from hmsproxy.ops.peer_wake import MAGIC, PeerWake
from hmsproxy.server import start
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.wake_peers import WakePeers
from support.builders import connect_thrift, placeholder_sd
from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy_process
from support.polling import wait_for

NEVER_POLLED_S = "60"    # the fallback poll: longer than the wait below, so only a wake-up can show the change
SEEN_WITHIN_S = 30.0     # generous: bounds a broken test only
IDLE_ROUNDS = 20


def _table(db: str, version: int) -> hms.Table:
    return hms.Table(tableName="t", dbName=db, sd=placeholder_sd(columns=[("a", "int")]), partitionKeys=[],
                     parameters={"version": str(version)}, tableType="EXTERNAL_TABLE")


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_change_through_one_instance_wakes_the_other(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        a = start_hmsproxy_process(tmp_path / "a", url, "--poll-interval-s", NEVER_POLLED_S)
        b = None
        try:
            ca = connect_thrift(a)
            db = f"db_{uuid.uuid4().hex[:8]}"
            ca.create_database(hms.Database(name=db, parameters={}))
            ca.create_table(_table(db, 1))
            b = start_hmsproxy_process(tmp_path / "b", url, "--poll-interval-s", NEVER_POLLED_S)
            cb = connect_thrift(b)
            assert cb.get_table(db, "t").parameters["version"] == "1"   # in B's cache from its prewarm
            for version in (2, 3):   # the first wake-up and a later one
                table = ca.get_table(db, "t")
                table.parameters["version"] = str(version)
                ca.alter_table(db, "t", table)
                wait_for(lambda v=version: cb.get_table(db, "t").parameters["version"] == str(v),
                         f"B shows version {version} written through A", SEEN_WITHIN_S)
            ca.close()
            cb.close()
        finally:
            a.stop()
            if b is not None:
                b.stop()


def test_an_idle_instance_reads_only_the_log_head(tmp_path):
    """Each round of an idle instance is one read of NOTIFICATION_SEQUENCE; the log itself is not read."""
    with fresh_database("sqlite", tmp_path) as url:
        server = start(Settings(port=0, metrics_port=0, db=url, warehouse=str(tmp_path / "warehouse"),
                                poll_interval_s=0.02, unlogged_check_s=0))
        statements: list[str] = []
        lock = threading.Lock()

        def seen(conn, cursor, statement, parameters, context, executemany):
            if threading.current_thread().name == "notification-poller" and statement != "BEGIN":  # SQLite's
                with lock:
                    statements.append(statement)

        engine = server.store.delegate.db.engine
        try:
            wait_for(lambda: server.loader.complete.is_set(), "prewarm done", SEEN_WITHIN_S)
            wait_for(lambda: server.poller.metrics.notification_last_poll._value.get() > 0, "a first round",
                     SEEN_WITHIN_S)   # its first round also cleans the log, a minutely chore
            event.listen(engine, "before_cursor_execute", seen)
            wait_for(lambda: len(statements) >= IDLE_ROUNDS, f"{IDLE_ROUNDS} idle rounds", SEEN_WITHIN_S)
            with lock:
                rounds = list(statements)
            assert all("NOTIFICATION_SEQUENCE" in s and "NOTIFICATION_LOG" not in s for s in rounds), rounds
        finally:
            event.remove(engine, "before_cursor_execute", seen)
            server.stop()


def test_only_the_wake_word_wakes_and_peers_find_each_other_through_the_database(tmp_path):
    """Two PeerWake on one database (rows in AUX_TABLE): a datagram that is not the word wakes nothing, each word
    wakes the receiver once, and stopped instances leave the directory."""
    db = Database(f"sqlite:///{tmp_path / 'metastore.db'}")
    init_schema(db, str(tmp_path / "warehouse"))
    woken = {"a": 0, "b": 0}

    def wake(name: str) -> Callable[[], None]:
        def count() -> None:
            woken[name] += 1
        return count
    a = PeerWake(WakePeers(db), wake("a"), bind_host="127.0.0.1", port=0, wake_host="")
    b = PeerWake(WakePeers(db), wake("b"), bind_host="127.0.0.1", port=0, wake_host="")
    a.start()
    b.start()
    try:
        wait_for(lambda: len(a.peers()) == 1 and len(b.peers()) == 1, "each finds the other", SEEN_WITHIN_S)
        host, _, port = b.address.rpartition(":")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stray:
            for garbage in (b"", b"hello", MAGIC + b"x", MAGIC * 10, MAGIC[:-1]):
                stray.sendto(garbage, (host, int(port)))
        a.committed(1, [])
        wait_for(lambda: woken["b"] >= 2, "b woken by a's hello and by a's commit", SEEN_WITHIN_S)
    finally:
        b.stop()   # its receiver handles every datagram sent before it stops
        a.stop()
    assert woken["b"] == 2   # a's hello when it found b (once: later lookups greet only new peers), a's commit
    assert WakePeers(db).peers("") == []
    db.engine.dispose()
