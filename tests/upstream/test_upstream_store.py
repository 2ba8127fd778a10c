"""UpstreamStore against real upstreams: the Java Hive Metastore 2.3.10 (with its transaction tables) and an hmsproxy
(a Hive-4-like upstream with a notification log and write ids). What the store answers is compared with what a
direct thriftpy2 client reads from the same upstream."""
from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from hmsproxy.hive.write_ids import ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.store.domain import LockOutcome
from hmsproxy.store.rawstore import STORE_PARTS, RawStore
from hmsproxy.upstream import store as store_module
from hmsproxy.upstream.pool import UpstreamPool
from hmsproxy.upstream.store import UpstreamStore, upstream_store
from support.builders import connect_thrift, database, partition, table
from support.hmsproxy_server import start_hmsproxy
from support.reference_hms import reference_hms_fixture
from support.running import RunningServer
from support.tcp_proxy import TcpProxy

CAT = "hive"
HIVE_RETRIES = re.compile(r"(?s).*(JDO[a-zA-Z]*|TProtocol|TTransport)Exception.*")  # RetryingMetaStoreClient's test
ACQUIRED, WAITING = hms.LockState.ACQUIRED, hms.LockState.WAITING
OPEN, ABORTED = hms.TxnState.OPEN, hms.TxnState.ABORTED
SLACK_S = 1.5   # scheduling and a connect or two on loopback, on top of a time bound


hive = reference_hms_fixture("upstream-store-hive", txn=True)


@pytest.fixture(scope="module")
def store(hive) -> Iterator[RawStore]:
    upstream: RawStore = upstream_store(UpstreamPool([hive.uri]))
    yield upstream
    upstream.close()


@pytest.fixture(scope="module")
def direct(hive):
    client = connect_thrift(hive)
    yield client
    client.close()


@pytest.fixture(scope="module")
def proxy_upstream(tmp_path_factory) -> Iterator[RunningServer]:
    with start_hmsproxy(tmp_path_factory.mktemp("upstream-store-hmsproxy")) as server:
        yield server


@pytest.fixture(scope="module")
def pstore(proxy_upstream) -> Iterator[RawStore]:
    upstream = upstream_store(UpstreamPool([proxy_upstream.uri]))
    yield upstream
    upstream.close()


@pytest.fixture(scope="module")
def pdirect(proxy_upstream):
    client = connect_thrift(proxy_upstream)
    yield client
    client.close()


def create(store: RawStore, db: str, *tables) -> None:
    store.create_database(database(hms, db))
    for tbl in tables:
        store.create_table(tbl)


def add(store: RawStore, tbl, *values: str) -> list:
    return store.add_partitions(CAT, tbl.dbName, tbl.tableName, [partition(hms, tbl, [v]) for v in values])


def exclusive(db: str, tbl: str):
    return hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename=tbl)


def column_stats(db: str, tbl: str, part_name: str | None, columns: list[str]):
    objs = {"id": hms.ColumnStatisticsObj(colName="id", colType="int", statsData=hms.ColumnStatisticsData(
                longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=5))),
            "name": hms.ColumnStatisticsObj(colName="name", colType="string", statsData=hms.ColumnStatisticsData(
                stringStats=hms.StringColumnStatsData(maxColLen=8, avgColLen=4.5, numNulls=1, numDVs=3)))}
    desc = hms.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=db, tableName=tbl, partName=part_name)
    return hms.ColumnStatistics(statsDesc=desc, statsObj=[objs[c] for c in columns])


# ---- the interface -------------------------------------------------------------------------------------------------

