"""`hmsproxy serve --upstream`: hmsproxy in front of a real Java Hive Metastore 2.3.10 (no notification log, with its
transaction tables) and in front of another hmsproxy (with a notification log).

What is checked: the upstream's answers and errors reach the client unchanged; writes through the front are the
upstream's and read back at once; reads are served from the cache; other clients' writes to the upstream become
visible within the refresh interval (no log) or the poll interval (log); a granted lock is a synchronisation point;
transactions pass through; an upstream that goes away leaves cached reads answering, fails writes within a bound
with a MetaException, says so in /readyz and a metric, and is used again by itself when it is back."""
from __future__ import annotations

import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, closing
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A
from thriftpy2.thrift import TException

from hmsproxy import server as hmsproxy_server
from hmsproxy.client import reader_snapshot
from hmsproxy.idl import hms
from hmsproxy.ops.config import Settings
from support.builders import connect_hive, connect_thrift, database, partition, table, unique
from support.hmsproxy_server import start_hmsproxy_process
from support.polling import wait_for
from support.ports import free_port
from support.reference_hms import reference_hms, reference_hms_fixture, start_reference_hms
from support.running import RunningServer
from support.scrape import metric
from support.tcp_proxy import TcpProxy

REFRESH_S = 1.0     # the fronts' revalidation interval in the visibility tests
POLL_S = 0.2        # the front's poll interval of an upstream with a log
SLACK_S = 5.0       # scheduling, reloads and a connect or two on loopback, on top of a bound
ACQUIRED = hms.LockState.ACQUIRED


class Front:
    """hmsproxy in this process in front of `upstream`; `running` gives the test its parts (the refresher)."""

    def __init__(self, workdir: Path, upstream: str, **overrides: object) -> None:
        settings = Settings(host="127.0.0.1", port=0, metrics_port=free_port(), warehouse=str(workdir / "unused"),
                            upstream=upstream, **overrides)  # type: ignore[arg-type]
        self.running = hmsproxy_server.start(settings)
        self.server = RunningServer(host="127.0.0.1", port=self.running.port, warehouse=workdir,
                                    metrics_port=self.running.metrics_server.port if self.running.metrics_server
                                    else None)
        wait_for(self.running.loader.complete.is_set, "the front's prewarm")

    def wait_cached(self, db: str, name: str) -> None:
        wait_for(lambda: self.running.store.cache.get_table(("hive", db, name)) is not None, f"{db}.{name} cached")

    def new_cached_table(self, client, prefix: str) -> tuple[str, object]:
        """A new database with a table `t`, created through the front; its name and the table once cached."""
        db = unique(prefix)
        client.create_database(database(hms, db))
        client.create_table(table(hms, db, "t"))
        self.wait_cached(db, "t")
        return db, client.get_table(db, "t")

    def readyz(self) -> tuple[int, str]:
        answer = urllib.request.urlopen(f"http://127.0.0.1:{self.server.metrics_port}/readyz", timeout=10)
        return answer.status, answer.read().decode()

    def hits(self, method: str) -> float:
        return metric(self.server, "hmsproxy_cache_lookups_total", method=method, result="hit")

    def stop(self) -> None:
        self.running.stop()


hive = reference_hms_fixture("front-hive", txn=True)


@pytest.fixture(scope="module")
def front(hive, tmp_path_factory) -> Iterator[Front]:
    running = Front(tmp_path_factory.mktemp("front"), hive.uri, upstream_refresh_s=REFRESH_S)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def still_front(hive, tmp_path_factory) -> Iterator[Front]:
    """A front that revalidates only when a test asks (its interval is an hour)."""
    running = Front(tmp_path_factory.mktemp("still-front"), hive.uri, upstream_refresh_s=3600.0)
    yield running
    running.stop()


@pytest.fixture()
def via_front(front):
    client = connect_thrift(front.server)
    yield client
    client.close()


@pytest.fixture()
def direct(hive):
    client = connect_thrift(hive)
    yield client
    client.close()


def partitioned(db: str, name: str):
    return table(hms, db, name, part_keys=[("ds", "string")])


