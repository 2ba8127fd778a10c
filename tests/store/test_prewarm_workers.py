"""Prewarm's groups read in worker processes (store/cache/prewarm_workers.py), on every backend: the entries a
worker sends are those the loader would have built itself, a write that overlaps a worker's read is caught as
for any load, and a worker that dies leaves the loader reading the rest itself."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
import thriftpy2.rpc

from hmsproxy.idl import hms
from hmsproxy.ops.config import Settings
from hmsproxy.ops.metrics import Metrics
from hmsproxy.server import prewarm_workers
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.prewarm import Loader
from hmsproxy.store.cache.prewarm_workers import PrewarmWorkers, WorkerPlan
from hmsproxy.store.cache.shared_cache import SharedCache, TableEntry
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.stats_codec import stats_as_stored
from hmsproxy.store.sql.store import DatabaseAccess, SqlStore
from support.builders import placeholder_sd
from support.databases import BACKENDS
from support.hmsproxy_server import start_hmsproxy_process
from support.polling import wait_for
from support.scrape import metric
from support.sql_stores import RecordingStore, fresh_store

SIZES = {("d", "a"): 3, ("d", "b"): 0, ("d", "c"): 7, ("e", "f"): 5, ("e", "g"): 40, ("e", "h"): 2}
CAT = "hive"
COLUMNS = [("c", "string"), ("n", "int")]   # n carries the column statistics



def _populate(store: SqlStore) -> None:
    """Tables of every size in two databases, one transactional, with table and partition statistics."""
    for db in ("d", "e"):
        store.create_database(hms.Database(name=db, locationUri=f"file:/w/{db}.db", parameters={}, catalogName=CAT))
    for (db, name), count in SIZES.items():
        parameters = {"transactional": "true", "transactional_properties": "insert_only"} if name == "c" else {}
        store.create_table(hms.Table(tableName=name, dbName=db, catName=CAT, parameters=parameters,
                                     sd=placeholder_sd(f"file:/w/{db}.db/{name}", COLUMNS), tableType="MANAGED_TABLE",
                                     createTime=1,
                                     partitionKeys=[hms.FieldSchema(name="k", type="int"),
                                                    hms.FieldSchema(name="s", type="string")]))
        store.add_partitions(CAT, db, name, [
            hms.Partition(values=[str(j), f"v{j % 3}"], sd=placeholder_sd(f"file:/w/{name}/k={j}/s=v{j % 3}", COLUMNS),
                          parameters={"j": str(j), "numFiles": "1"}) for j in range(count)])
    stats = hms.ColumnStatisticsObj(colName="n", colType="int", statsData=hms.ColumnStatisticsData(
        longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=3)))
    store.update_table_column_statistics(CAT, hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=True, dbName="e", tableName="f", catName=CAT),
        statsObj=[stats]))
    store.update_partition_column_statistics(CAT, hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=False, dbName="e", tableName="f", partName="k=1/s=v1",
                                           catName=CAT), statsObj=[stats]), ["1", "v1"])



def _plan(store: SqlStore, processes: int = 2) -> WorkerPlan:
    return WorkerPlan(DatabaseAccess(store.db.url), processes, min_partitions=0)


def _prewarmed(delegate: Any, workers: WorkerPlan | None) -> dict[tuple[str, str], TableEntry]:
    cache = SharedCache(max_bytes=1 << 30)
    store = CachedStore(delegate, cache, CachePolicy.from_patterns(), Metrics(), stats_as_stored)
    loader = Loader(store, store.metrics, workers)
    loader.start()
    try:
        assert loader.complete.wait(120)
    finally:
        loader.stop()
    assert store.metrics.prewarm_partitions._value.get() == sum(SIZES.values())
    entries = {key: cache.get_table((CAT, *key)) for key in SIZES}
    return {key: entry for key, entry in entries.items() if entry is not None}


@pytest.fixture(params=BACKENDS)
def populated(request, tmp_path):
    with fresh_store(request.param, tmp_path) as store:
        _populate(store)
        yield store


def test_workers_cache_every_table_as_the_loader_would(populated):
    here = _prewarmed(populated, None)
    recording = RecordingStore(populated)
    by_workers = _prewarmed(recording, _plan(populated))
    assert sorted(by_workers) == sorted(SIZES)
    assert recording.groups == []              # every group was read by a worker, none in this process
    for key, entry in by_workers.items():
        assert entry == here[key], key           # table, partitions' bytes and ids, statistics, write ids, version
        assert len(entry.partitions) == SIZES[key]
    assert by_workers[("e", "f")].partition_stats["k=1/s=v1"]["n"].statsData.longStats.highValue == 9
    assert by_workers[("d", "c")].write_ids is not None
    assert by_workers[("e", "g")].partitions.index_of("k=39/s=v0") is not None


def test_a_write_that_overlaps_a_worker_read_is_not_cached_and_is_read_again(populated):
    cache = SharedCache(max_bytes=1 << 30)
    requested: list[Any] = []
    store = CachedStore(populated, cache, CachePolicy.from_patterns(), Metrics(), stats_as_stored,
                        request_load=requested.append)
    store.load_catalog(CAT)
    workers = PrewarmWorkers(_plan(populated, processes=1), fallback=store.read_entries)
    try:
        def write_then_read(cat: str, tables: Any) -> Any:
            moved = hms.Partition(values=["1", "v1"], sd=placeholder_sd("file:/w/moved", COLUMNS),
                                  parameters={"j": "moved"})
            store.alter_partitions(CAT, "d", "a", [moved])
            return workers.read(cat, tables)

        keys = [(CAT, "d", "a"), (CAT, "d", "c")]
        assert store.load_tables(keys, write_then_read) == SIZES[("d", "c")]   # only the table not written
    finally:
        workers.close()
    assert cache.get_table((CAT, "d", "a")) is None and requested == [(CAT, "d", "a")]
    assert cache.get_table((CAT, "d", "c")) is not None


def test_a_dead_worker_leaves_the_loader_reading_the_rest_itself(populated):
    read_here: list[Any] = []
    store = CachedStore(populated, SharedCache(max_bytes=1 << 30), CachePolicy.from_patterns(), Metrics(),
                        stats_as_stored)

    def fallback(cat: str, tables: Any) -> Any:
        read_here.append(list(tables))
        return store.read_entries(cat, tables)

    workers = PrewarmWorkers(_plan(populated, processes=1), fallback=fallback)
    group = [("d", "a"), ("e", "f")]
    try:
        first = workers.read(CAT, group)
        assert read_here == [] and len(first) == 2
        children = multiprocessing.active_children()
        assert children, "the worker process runs"
        for child in children:
            os.kill(child.pid, signal.SIGKILL)
            child.join(30)
        again = workers.read(CAT, group)
    finally:
        workers.close()
    assert read_here == [group]
    assert again == first


def test_no_workers_for_an_in_memory_sqlite_database_or_when_switched_off(tmp_path):
    memory, on_disk = Database("sqlite://"), Database(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        assert prewarm_workers(memory, Settings()) is None
        assert prewarm_workers(on_disk, Settings(prewarm_workers=0)) is None
        plan = prewarm_workers(on_disk, Settings(prewarm_workers=3, prewarm_workers_min_partitions=50))
        assert plan is not None and plan.processes == 3 and plan.database.url == on_disk.url
        assert not plan.wanted(49) and plan.wanted(50)
    finally:
        memory.engine.dispose()
        on_disk.engine.dispose()


# Run as a process of its own, so that its threads are only those it starts: prewarm workers made while it has no
# other thread, then while one waits. Prints what each pool was and whether its read matched this process's own.
POOLS = """
import json, multiprocessing, sys, threading
from hmsproxy.store.cache.cached_store import entries_read
from hmsproxy.store.cache.prewarm_workers import PrewarmWorkers, WorkerPlan
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.store import DatabaseAccess, SqlStore

