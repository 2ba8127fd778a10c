"""The poller of one instance: it catches up after being stopped, reloads the cache when the events it
needs were cleaned up, and survives the database going away, recovering by itself."""
from __future__ import annotations

import multiprocessing
import threading
import uuid

import pytest
import thriftpy2.rpc
from sqlalchemy import create_engine, text

from hmsproxy.idl import hms
from hmsproxy.ops.config import Settings
from hmsproxy.server import start
from hmsproxy.store.cache.poller import Poller
from support.builders import placeholder_sd
from support.databases import fresh_database
from support.polling import wait_for
from support.tcp_proxy import TcpProxy

DEADLINE_S = 10.0


def connect(port):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=60000)


def _server(url, workdir):
    return start(Settings(port=0, metrics_port=0, db=url, warehouse=str(workdir / "warehouse"), poll_interval_s=0.05))


def _table(db, version):
    return hms.Table(tableName="t", dbName=db, sd=placeholder_sd(columns=[("a", "int")]),
                     partitionKeys=[], parameters={"version": str(version)}, tableType="EXTERNAL_TABLE")


def _set_version(client, db, version):
    table = client.get_table(db, "t")
    table.parameters["version"] = str(version)
    client.alter_table(db, "t", table)



def _restart_poller(running, after):
    running.poller = Poller(running.store, running.poller.metrics, interval_s=0.05, event_ttl_s=86400,
                            start_after=lambda: after, reload_everything=running.loader.prewarm_again)
    running.store.delegate.db.event_watchers.append(running.poller)
    running.poller.start()


@pytest.fixture(params=["mariadb", "postgres"])
def pair(request, tmp_path):
    with fresh_database(request.param, tmp_path) as url:
        a, b = _server(url, tmp_path / "a"), _server(url, tmp_path / "b")
        ca, cb = connect(a.port), connect(b.port)
        db = f"db_{uuid.uuid4().hex[:8]}"
        ca.create_database(hms.Database(name=db, parameters={}))
        ca.create_table(_table(db, 1))
        wait_for(lambda: b.store.cache.get_table(("hive", db, "t")) is not None, "t cached in B", DEADLINE_S)
        try:
            yield url, a, b, ca, cb, db
        finally:
            ca.close()
            cb.close()
            a.stop()
            b.stop()


def test_a_stopped_poller_catches_up_when_restarted(pair):
    _url, _a, b, ca, cb, db = pair
    b.poller.stop()
    stopped_at = b.poller.last_applied
    _set_version(ca, db, 2)
    assert cb.get_table(db, "t").parameters["version"] == "1"   # B's cache, not following the log now
    _restart_poller(b, stopped_at)
    wait_for(lambda: cb.get_table(db, "t").parameters["version"] == "2", "B caught up", DEADLINE_S)


def test_an_instance_steps_over_its_own_events_without_reading_them_and_applies_the_others(pair):
    """A's own writes at the head of the log are in its cache already: its poller steps over them without reading
    their messages (an add of 100 partitions is ~100 KB), then reads and applies B's."""
    _url, a, _b, ca, cb, db = pair
    wait_for(lambda: a.poller.last_applied == a.store.current_event_id(), "A applied the setup's events", DEADLINE_S)
    a.poller.stop()
    before = a.store.current_event_id()
    _set_version(ca, db, 2)
    _set_version(ca, db, 3)
    own = a.store.current_event_id()
    _set_version(cb, db, 4)
    read: list[int] = []
    get_events = a.store.get_events
    a.store.get_events = lambda *args, **kwargs: [read.append(e.eventId) or e for e in get_events(*args, **kwargs)]
    a.poller.poll_once()
    foreign = list(range(own + 1, a.store.current_event_id() + 1))
    assert own - before == 2 and foreign
    assert read == foreign
    assert a.poller.last_applied == foreign[-1]
    assert ca.get_table(db, "t").parameters["version"] == "4"