def error_of(call, client) -> tuple[str, str]:
    try:
        call(client)
    except TException as exc:
        return type(exc).__name__, getattr(exc, "message", "")
    raise AssertionError("the call succeeded")


# ---- in front of the Java HMS ---------------------------------------------------------------------------------------


def test_writes_through_the_front_are_the_upstreams_and_read_back_at_once(front, via_front, direct):
    db = unique("fw")
    via_front.create_database(database(hms, db))
    via_front.create_table(partitioned(db, "events"))
    tbl = direct.get_table(db, "events")
    via_front.add_partitions([partition(hms, tbl, [f"2026-11-{d:02}"]) for d in range(1, 6)])
    altered = via_front.get_table(db, "events")
    altered.parameters["owner_team"] = "data"
    via_front.alter_table(db, "events", altered)

    assert via_front.get_all_tables(db) == direct.get_all_tables(db) == ["events"]
    assert via_front.get_database(db) == direct.get_database(db)
    assert via_front.get_table(db, "events") == direct.get_table(db, "events")   # createTime, location: Java's
    assert via_front.get_table(db, "events").parameters["owner_team"] == "data"
    assert via_front.get_partitions(db, "events", -1) == direct.get_partitions(db, "events", -1)
    assert via_front.get_partition_names(db, "events", -1) == [f"ds=2026-11-{d:02}" for d in range(1, 6)]

    via_front.drop_partition(db, "events", ["2026-11-01"], False)
    assert via_front.get_partition_names(db, "events", -1) == direct.get_partition_names(db, "events", -1)
    via_front.drop_table(db, "events", False)
    assert via_front.get_all_tables(db) == [] == direct.get_all_tables(db)
    with pytest.raises(hms.NoSuchObjectException):
        via_front.get_table(db, "events")


def test_hives_own_client_reads_through_the_front_what_it_reads_from_the_upstream(front, hive):
    """hmsclient (generated from Hive's IDL with Apache Thrift) on both sides: the front's replies, cached or
    forwarded, decode to what the Java HMS itself answers."""
    with closing(connect_hive(front.server)) as ours, closing(connect_hive(hive)) as theirs:
        db = unique("hmsclient")
        ours.create_database(database(A, db))
        ours.create_table(table(A, db, "t", part_keys=[("ds", "string")]))
        ours.add_partitions([partition(A, theirs.get_table(db, "t"), [value]) for value in ("a", "b", "c")])
        front.wait_cached(db, "t")
        assert ours.get_table(db, "t") == theirs.get_table(db, "t")
        assert ours.get_partitions(db, "t", -1) == theirs.get_partitions(db, "t", -1)
        assert ours.get_partitions_by_filter(db, "t", 'ds >= "b"', -1) == \
            theirs.get_partitions_by_filter(db, "t", 'ds >= "b"', -1)
        assert ours.get_all_tables(db) == theirs.get_all_tables(db) == ["t"]
        with pytest.raises(A.NoSuchObjectException):
            ours.get_table(db, "nope")


def test_the_upstreams_declared_errors_reach_the_client_unchanged(via_front, direct):
    db, missing = unique("err"), unique("nodb")
    direct.create_database(database(hms, db))
    direct.create_table(partitioned(db, "t"))
    calls = {
        "missing table": lambda c: c.get_table(db, "nope"),
        "missing database": lambda c: c.get_database(missing),
        "table exists": lambda c: c.create_table(partitioned(db, "t")),
        "database exists": lambda c: c.create_database(database(hms, db)),
        "table in a missing database": lambda c: c.create_table(partitioned(missing, "t")),
        "missing partition dropped": lambda c: c.drop_partition(db, "t", ["x"], False),
        "partition of a missing table": lambda c: c.get_partition(db, "nope", ["x"]),
    }
    for what, call in calls.items():
        assert error_of(call, via_front) == error_of(call, direct), what


def test_reads_are_answered_from_the_cache(front, via_front, direct):
    db = unique("hit")
    via_front.create_database(database(hms, db))
    via_front.create_table(partitioned(db, "t"))
    front.wait_cached(db, "t")
    before = front.hits("get_table")
    for _ in range(5):
        assert via_front.get_table(db, "t") == direct.get_table(db, "t")
    assert front.hits("get_table") - before == 5