def fallback(cat, tables):
    raise AssertionError("read here instead of by a worker")

plan = WorkerPlan(DatabaseAccess(sys.argv[1]), 2, min_partitions=0)
tables = [("d", "a"), ("d", "c"), ("e", "f"), ("e", "g")]
here = entries_read(SqlStore(Database(sys.argv[1])), "hive", tables, hot=None)
report = {}

def pool(name):
    workers = PrewarmWorkers(plan, fallback)
    running = len(multiprocessing.active_children())
    report[name] = {"forked": workers.forked, "running_before_a_read": running,
                    "same_entries": workers.read("hive", tables) == here}
    workers.close()

pool("alone")
waiting = threading.Event()
other = threading.Thread(target=waiting.wait)
other.start()
pool("beside_a_thread")
waiting.set()
other.join()
print(json.dumps(report))
"""


def test_workers_are_forked_in_a_process_without_other_threads_and_spawned_beside_one(tmp_path):
    """Forked workers share the server's imported modules (no second of CPU each to import them again); beside
    another thread, which might hold a lock the fork would copy, they are spawned. Both read the same entries."""
    with fresh_store("sqlite", tmp_path) as store:
        _populate(store)
        url = store.db.url
    done = subprocess.run([sys.executable, "-c", POOLS, url], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["alone"] == {"forked": True, "running_before_a_read": 2, "same_entries": True}
    assert report["beside_a_thread"]["forked"] is False and report["beside_a_thread"]["same_entries"] is True


def test_a_served_prewarm_forks_its_workers_and_serves_what_they_read(tmp_path):
    """`hmsproxy serve` starts the workers before its threads: forked, they read every group, and the cache
    answers with their partitions."""
    (tmp_path / "db").mkdir()
    with fresh_store("sqlite", tmp_path / "db") as store:
        _populate(store)
        url = store.db.url
    server = start_hmsproxy_process(tmp_path / "server", url, "--log-level", "INFO", "--prewarm-workers", "2",
                                    "--prewarm-workers-min-partitions", "1")
    try:
        wait_for(lambda: metric(server, "hmsproxy_prewarm_complete") == 1, "prewarm complete")
        client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=60000)
        try:
            listed = {key: len(client.get_partitions(*key, -1)) for key in SIZES}
        finally:
            client.close()
        served_from_cache = metric(server, "hmsproxy_cache_lookups_total", method="get_partitions", result="hit")
    finally:
        server.stop()
    log = (server.workdir / f"hmsproxy-{server.port}.log").read_text()
    assert f"prewarm: {sum(SIZES.values())} partitions, read by 2 worker processes (forked)" in log
    assert "Traceback" not in log
    assert listed == SIZES
    assert served_from_cache >= len(SIZES)