class _HeldAfterCommit:
    """An event watcher ahead of the poller: it holds the writing thread after the commit, before the poller is
    told, until released (the moment in which a poller could take the event for another writer's)."""

    def __init__(self) -> None:
        self.committed_now, self.release = threading.Event(), threading.Event()

    def sending(self, write):
        pass

    def committed(self, write, events):
        self.committed_now.set()
        self.release.wait(DEADLINE_S)

    def abandoned(self, write):
        pass


def test_an_own_event_read_between_its_commit_and_its_confirmation_is_not_taken_for_another_writers(pair):
    """Taken for another writer's, A's own event would drop its table's entry for a reload, and under a steady
    stream of writes to a big table that reload never finishes (bench/README.md, row 7 on 2026-11-27)."""
    _url, a, _b, ca, _cb, db = pair
    wait_for(lambda: a.poller.last_applied == a.store.current_event_id(), "A applied the setup's events", DEADLINE_S)
    a.poller.stop()
    held = _HeldAfterCommit()
    a.store.delegate.db.event_watchers.insert(0, held)
    invalidated = []
    invalidate = a.store.invalidate
    a.store.invalidate = lambda key, **kwargs: (invalidated.append(key), invalidate(key, **kwargs))[1]
    get_events = a.store.get_events

    def read_then_release(*args, **kwargs):
        events = get_events(*args, **kwargs)
        held.release.set()   # the writer goes on to tell the poller while the poller looks at what it read
        return events
    a.store.get_events = read_then_release
    writer = threading.Thread(target=_set_version, args=(ca, db, 2))
    writer.start()
    assert held.committed_now.wait(DEADLINE_S)
    a.poller.poll_once()
    writer.join(DEADLINE_S)
    a.store.delegate.db.event_watchers.remove(held)
    assert invalidated == []
    assert a.poller.last_applied == a.store.current_event_id()
    assert ca.get_table(db, "t").parameters["version"] == "2"


def _partitioned(db):
    table = _table(db, 1)
    table.tableName, table.partitionKeys = "big", [hms.FieldSchema(name="k", type="int")]
    return table


def _partitions(db, values):
    return [hms.Partition(dbName=db, tableName="big", values=[str(v)], parameters={}, sd=None) for v in values]


def _write_steadily(port, db, first, stop, batches):
    """Adds batches of ten partitions to the big table through one instance until told to stop."""
    client = connect(port)
    while not stop.is_set():
        client.add_partitions(_partitions(db, range(first, first + 10)))
        first += 10
        with batches.get_lock():
            batches.value += 1
    client.close()


def _cached_names(server, key):
    entry = server.store.cache.get_table(key)
    return () if entry is None else entry.partitions.names


def test_a_table_another_writer_changed_is_cached_again_while_this_instance_writes_to_it(pair):
    """B's write drops A's entry of the big table; A reloads it while a client writes to it through A without
    pause. Every read of the table overlaps one of those writes: before, each such read was dropped and the next
    one started, for as long as the writes went on (bench/README.md, row 7 on 2026-11-27)."""
    _url, a, _b, ca, cb, db = pair
    ca.create_table(_partitioned(db))
    for first in range(0, 3000, 500):
        ca.add_partitions(_partitions(db, range(first, first + 500)))
    key = ("hive", db, "big")
    wait_for(lambda: a.store.cache.get_table(key) is not None, "the big table cached in A", DEADLINE_S)
    context = multiprocessing.get_context("spawn")
    stop, batches = context.Event(), context.Value("i", 0)
    writer = context.Process(target=_write_steadily, args=(a.port, db, 3000, stop, batches))
    writer.start()
    try:
        wait_for(lambda: batches.value > 0, "the writer started", DEADLINE_S)
        cb.add_partitions(_partitions(db, [-1]))   # another instance's write: A can only learn it by reading again
        wait_for(lambda: "k=-1" in _cached_names(a, key), "A caches the table again, with B's partition", DEADLINE_S)
        written_when_cached = batches.value
        wait_for(lambda: batches.value > written_when_cached + 2, "the writer goes on", DEADLINE_S)
    finally:
        stop.set()
        writer.join(DEADLINE_S)
    assert writer.exitcode == 0
    entry = a.store.cache.get_table(key)
    assert entry is not None
    assert sorted(entry.partitions.names) == sorted(a.store.delegate.get_partition_names(*key))
    assert len(entry.partitions) == 3001 + 10 * batches.value