def test_other_clients_writes_become_visible_within_the_refresh_interval(front, via_front, direct):
    db = unique("ext")
    direct.create_database(database(hms, db))
    direct.create_table(partitioned(db, "t"))
    tbl = direct.get_table(db, "t")
    bound = REFRESH_S + SLACK_S
    wait_for(lambda: via_front.get_all_tables(db) == ["t"], "a table created upstream", timeout=bound)
    front.wait_cached(db, "t")

    direct.add_partitions([partition(hms, tbl, ["a"]), partition(hms, tbl, ["b"])])
    wait_for(lambda: via_front.get_partition_names(db, "t", -1) == ["ds=a", "ds=b"], "partitions added upstream",
             timeout=bound)
    changed = direct.get_table(db, "t")
    changed.parameters["note"] = "written past the proxy"
    direct.alter_table(db, "t", changed)
    wait_for(lambda: via_front.get_table(db, "t").parameters.get("note") == "written past the proxy",
             "a table altered upstream", timeout=bound)
    direct.drop_table(db, "t", False)
    wait_for(lambda: via_front.get_all_tables(db) == [], "a table dropped upstream", timeout=bound)
    assert metric(front.server, "hmsproxy_upstream_stale_found_total") >= 3


def test_revalidation_drops_exactly_what_changed_upstream(still_front, direct):
    db = unique("reval")
    direct.create_database(database(hms, db))
    direct.create_table(partitioned(db, "t"))
    direct.create_table(table(hms, db, "plain"))
    refresher = still_front.running.upstream.refresher
    refresher.revalidate_once()                     # learns of the new database and tables
    wait_for(lambda: all(still_front.running.store.cache.get_table(("hive", db, name)) is not None
                         for name in ("t", "plain")), "the tables' reloads")
    assert refresher.revalidate_once() == 0          # nothing changed: nothing is dropped

    client = connect_thrift(still_front.server)
    changed = direct.get_table(db, "plain")
    changed.parameters["k"] = "v"
    direct.alter_table(db, "plain", changed)
    assert "k" not in client.get_table(db, "plain").parameters   # cached, and no log tells the front
    assert refresher.revalidate_once() == 1
    assert client.get_table(db, "plain").parameters["k"] == "v"
    direct.add_partitions([partition(hms, direct.get_table(db, "t"), ["x"])])
    assert refresher.revalidate_once() == 1
    assert client.get_partition_names(db, "t", -1) == ["ds=x"]
    client.close()


def test_a_granted_lock_is_a_synchronisation_point(still_front, direct):
    db = unique("lock")
    direct.create_database(database(hms, db))
    direct.create_table(table(hms, db, "t"))
    still_front.running.upstream.refresher.revalidate_once()
    client = connect_thrift(still_front.server)
    still_front.wait_cached(db, "t")
    changed = direct.get_table(db, "t")
    changed.parameters["version"] = "2"
    direct.alter_table(db, "t", changed)
    assert "version" not in client.get_table(db, "t").parameters    # the cache has not seen it yet

    component = hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename="t")
    lock = client.lock(hms.LockRequest(component=[component], user="iceberg", hostname="test"))
    assert lock.state == ACQUIRED
    assert client.get_table(db, "t").parameters["version"] == "2"   # read under the lock: the upstream's state
    client.unlock(hms.UnlockRequest(lockid=lock.lockid))
    client.close()


def test_transactions_are_the_upstreams(via_front, direct):
    opened = via_front.open_txns(hms.OpenTxnRequest(num_txns=2, user="alice", hostname="test")).txn_ids
    open_upstream = {t.id for t in direct.get_open_txns_info().open_txns if t.state == hms.TxnState.OPEN}
    assert set(opened) <= open_upstream
    via_front.commit_txn(hms.CommitTxnRequest(txnid=opened[0]))
    via_front.abort_txn(hms.AbortTxnRequest(txnid=opened[1]))
    states = {t.id: t.state for t in direct.get_open_txns_info().open_txns}
    assert opened[0] not in states and states.get(opened[1]) == hms.TxnState.ABORTED
    with pytest.raises(hms.NoSuchTxnException):
        via_front.commit_txn(hms.CommitTxnRequest(txnid=max(opened) + 1000))