def test_it_offers_every_method_of_the_store_interface():
    wanted = {name for part in STORE_PARTS for name, value in vars(part).items()
              if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    assert "get_table_bundle" in wanted and "keeps_write_ids" in wanted
    assert wanted <= set(dir(UpstreamStore))


# ---- against Hive 2.3.10 ------------------------------------------------------------------------------------------

def test_catalogs_and_databases(store, direct):
    default = direct.get_database("default")
    assert store.get_catalog(CAT) == hms.Catalog(name=CAT, description="Default catalog for Hive",
                                                 locationUri=default.locationUri)
    with pytest.raises(hms.NoSuchObjectException):
        store.get_catalog("spark")
    assert store.get_catalog_names() == [CAT]
    store.create_database(database(hms, "up_dbs", params={"k": "v"}))
    assert store.get_database(CAT, "up_dbs") == direct.get_database("up_dbs")
    assert "up_dbs" in store.get_database_names(CAT) == sorted(direct.get_all_databases())
    assert store.get_database_names("spark") == []
    with pytest.raises(hms.NoSuchObjectException):
        store.get_database(CAT, "up_nope")
    with pytest.raises(hms.AlreadyExistsException):
        store.create_database(database(hms, "up_dbs"))
    changed = direct.get_database("up_dbs")
    changed.parameters = {"k": "w"}
    store.alter_database(CAT, "up_dbs", changed)
    assert direct.get_database("up_dbs").parameters == {"k": "w"}
    with pytest.raises(hms.NoSuchObjectException):   # Hive 2.3 itself ignores the alter of a missing database
        store.alter_database(CAT, "up_nope", changed)
    assert store.drop_database(CAT, "up_dbs", False) == []
    with pytest.raises(hms.NoSuchObjectException):
        direct.get_database("up_dbs")
    with pytest.raises(hms.NoSuchObjectException):   # Hive 2.3 itself answers a NullPointerException
        store.drop_database(CAT, "up_dbs", True)


def test_tables(store, direct):
    db = "up_tables"
    store.create_database(database(hms, db))
    assert store.create_table(table(hms, db, "events", part_keys=[("ds", "string")],
                                    params={"comment": "clicks"})) == 0   # Hive 2.3's tables have no id
    store.create_table(table(hms, db, "dim", table_type="EXTERNAL_TABLE", params={"EXTERNAL": "TRUE"}))
    assert store.get_table(CAT, db, "events") == direct.get_table(db, "events")
    assert store.get_table_objects(CAT, db, ["nope", "events", "dim", "events"]) == \
        [direct.get_table(db, "dim"), direct.get_table(db, "events")]
    assert store.get_table_names(CAT, db) == ["dim", "events"] == sorted(direct.get_all_tables(db))
    assert store.get_table_names(CAT, db, "EXTERNAL_TABLE") == ["dim"]
    assert store.get_table_names(CAT, db, "VIRTUAL_VIEW") == []
    meta = store.get_table_meta(CAT)
    assert meta == sorted(meta)
    assert [m for m in meta if m[0] == db] == [(db, "dim", "EXTERNAL_TABLE", None),
                                               (db, "events", "MANAGED_TABLE", "clicks")]
    assert store.get_table_meta("spark") == []
    for missing in (lambda: store.get_table(CAT, db, "nope"), lambda: store.get_table(CAT, "up_nodb", "events"),
                    lambda: store.get_table("spark", db, "events"), lambda: store.get_table_names(CAT, "up_nodb"),
                    lambda: store.get_table_names(CAT, "up_nodb", "EXTERNAL_TABLE"),
                    lambda: store.get_table_objects(CAT, "up_nodb", ["events"])):  # Hive: [] or no result at all
        with pytest.raises(hms.NoSuchObjectException):
            missing()
    with pytest.raises(hms.AlreadyExistsException):
        store.create_table(table(hms, db, "events"))


def test_alter_table_cascades_renames_and_refuses_a_compare_and_set(store, direct):
    db = "up_alter"
    create(store, db, table(hms, db, "events", part_keys=[("ds", "string")]))
    add(store, direct.get_table(db, "events"), "1")
    new = direct.get_table(db, "events")
    new.sd.cols = [*new.sd.cols, hms.FieldSchema(name="extra", type="string")]
    store.alter_table(CAT, db, "events", new, cascade=True)
    assert [c.name for c in direct.get_partition(db, "events", ["1"]).sd.cols] == ["id", "name", "extra"]
    new.sd.cols = [*new.sd.cols, hms.FieldSchema(name="more", type="int")]
    store.alter_table(CAT, db, "events", new)
    assert [c.name for c in direct.get_table(db, "events").sd.cols][-1] == "more"
    assert [c.name for c in direct.get_partition(db, "events", ["1"]).sd.cols] == ["id", "name", "extra"]
    new.parameters["k"] = "v"
    with pytest.raises(hms.MetaException, match="compare-and-set"):
        store.alter_table(CAT, db, "events", new, expected_parameter=("metadata_location", "s3://a"))
    assert "k" not in direct.get_table(db, "events").parameters
    new.tableName = "renamed"
    store.alter_table(CAT, db, "events", new)
    assert direct.get_all_tables(db) == ["renamed"]
    assert direct.get_partition(db, "renamed", ["1"]).sd.location.endswith(f"/{db}.db/renamed/ds=1")


def test_partitions(store, direct):
    db = "up_parts"
    create(store, db, table(hms, db, "events", part_keys=[("ds", "string")]))
    events = direct.get_table(db, "events")
    added = add(store, events, "2", "1", "10")
    stored = {p.sd.location: p.values for p in direct.get_partitions(db, "events", -1)}
    assert {p.sd.location: p.values for p in added} == stored   # as the upstream stored them: locations filled in
    assert store.add_partitions(CAT, db, "events", [partition(hms, events, ["1"])], if_not_exists=True) == []
    with pytest.raises(hms.AlreadyExistsException):
        add(store, events, "1")
    everything = direct.get_partitions(db, "events", -1)
    assert store.get_partitions(CAT, db, "events") == everything
    assert [p.values for p in everything] == [["1"], ["10"], ["2"]]   # by name
    assert store.get_partitions(CAT, db, "events", 2) == everything[:2]
    assert store.get_partitions(CAT, db, "events", 40000) == everything   # beyond Thrift's i16
    assert store.get_partitions_by_names(CAT, db, "events", ["ds=2", "ds=1", "ds=2", "ds=9"]) == \
        direct.get_partitions_by_names(db, "events", ["ds=1", "ds=2"])
    assert store.get_partition(CAT, db, "events", ["10"]) == direct.get_partition(db, "events", ["10"])
    with pytest.raises(hms.NoSuchObjectException):
        store.get_partition(CAT, db, "events", ["9"])
    assert store.get_partition_names(CAT, db, "events") == ["ds=1", "ds=10", "ds=2"]
    assert store.get_partition_values(CAT, db, "events") == [("ds=1", ["1"]), ("ds=10", ["10"]), ("ds=2", ["2"])]
    with pytest.raises(hms.NoSuchObjectException):   # Hive 2.3 itself answers "Internal error"
        store.get_partition_names(CAT, db, "nope")
    changed = direct.get_partition(db, "events", ["1"])
    changed.parameters["k"] = "v"
    store.alter_partitions(CAT, db, "events", [changed])
    assert direct.get_partition(db, "events", ["1"]).parameters["k"] == "v"
    renamed = direct.get_partition(db, "events", ["10"])
    renamed.values = ["11"]
    store.rename_partition(CAT, db, "events", ["10"], renamed)
    assert store.get_partition_names(CAT, db, "events") == ["ds=1", "ds=11", "ds=2"]
    location = direct.get_partition(db, "events", ["2"]).sd.location
    dropped = store.drop_partitions(CAT, db, "events", ["ds=2"])
    assert [(p.values, p.sd.location) for p in dropped] == [(["2"], location)]
    with pytest.raises(hms.NoSuchObjectException):
        store.drop_partitions(CAT, db, "events", ["ds=1", "ds=9"])
    assert store.get_partition_names(CAT, db, "events") == ["ds=1", "ds=11"]   # all or nothing
    assert store.drop_partitions(CAT, db, "events", ["ds=9"], if_exists=True) == []
    with pytest.raises(hms.MetaException, match="no partition ids"):
        store.get_partition_batch(CAT, db, "events", 0, -1, 10, None, False)


def test_a_table_bundle_reads_partitions_in_chunks_with_all_statistics(store, direct, monkeypatch):
    monkeypatch.setattr(store_module, "PARTITION_CHUNK", 2)
    db = "up_bundle"
    create(store, db, table(hms, db, "events", part_keys=[("ds", "string")]))
    add(store, direct.get_table(db, "events"), "1", "2", "3", "4", "5")
    store.update_table_column_statistics(CAT, column_stats(db, "events", None, ["id"]))
    store.update_partition_column_statistics(CAT, column_stats(db, "events", "ds=4", ["id", "name"]), ["4"])
    chunks: list[list] = []
    bundle = store.get_table_bundle(CAT, db, "events", lambda tbl, chunk, ids: chunks.append(chunk))
    assert bundle.table == direct.get_table(db, "events")
    assert bundle.partitions == [] and [len(chunk) for chunk in chunks] == [2, 2, 1]
    assert [p for chunk in chunks for p in chunk] == direct.get_partitions(db, "events", -1)
    assert bundle.table_stats == {"id": direct.get_table_column_statistics(db, "events", "id").statsObj[0]}
    assert bundle.partition_stats == {"ds=4": {
        c: direct.get_partition_column_statistics(db, "events", "ds=4", c).statsObj[0] for c in ("id", "name")}}
    assert bundle.write_ids is None and bundle.version == 0   # not transactional; no notification log
    assert store.get_table_bundle(CAT, db, "events").partitions == direct.get_partitions(db, "events", -1)


def test_functions(store, direct):
    def function(db: str, name: str):
        return hms.Function(functionName=name, dbName=db, className="com.example.Udf", ownerName="alice",
                            ownerType=hms.PrincipalType.USER, createTime=0, functionType=hms.FunctionType.JAVA,
                            resourceUris=[])

    create(store, "up_fn_a")
    create(store, "up_fn_b")
    for db, name in (("up_fn_b", "zeta"), ("up_fn_a", "beta"), ("up_fn_a", "alpha")):
        store.create_function(function(db, name))
    assert store.get_function(CAT, "up_fn_a", "alpha") == direct.get_function("up_fn_a", "alpha")
    mine = [(f.dbName, f.functionName) for f in store.get_functions(CAT) if f.dbName.startswith("up_fn_")]
    assert mine == [("up_fn_a", "alpha"), ("up_fn_a", "beta"), ("up_fn_b", "zeta")]
    assert store.get_functions(CAT, "up_fn_a") == [direct.get_function("up_fn_a", n) for n in ("alpha", "beta")]
    assert store.get_functions("spark") == []
    changed = direct.get_function("up_fn_a", "beta")
    changed.className = "com.example.Other"
    store.alter_function(CAT, "up_fn_a", "beta", changed)
    assert direct.get_function("up_fn_a", "beta").className == "com.example.Other"
    store.drop_function(CAT, "up_fn_b", "zeta")
    with pytest.raises(hms.NoSuchObjectException):
        store.get_function(CAT, "up_fn_b", "zeta")
    with pytest.raises(hms.NoSuchObjectException):
        store.drop_function(CAT, "up_fn_b", "zeta")
    with pytest.raises(hms.AlreadyExistsException):
        store.create_function(function("up_fn_a", "alpha"))


def test_column_statistics(store, direct):
    db = "up_stats"
    create(store, db, table(hms, db, "events", part_keys=[("ds", "string")]))
    add(store, direct.get_table(db, "events"), "1")
    before = int(time.time())
    store.update_table_column_statistics(CAT, column_stats(db, "events", None, ["id", "name"]))
    store.update_partition_column_statistics(CAT, column_stats(db, "events", "ds=1", ["id"]), ["1"])
    asked = store.get_table_column_statistics(CAT, db, "events", ["name", "missing", "id"])
    assert asked == [direct.get_table_column_statistics(db, "events", c).statsObj[0] for c in ("name", "id")]
    assert store.get_partition_column_statistics(CAT, db, "events", ["ds=1", "ds=9"], ["name", "id"]) == \
        {"ds=1": direct.get_partition_column_statistics(db, "events", "ds=1", "id").statsObj}
    analyzed = store.statistics_analyzed_at(CAT, db, "events", None, "id")
    assert analyzed == direct.get_table_column_statistics(db, "events", "id").statsDesc.lastAnalyzed
    assert analyzed >= before
    assert store.statistics_analyzed_at(CAT, db, "events", "ds=1", "id") == \
        direct.get_partition_column_statistics(db, "events", "ds=1", "id").statsDesc.lastAnalyzed
    assert store.statistics_analyzed_at(CAT, db, "events", "ds=1", "name") is None   # Hive 2.3 answers a null
    store.delete_table_column_statistics(CAT, db, "events", "name")
    assert [o.colName for o in store.get_table_column_statistics(CAT, db, "events", ["id", "name"])] == ["id"]
    with pytest.raises(hms.NoSuchObjectException):
        store.delete_table_column_statistics(CAT, db, "events", "name")
    store.delete_partition_column_statistics(CAT, db, "events", "ds=1", None)
    assert store.get_partition_column_statistics(CAT, db, "events", ["ds=1"], ["id"]) == {}
    with pytest.raises(hms.NoSuchObjectException):
        store.get_table_column_statistics(CAT, db, "nope", ["id"])


def test_drops_report_the_tables_and_partition_locations_they_removed(store, direct):
    db = "up_drop"
    create(store, db, table(hms, db, "events", part_keys=[("ds", "string")]), table(hms, db, "dim"))
    add(store, direct.get_table(db, "events"), "1", "2")
    locations = sorted(p.sd.location for p in direct.get_partitions(db, "events", -1))
    before = direct.get_table(db, "events")
    dropped = store.drop_table(CAT, db, "events")
    assert dropped.table == before and sorted(dropped.partition_locations) == locations
    with pytest.raises(hms.NoSuchObjectException):
        direct.get_table(db, "events")
    with pytest.raises(hms.NoSuchObjectException):
        store.drop_table(CAT, db, "events")
    store.create_table(table(hms, db, "events", part_keys=[("ds", "string")]))
    add(store, direct.get_table(db, "events"), "7")
    with pytest.raises(hms.InvalidOperationException):
        store.drop_database(CAT, db, False)
    dropped_tables = store.drop_database(CAT, db, True)
    assert [(d.table.tableName, [loc.rsplit("/", 1)[1] for loc in d.partition_locations]) for d in dropped_tables] \
        == [("dim", []), ("events", ["ds=7"])]
    with pytest.raises(hms.NoSuchObjectException):
        direct.get_database(db)


def test_locks_are_the_upstreams(store, direct):
    db = "up_locks"
    create(store, db, table(hms, db, "t"))
    first = store.lock([exclusive(db, "t")], None, "alice", "host1", None)
    assert first == LockOutcome(first.lock_id, ACQUIRED, ((db, "t"),), 0)   # no notification log: head 0
    second = store.lock([exclusive(db, "t")], None, "bob", "host2", "agent")
    assert second == LockOutcome(second.lock_id, WAITING)
    shown = store.show_locks(db, "t", None, None)
    assert [(e.lockid, e.state, e.user) for e in shown] == \
        [(first.lock_id, ACQUIRED, "alice"), (second.lock_id, WAITING, "bob")]
    assert shown == direct.show_locks(hms.ShowLocksRequest(dbname=db, tablename="t")).locks
    assert store.check_lock(second.lock_id).state == WAITING
    store.heartbeat(first.lock_id, None)
    store.unlock(first.lock_id)
    assert store.check_lock(second.lock_id) == LockOutcome(second.lock_id, ACQUIRED, ((db, "t"),), 0)
    store.unlock(second.lock_id)
    with pytest.raises(hms.NoSuchLockException):
        store.check_lock(second.lock_id)
    assert store.show_locks(db, None, None, None) == []


def test_transactions_are_the_upstreams(store, direct):
    create(store, "up_txns", table(hms, "up_txns", "t"))
    ids = store.open_txns(2, "alice", "host1", None, None)
    high, txns = store.get_open_txns()
    info = direct.get_open_txns_info()
    assert high == info.txn_high_water_mark >= max(ids)
    assert txns == sorted(info.open_txns, key=lambda t: t.id)
    assert {t.id: t.state for t in txns if t.id in ids} == {ids[0]: OPEN, ids[1]: OPEN}
    snapshot = store.current_txn_list()
    assert snapshot.high_watermark == high and set(ids) <= set(snapshot.open_ids)
    held = store.lock([exclusive("up_txns", "t")], ids[0], "alice", "host1", None)
    assert held.state == ACQUIRED
    assert [e.lockid for e in store.show_locks(None, None, None, ids[0])] == [held.lock_id]
    assert store.show_locks(None, None, None, ids[1]) == []   # Hive 2.3 cannot filter by transaction itself
    with pytest.raises(hms.TxnOpenException):
        store.unlock(held.lock_id)
    store.heartbeat(None, ids[0])
    assert store.heartbeat_txn_range(ids[0], ids[1]) == (set(), set())
    assert store.commit_txn(ids[0]) == []   # the upstream does not say which write ids it allocated
    assert store.abort_txns([ids[1]]) == []
    states = {t.id: t.state for t in store.get_open_txns()[1]}
    assert ids[0] not in states and states[ids[1]] == ABORTED
    assert ids[1] in store.current_txn_list().aborted_ids
    assert store.show_locks("up_txns", None, None, None) == []
    with pytest.raises(hms.TxnAbortedException):
        store.heartbeat(None, ids[1])
    with pytest.raises(hms.NoSuchTxnException):
        store.abort_txns([ids[1] + 1000])
    assert store.abort_txns([ids[1] + 1000], skip_unknown=True) == []
    assert store.txn_writes(ids[0]) == [] and store.reap_expired() == []


def test_write_ids_are_refused_as_hive_2_3_has_none(store):
    assert not store.keeps_write_ids
    with pytest.raises(hms.MetaException, match="write ids"):
        store.allocate_write_ids("default", "t", [1])
    with pytest.raises(hms.MetaException, match="write ids"):
        store.valid_write_ids(["default.t"], None)


def test_a_metastore_without_a_notification_log(store, direct):
    assert store.current_event_id() == 0 == direct.get_current_notificationEventId().eventId
    assert store.get_events(0) == [] and store.oldest_event_id() is None
    assert store.table_version("default", "t") == 0
    assert store.count_events(0, "default") == 0   # Hive 2.3 has no get_notification_events_count: counted here
    with pytest.raises(hms.MetaException, match="own notification log"):
        store.add_events([])
    assert store.clean_events(0) == 0


def test_a_call_the_upstream_lacks_is_refused_by_name(store):
    with pytest.raises(hms.MetaException, match="does not support get_catalogs"):
        store.upstream.call("get_catalogs")
    assert store.upstream.optional("get_catalogs") is None


def test_an_unreachable_upstream_fails_reads_as_retryable_and_writes_not(hive):
    bound = 4.0
    proxy = TcpProxy(hive.port)
    via = f"thrift://127.0.0.1:{proxy.port}"
    cut_off = upstream_store(UpstreamPool([via], timeout_s=2.0, connect_timeout_s=1.0, call_timeout_s=bound))
    try:
        assert cut_off.get_database(CAT, "default").name == "default"
        proxy.cut()
        started = time.monotonic()
        with pytest.raises(hms.MetaException) as info:
            cut_off.get_database_names(CAT)
        assert time.monotonic() - started < bound + SLACK_S
        assert "TTransportException" in info.value.message and via in info.value.message
        assert HIVE_RETRIES.match(info.value.message)   # Hive's clients retry it
        proxy.restore()
        assert "default" in cut_off.get_database_names(CAT)
        proxy.stall()   # a write sent whole, then no answer: it may have been applied
        with pytest.raises(hms.MetaException) as info:
            cut_off.create_database(database(hms, "up_maybe"))
        assert "may have been applied" in info.value.message and via in info.value.message
        assert not HIVE_RETRIES.match(info.value.message)   # Hive's clients must not send it again
        proxy.restore()
        assert cut_off.get_database(CAT, "default").name == "default"
    finally:
        cut_off.close()
        proxy.close()


# ---- against hmsproxy: a notification log, write ids, partition ids ------------------------------------------------

def test_events_of_an_upstream_with_a_notification_log(pstore, pdirect, monkeypatch):
    before = pstore.current_event_id()
    pdirect.create_database(database(hms, "ev"))
    pdirect.create_table(table(hms, "ev", "clicks", part_keys=[("ds", "string")]))
    pdirect.create_table(table(hms, "ev", "other"))
    pdirect.create_table(table(hms, "ev", "third"))
    head = pstore.current_event_id()
    assert head == pdirect.get_current_notificationEventId().eventId == before + 4
    events = pstore.get_events(before)
    assert [(e.eventType, e.tableName) for e in events] == \
        [("CREATE_DATABASE", None), ("CREATE_TABLE", "clicks"), ("CREATE_TABLE", "other"), ("CREATE_TABLE", "third")]
    assert events == pdirect.get_next_notification(hms.NotificationEventRequest(lastEvent=before)).events
    assert pstore.get_events(before, 1) == events[:1]
    assert pstore.get_events(before, tables=["clicks"]) == [events[1]]
    assert pstore.get_events(before, skip_types=["CREATE_TABLE"]) == [events[0]]
    assert pstore.get_events(before, 2, tables=["other", "third"]) == events[2:]
    assert pstore.get_events(before, cat=CAT, db="ev") == events
    assert pstore.get_events(before, db="nope") == []
    assert pstore.table_version("ev", "clicks") == events[1].eventId
    assert pstore.table_version("ev", "nope") == 0
    assert pstore.count_events(before, "ev") == 4
    assert pstore.count_events(before, "ev", up_to=events[1].eventId) == 2
    assert pstore.oldest_event_id() == 1
    assert pstore.get_table_bundle(CAT, "ev", "clicks").version == head
    monkeypatch.setattr(store_module, "VERSION_WINDOW", 1)   # only the newest event, about another table
    assert pstore.table_version("ev", "clicks") == head - 1 > events[1].eventId   # an upper bound
    assert pstore.table_version("ev", "third") == events[3].eventId


def test_write_ids_and_lock_heads_of_a_hive_4_like_upstream(pstore, pdirect):
    assert pstore.keeps_write_ids
    pstore.create_database(database(hms, "acid"))
    tbl_id = pstore.create_table(table(hms, "acid", "t", params={
        "transactional": "true", "transactional_properties": "insert_only"}))
    assert tbl_id == pdirect.get_table("acid", "t").id > 0
    [txn] = pstore.open_txns(1, "alice", "host1", None, None)
    assert pstore.allocate_write_ids("acid", "t", [txn]) == [(txn, 1)]
    [ids] = pstore.valid_write_ids(["acid.t"], None)
    assert ids == ValidWriteIdList.of("acid.t", 1, [1])
    lock = pstore.lock([exclusive("acid", "t")], txn, "alice", "host1", None)
    assert lock == LockOutcome(lock.lock_id, ACQUIRED, (("acid", "t"),), pstore.current_event_id())
    assert lock.event_head > 0
    bundle = pstore.get_table_bundle(CAT, "acid", "t")
    assert bundle.write_ids == ids and bundle.table == pdirect.get_table("acid", "t")
    assert bundle.version == pstore.current_event_id()
    assert pstore.commit_txn(txn) == []
    assert pstore.valid_write_ids(["acid.t"], None) == [ValidWriteIdList.of("acid.t", 1)]
    assert pstore.valid_write_ids(["acid.t"], pstore.current_txn_list()) == [ValidWriteIdList.of("acid.t", 1)]


def test_partition_batches_through_an_upstream_with_partition_ids(pstore, pdirect):
    pstore.create_database(database(hms, "batch"))
    pstore.create_table(table(hms, "batch", "p", part_keys=[("ds", "string")]))
    add(pstore, pdirect.get_table("batch", "p"), "c", "a", "e", "b", "d")   # ids in this order

    def everything(predicate, names_only):
        items, start = [], 0
        while start >= 0:
            batch = pstore.get_partition_batch(CAT, "batch", "p", start, -1, 2, predicate, names_only)
            assert len(batch.items) <= 2 and batch.max_id - batch.min_id == 4
            items += batch.items if names_only else [p.values[0] for p in batch.items]
            start = batch.next_id
        return items

    assert everything(None, False) == ["c", "a", "e", "b", "d"]
    assert everything(None, True) == ["ds=c", "ds=a", "ds=e", "ds=b", "ds=d"]
    assert everything(lambda values: values[0] in "bd", True) == ["ds=b", "ds=d"]
    assert everything(lambda values: values[0] in "bd", False) == ["b", "d"]