def test_a_gap_in_the_log_reloads_the_whole_cache(pair):
    url, _a, b, ca, cb, db = pair
    b.poller.stop()
    stopped_at = b.poller.last_applied
    _set_version(ca, db, 3)
    engine = create_engine(url)
    with engine.begin() as conn:  # what cleanup after a long outage does: the events B needs are gone
        conn.execute(text('DELETE FROM "NOTIFICATION_LOG"' if url.startswith("postgres") else
                          "DELETE FROM NOTIFICATION_LOG"))
    engine.dispose()
    _set_version(ca, db, 4)   # a newer event exists, the ones between are missing
    _restart_poller(b, stopped_at)
    wait_for(lambda: cb.get_table(db, "t").parameters["version"] == "4", "B reloaded past the gap", DEADLINE_S)


def test_an_event_it_cannot_read_reloads_the_cache_and_the_poller_goes_on(pair):
    """An event whose message this instance cannot read (another writer's format, a damaged row) must neither
    stop the poller at it for good nor be skipped silently: the cache is reloaded, then later events apply."""
    url, _a, b, ca, cb, db = pair
    b.poller.stop()
    stopped_at = b.poller.last_applied
    _set_version(ca, db, 5)
    engine = create_engine(url)
    quote = engine.dialect.identifier_preparer.quote
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE {quote('NOTIFICATION_LOG')} SET {quote('MESSAGE')} = 'not json' "
                          f"WHERE {quote('EVENT_TYPE')} = 'ALTER_TABLE'"))
    engine.dispose()
    _restart_poller(b, stopped_at)
    wait_for(lambda: cb.get_table(db, "t").parameters["version"] == "5",
             "B reloaded past the unreadable event", DEADLINE_S)
    _set_version(ca, db, 6)
    wait_for(lambda: cb.get_table(db, "t").parameters["version"] == "6", "B follows the log again", DEADLINE_S)


def test_the_database_going_away_and_coming_back(tmp_path):
    with fresh_database("mariadb", tmp_path) as url:
        proxy = TcpProxy(3306)
        proxied = url.replace("127.0.0.1:3306", f"127.0.0.1:{proxy.port}")
        a, b = _server(url, tmp_path / "a"), _server(proxied, tmp_path / "b")
        ca, cb = connect(a.port), connect(b.port)
        try:
            db = f"db_{uuid.uuid4().hex[:8]}"
            ca.create_database(hms.Database(name=db, parameters={}))
            ca.create_table(_table(db, 1))
            wait_for(lambda: b.store.cache.get_table(("hive", db, "t")) is not None, "t cached in B", DEADLINE_S)
            def errors() -> float:
                return b.poller.metrics.registry.get_sample_value("hmsproxy_notification_poll_errors_total")

            before = errors()
            proxy.cut()
            assert cb.get_table(db, "t").parameters["version"] == "1"   # still answered from the cache
            with pytest.raises(hms.MetaException):                       # what needs the database says so
                cb.get_table(db, "not_cached")
            wait_for(lambda: errors() > before, "the poller noticed the outage", DEADLINE_S)
            _set_version(ca, db, 5)
            proxy.restore()
            wait_for(lambda: cb.get_table(db, "t").parameters["version"] == "5", "B recovered by itself", DEADLINE_S)
            cb.create_table(hms.Table(tableName="after", dbName=db, sd=_table(db, 0).sd, partitionKeys=[],
                                      parameters={}, tableType="EXTERNAL_TABLE"))
            wait_for(lambda: "after" in ca.get_all_tables(db), "a write through B after the outage", DEADLINE_S)
        finally:
            ca.close()
            cb.close()
            a.stop()
            b.stop()
            proxy.close()