def test_open_transactions_read_alike_in_hive_2_3_and_4_clients_direct_and_through_the_front(front, hive):
    """Hive 2.3's IDL declares GetOpenTxnsResponse.open_txns a set<i64>, Hive 3+'s (ours) a list<i64>. The Java HMS
    2.3 answers the set, which our client and the front (a client of it) read as the list; the front answers both
    kinds. So hmsclient (Hive 2.3's IDL) and our client read the same ids from the Java HMS and through the front."""
    with ExitStack() as stack:
        clients = [stack.enter_context(closing(connect(server)))
                   for connect in (connect_hive, connect_thrift) for server in (hive, front.server)]
        direct = connect_thrift(hive)
        stack.enter_context(closing(direct))
        first, aborted, last = direct.open_txns(hms.OpenTxnRequest(num_txns=3, user="u", hostname="h")).txn_ids
        direct.abort_txn(hms.AbortTxnRequest(txnid=aborted))
        info = direct.get_open_txns_info().open_txns
        expected = {t.id for t in info}                             # the open ones and the aborted ones
        assert {first, aborted, last} <= expected
        min_open = min(t.id for t in info if t.state == hms.TxnState.OPEN)
        for answer in [client.get_open_txns() for client in clients]:
            assert answer.open_txns is not None and set(answer.open_txns) == expected
            assert (answer.txn_high_water_mark, answer.min_open_txn) == (last, min_open)
        for txn in (first, last):
            direct.commit_txn(hms.CommitTxnRequest(txnid=txn))


def test_an_unreachable_upstream_leaves_cached_reads_and_fails_writes_within_the_bound(hive, tmp_path):
    relay = TcpProxy(hive.port)
    call_timeout_s = 3.0
    front = Front(tmp_path, f"thrift://127.0.0.1:{relay.port}", upstream_refresh_s=REFRESH_S,
                  upstream_call_timeout_s=call_timeout_s)
    direct = connect_thrift(hive)
    client = connect_thrift(front.server)
    try:
        db, cached = front.new_cached_table(client, "down")
        assert metric(front.server, "hmsproxy_upstream_up") == 1

        relay.cut()
        assert client.get_table(db, "t") == cached                  # answered from the cache
        started = time.monotonic()
        with pytest.raises(hms.MetaException, match="upstream"):
            client.create_database(database(hms, unique("refused")))
        assert time.monotonic() - started < call_timeout_s + SLACK_S
        status, body = front.readyz()
        assert status == 200 and "unreachable" in body
        assert metric(front.server, "hmsproxy_upstream_up") == 0

        relay.restore()
        wait_for(lambda: "unreachable" not in front.readyz()[1], "the upstream seen again", timeout=SLACK_S * 2)
        relay.stall()                                               # a black hole: the call's time bound ends it
        started = time.monotonic()
        with pytest.raises(hms.MetaException, match="upstream"):
            client.create_database(database(hms, unique("stalled")))
        assert time.monotonic() - started < call_timeout_s + SLACK_S

        relay.restore()
        wait_for(lambda: "unreachable" not in front.readyz()[1], "the upstream seen again", timeout=SLACK_S * 2)
        again = unique("back")
        client.create_database(database(hms, again))
        assert direct.get_database(again).name == again
        assert metric(front.server, "hmsproxy_upstream_up") == 1
    finally:
        client.close()
        direct.close()
        front.stop()
        relay.close()


def test_a_write_whose_acknowledgement_is_lost_leaves_no_stale_entry(hive, tmp_path):
    """The upstream applies an alter but its answer never arrives: the client is told the write may have been
    applied, and the cache drops what the write named instead of serving the old table until a refresh."""
    relay = TcpProxy(hive.port)
    front = Front(tmp_path, f"thrift://127.0.0.1:{relay.port}", upstream_refresh_s=3600.0,
                  upstream_call_timeout_s=3.0)
    direct = connect_thrift(hive)
    client = connect_thrift(front.server)
    try:
        db, cached = front.new_cached_table(client, "lost_ack")
        assert "after" not in cached.parameters
        changed = direct.get_table(db, "t")
        changed.parameters["after"] = "the lost acknowledgement"
        relay.hold_replies()
        with pytest.raises(hms.MetaException, match="may have been applied"):
            client.alter_table(db, "t", changed)
        assert direct.get_table(db, "t").parameters["after"] == "the lost acknowledgement"   # applied upstream
        relay.restore()
        assert client.get_table(db, "t").parameters.get("after") == "the lost acknowledgement"
    finally:
        client.close()
        direct.close()
        front.stop()
        relay.close()


