"""Another instance's change to a small table: the poller's round reads the table again and replaces its entry,
so the next read through this instance is answered from the cache, not from the database while the loader reads
the same table. Large tables, dropped tables and a round past its budget keep the old rule (drop, reload later).

B's poller loop and loader are stopped, and its rounds are run here (catch_up): what each round leaves in the
cache is then exactly what the round did.
"""
from __future__ import annotations

import uuid

import pytest
import thriftpy2.rpc

from hmsproxy.idl import hms
from hmsproxy.ops.config import Settings
from hmsproxy.server import start
from hmsproxy.store.cache.cached_store import REFRESH_MAX_PARTITIONS
from support.builders import placeholder_sd
from support.databases import fresh_database
from support.polling import wait_for

DEADLINE_S = 10.0


def _connect(port):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=60000)


def _server(url, workdir):
    return start(Settings(port=0, metrics_port=0, db=url, warehouse=str(workdir / "warehouse"), poll_interval_s=0.05))


def _table(db, name, partition_keys=()):
    return hms.Table(tableName=name, dbName=db, sd=placeholder_sd(columns=[("a", "int")]),
                     partitionKeys=[hms.FieldSchema(name=k, type="string") for k in partition_keys],
                     parameters={"version": "1"}, tableType="EXTERNAL_TABLE")


def _set_version(client, db, name, version):
    table = client.get_table(db, name)
    table.parameters["version"] = str(version)
    client.alter_table(db, name, table)


@pytest.fixture(params=["sqlite", "mariadb", "postgres"])
def pair(request, tmp_path):
    """A and B on one database, one database `db` made through A and cached by B; B's background work stopped."""
    with fresh_database(request.param, tmp_path) as url:
        a = _server(url, tmp_path / "a")
        b = _server(url, tmp_path / "b")
        ca, cb = _connect(a.port), _connect(b.port)
        db = f"db_{uuid.uuid4().hex[:8]}"
        try:
            ca.create_database(hms.Database(name=db, parameters={}))
            yield a, b, ca, cb, db
        finally:
            ca.close()
            cb.close()
            a.stop()
            b.stop()


def _cached_by_b_then_stopped(a, b, db, name):
    """Waits until B caches the table, then stops B's poller and loader: nothing changes B's cache but catch_up."""
    wait_for(lambda: b.store.cache.get_table(("hive", db, name)) is not None, f"{name} cached in B", DEADLINE_S)
    wait_for(lambda: b.poller.last_applied >= a.store.current_event_id(), "B applied the set-up", DEADLINE_S)
    b.poller.stop()
    b.loader.stop()


def _round(a, b):
    assert b.poller.catch_up(a.store.current_event_id())


def test_a_small_table_changed_elsewhere_is_cached_again_by_the_round_that_applies_it(pair):
    a, b, ca, cb, db = pair
    ca.create_table(_table(db, "t"))
    _cached_by_b_then_stopped(a, b, db, "t")
    _set_version(ca, db, "t", 2)
    _round(a, b)
    entry = b.store.cache.get_table(("hive", db, "t"))
    assert entry is not None and entry.table.parameters["version"] == "2"
    assert cb.get_table(db, "t").parameters["version"] == "2"


def test_a_partitioned_table_within_the_bound_is_refreshed_with_its_partitions(pair):
    a, b, ca, cb, db = pair
    ca.create_table(_table(db, "p", ["k"]))
    ca.add_partitions([hms.Partition(dbName=db, tableName="p", values=[str(i)], sd=placeholder_sd(), parameters={})
                       for i in range(REFRESH_MAX_PARTITIONS - 1)])
    _cached_by_b_then_stopped(a, b, db, "p")
    ca.add_partition(hms.Partition(dbName=db, tableName="p", values=["last"], sd=placeholder_sd(), parameters={}))
    _round(a, b)
    entry = b.store.cache.get_table(("hive", db, "p"))
    assert entry is not None and len(entry.partitions) == REFRESH_MAX_PARTITIONS
    assert "k=last" in cb.get_partition_names(db, "p", -1)


def test_a_table_over_the_bound_is_dropped_for_the_loader(pair):
    a, b, ca, cb, db = pair
    ca.create_table(_table(db, "big", ["k"]))
    ca.add_partitions([hms.Partition(dbName=db, tableName="big", values=[str(i)], sd=placeholder_sd(),
                                     parameters={}) for i in range(REFRESH_MAX_PARTITIONS + 1)])
    _cached_by_b_then_stopped(a, b, db, "big")
    _set_version(ca, db, "big", 2)
    _round(a, b)
    assert b.store.cache.get_table(("hive", db, "big")) is None
    assert cb.get_table(db, "big").parameters["version"] == "2"   # from the database meanwhile


@pytest.mark.parametrize("altered_first", [False, True], ids=["dropped", "altered-then-dropped"])
def test_a_table_dropped_elsewhere_leaves_the_cache(pair, altered_first):
    """Also when an alter's event is applied after the drop happened: reading the table again then finds nothing,
    and the entry is dropped, not kept as it was."""
    a, b, ca, cb, db = pair
    ca.create_table(_table(db, "t"))
    _cached_by_b_then_stopped(a, b, db, "t")
    if altered_first:
        _set_version(ca, db, "t", 2)
    ca.drop_table(db, "t", True)
    _round(a, b)
    assert b.store.cache.get_table(("hive", db, "t")) is None
    with pytest.raises(hms.NoSuchObjectException):
        cb.get_table(db, "t")


def test_a_round_past_its_budget_drops_entries_as_before(pair):
    a, b, ca, cb, db = pair
    ca.create_table(_table(db, "t"))
    _cached_by_b_then_stopped(a, b, db, "t")
    b.poller.refresh_budget_s = 0.0
    _set_version(ca, db, "t", 2)
    _round(a, b)
    assert b.store.cache.get_table(("hive", db, "t")) is None
    assert cb.get_table(db, "t").parameters["version"] == "2"


def test_a_round_that_reads_the_next_event_does_not_look_for_a_gap(pair):
    """The next event in the log proves none before it was cleaned up: the log's oldest event is not read."""
    a, b, ca, cb, db = pair
    ca.create_table(_table(db, "t"))
    _cached_by_b_then_stopped(a, b, db, "t")
    oldest_reads = []
    oldest_event_id = b.store.oldest_event_id
    b.store.oldest_event_id = lambda: oldest_reads.append(1) or oldest_event_id()
    _set_version(ca, db, "t", 2)
    _round(a, b)
    assert cb.get_table(db, "t").parameters["version"] == "2"
    assert oldest_reads == []