def test_the_java_hms_killed_and_restarted_is_used_again_by_itself(tmp_path):
    """The process is killed (SIGKILL, no goodbye) and started again on its Derby database; the relay stands for
    the address clients keep using."""
    with reference_hms(tmp_path / "java", txn=True) as java:
        relay = TcpProxy(java.port)
        front = Front(tmp_path / "front", f"thrift://127.0.0.1:{relay.port}", upstream_refresh_s=REFRESH_S)
        client = connect_thrift(front.server)
        try:
            db, cached = front.new_cached_table(client, "java_killed")

            assert java.pid is not None
            os.kill(java.pid, signal.SIGKILL)
            assert client.get_table(db, "t") == cached
            with pytest.raises(hms.MetaException, match="upstream"):
                client.create_table(table(hms, db, "refused"))
            wait_for(lambda: metric(front.server, "hmsproxy_upstream_up") == 0, "the upstream seen gone")

            restarted = start_reference_hms(tmp_path / "java", txn=True)
            relay.target_port = restarted.port
            try:
                wait_for(lambda: "unreachable" not in front.readyz()[1], "the upstream seen again",
                         timeout=SLACK_S * 2)
                client.create_table(table(hms, db, "after"))
                assert client.get_all_tables(db) == ["after", "t"]
                assert client.get_table(db, "t") == cached        # the Derby database survived the kill
            finally:
                restarted.stop()
        finally:
            client.close()
            front.stop()
            relay.close()


def test_failover_to_the_next_listed_upstream(hive, tmp_path):
    gone = free_port()   # nothing listens there
    front = Front(tmp_path, f"thrift://127.0.0.1:{gone},{hive.uri}", upstream_refresh_s=REFRESH_S)
    client = connect_thrift(front.server)
    try:
        db = unique("failover")
        client.create_database(database(hms, db))
        assert client.get_database(db) == connect_thrift(hive).get_database(db)
        assert metric(front.server, "hmsproxy_upstream_calls_total", method="create_database", outcome="ok") == 1
    finally:
        client.close()
        front.stop()


# ---- in front of another hmsproxy (an upstream with a notification log) ---------------------------------------------


@pytest.fixture(scope="module")
def proxy_upstream(tmp_path_factory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("upstream-hmsproxy")
    server = start_hmsproxy_process(workdir, f"sqlite:///{workdir / 'metastore.db'}")
    client = connect_thrift(server)
    client.create_database(database(hms, unique("first")))   # its log has an event: a front follows it from start
    client.close()
    yield server
    server.stop()


def test_in_front_of_hmsproxy_other_writes_arrive_through_its_log(proxy_upstream, tmp_path):
    front = Front(tmp_path, proxy_upstream.uri, poll_interval_s=POLL_S)
    direct = connect_thrift(proxy_upstream)
    client = connect_thrift(front.server)
    try:
        assert front.running.upstream.following.is_set()   # it follows the upstream's log ...
        db = unique("log")
        direct.create_database(database(hms, db))
        direct.create_table(partitioned(db, "t"))
        bound = POLL_S + SLACK_S
        wait_for(lambda: client.get_all_tables(db) == ["t"], "a table created upstream", timeout=bound)
        front.wait_cached(db, "t")
        direct.add_partitions([partition(hms, direct.get_table(db, "t"), ["a"])])
        wait_for(lambda: client.get_partition_names(db, "t", -1) == ["ds=a"], "a partition added upstream",
                 timeout=bound)
        assert metric(front.server, "hmsproxy_upstream_stale_found_total") == 0   # ... and revalidates nothing
        assert metric(front.server, "hmsproxy_notification_last_applied_event_id") > 0
    finally:
        client.close()
        direct.close()
        front.stop()


def test_snapshot_reads_of_a_transactional_table_use_the_upstreams_write_ids(proxy_upstream, tmp_path):
    """Commits made past the front are never hidden from a snapshot that includes them, and once the front has
    applied the upstream's commit event, such snapshots are answered from its cache again."""
    front = Front(tmp_path, proxy_upstream.uri, poll_interval_s=POLL_S)
    direct = connect_thrift(proxy_upstream)
    client = connect_thrift(front.server)
    try:
        db = unique("acid")
        direct.create_database(database(hms, db))
        direct.create_table(table(hms, db, "t", params={"transactional": "true",
                                                        "transactional_properties": "insert_only"}))
        wait_for(lambda: "t" in client.get_all_tables(db), "the table through the front", timeout=POLL_S + SLACK_S)
        for _ in range(3):
            [txn] = direct.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
            [alloc] = direct.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(
                dbName=db, tableName="t", txnIds=[txn])).txnToWriteIds
            written = direct.get_table(db, "t")
            written.parameters["version"] = str(alloc.writeId)
            direct.alter_table_req(hms.AlterTableRequest(dbName=db, tableName="t", table=written,
                                                         writeId=alloc.writeId))
            direct.commit_txn(hms.CommitTxnRequest(txnid=txn))
            snapshot = str(reader_snapshot(client, f"{db}.t"))       # at once: no waiting for the front
            request = hms.GetTableRequest(dbName=db, tblName="t", validWriteIdList=snapshot)
            assert client.get_table_req(request).table.parameters["version"] == str(alloc.writeId)
        # a write that changes no metadata (data files only): only the commit's event tells the front it is valid
        [txn] = direct.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
        [open_write] = direct.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(
            dbName=db, tableName="t", txnIds=[txn])).txnToWriteIds

        def cached_as_open() -> bool:
            entry = front.running.store.cache.get_table(("hive", db, "t"))
            return entry is not None and open_write.writeId in entry.write_ids.open_ids

        client.get_table(db, "t")   # (re)loads the table if it is not cached
        wait_for(cached_as_open, "the front's entry with the write id open")
        direct.commit_txn(hms.CommitTxnRequest(txnid=txn))
        request = hms.GetTableRequest(dbName=db, tblName="t", validWriteIdList=str(reader_snapshot(client, f"{db}.t")))
        hits = front.hits("get_table_req")
        wait_for(lambda: client.get_table_req(request).table.parameters["version"] == str(alloc.writeId)
                 and front.hits("get_table_req") > hits, "a snapshot read answered from the cache again",
                 timeout=POLL_S + SLACK_S)
    finally:
        client.close()
        direct.close()
        front.stop()


def test_an_upstream_killed_and_restarted_is_used_again_by_itself(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'upstream.db'}"
    upstream = start_hmsproxy_process(tmp_path / "upstream", db_url)
    ports = (upstream.port, upstream.metrics_port or 0)
    front = Front(tmp_path / "front", upstream.uri, poll_interval_s=POLL_S)
    client = connect_thrift(front.server)
    try:
        db, cached = front.new_cached_table(client, "killed")

        upstream.stop()                                            # SIGTERM: the process is gone
        assert client.get_table(db, "t") == cached
        with pytest.raises(hms.MetaException, match="upstream"):
            client.create_table(table(hms, db, "refused"))
        wait_for(lambda: "unreachable" in front.readyz()[1], "readiness saying the upstream is gone")

        upstream = start_hmsproxy_process(tmp_path / "upstream", db_url, ports=ports)
        wait_for(lambda: "unreachable" not in front.readyz()[1], "the upstream seen again", timeout=SLACK_S * 2)
        client.create_table(table(hms, db, "after"))
        assert client.get_all_tables(db) == ["after", "t"]
        direct = connect_thrift(upstream)
        direct.create_table(table(hms, db, "external"))
        direct.close()
        wait_for(lambda: "external" in client.get_all_tables(db), "a write upstream after the restart",
                 timeout=POLL_S + SLACK_S)
    finally:
        client.close()
        front.stop()
        upstream.stop()
