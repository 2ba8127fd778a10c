"""Under a tiny memory bound the cache evicts whole tables (least recently used first), serves them from
the database meanwhile, never holds a table larger than the bound, and never answers wrongly."""
from __future__ import annotations

import pytest

from hmsproxy.idl import hms
from hmsproxy.idl.codec import encode
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore, entry_from_bundle
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.reader import Reader
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.builders import placeholder_sd
from support.sql_stores import sqlite_store


@pytest.fixture
def stores(tmp_path):
    plain = sqlite_store(tmp_path, "d")
    sizes = {"t0": 50, "t1": 50, "t2": 50, "t3": 50, "huge": 3000}
    for name, count in sizes.items():
        plain.create_table(hms.Table(tableName=name, dbName="d", catName="hive",
                                     sd=placeholder_sd(f"file:/w/d.db/{name}"),
                                     partitionKeys=[hms.FieldSchema(name="k", type="int")], parameters={},
                                     tableType="MANAGED_TABLE"))
        plain.add_partitions("hive", "d", name, [
            hms.Partition(values=[str(i)], sd=placeholder_sd(f"file:/w/d.db/{name}/k={i}"), parameters={"i": str(i)})
            for i in range(count)])
    metrics = Metrics()
    probe = SharedCache(max_bytes=1 << 40)
    cached = CachedStore(plain, probe, CachePolicy.from_patterns(), metrics, stats_as_stored)
    cached.load_catalog("hive")
    cached.load_table(("hive", "d", "t0"))
    one_table = probe.bytes_used()
    # room for about two small tables, far too little for the huge one
    cache = SharedCache(max_bytes=int(one_table * 2.5), on_evict=lambda key: metrics.cache_evictions.inc())
    requested = []
    store = CachedStore(plain, cache, CachePolicy.from_patterns(), metrics, stats_as_stored,
                        request_load=requested.append)
    store.load_catalog("hive")
    yield plain, store, cache, metrics, requested
    plain.close()


def test_lru_eviction_keeps_within_the_bound_and_answers_stay_right(stores):
    plain, store, cache, metrics, requested = stores
    for name in ("t0", "t1", "t2", "t3"):
        store.load_table(("hive", "d", name))
        assert cache.bytes_used() <= cache.max_bytes
    assert metrics.registry.get_sample_value("hmsproxy_cache_evictions_total") >= 2
    assert cache.get_table(("hive", "d", "t0")) is None          # least recently used went first
    assert cache.get_table(("hive", "d", "t3")) is not None
    for name in ("t0", "t1", "t2", "t3"):                        # evicted or not, the same answers
        assert list(store.get_partitions("hive", "d", name)) == plain.get_partitions("hive", "d", name)
        assert store.get_table("hive", "d", name) == plain.get_table("hive", "d", name)
    misses = metrics.registry.get_sample_value(
        "hmsproxy_cache_lookups_total", {"method": "internal", "kind": "partition", "result": "miss"})
    assert misses >= 2 and ("hive", "d", "t0") in requested      # served from the database, queued to reload


def test_a_table_larger_than_the_bound_is_never_cached_and_not_reloaded_again_and_again(stores):
    _plain, store, cache, _metrics, requested = stores
    store.load_table(("hive", "d", "huge"))
    assert cache.get_table(("hive", "d", "huge")) is None
    assert cache.is_oversized(("hive", "d", "huge"))
    assert len(store.get_partition_names("hive", "d", "huge")) == 3000
    assert ("hive", "d", "huge") not in requested


def test_a_load_that_overlaps_a_write_is_dropped(stores):
    plain, store, cache, _metrics, _requested = stores
    key = ("hive", "d", "t1")
    generation = cache.generation(key)
    stale = plain.get_table_bundle(*key)
    store.alter_partitions("hive", "d", "t1",
                           [hms.Partition(values=["1"], sd=placeholder_sd("file:/w/x"), parameters={})])
    assert not cache.put_table(key, entry_from_bundle(stale, hot=None), loaded_at_generation=generation)
    store.load_table(key)
    assert store.get_partition("hive", "d", "t1", ["1"]).sd.location == "file:/w/x"


def test_ready_bytes_stay_current_through_other_tables_writes_and_end_with_their_own_tables_change(stores):
    """The bytes ready_table gives come with a Held that stays current until that table's entry is replaced,
    dropped, evicted or cleared (a repeated get_table is answered from them while it is); a write to another table
    changes nothing for them."""
    plain, store, cache, _metrics, _requested = stores
    reader = Reader("get_table")
    for name in ("t0", "t1"):
        store.load_table(("hive", "d", name))
    t0, t1 = (store.ready_table(reader, "hive", "d", name) for name in ("t0", "t1"))
    assert t0 is not None and t1 is not None
    assert t0.answer == encode(plain.get_table("hive", "d", "t0"))
    store.alter_partitions("hive", "d", "t1",
                           [hms.Partition(values=["1"], sd=placeholder_sd("file:/w/y"), parameters={})])
    assert not t1.held.current and not store.ready_again(reader, t1.held)
    assert store.ready_again(reader, t0.held)
    altered = plain.get_table("hive", "d", "t0")
    altered.parameters = {"v": "2"}
    store.alter_table("hive", "d", "t0", altered)
    assert not store.ready_again(reader, t0.held)
    again = store.ready_table(reader, "hive", "d", "t0")
    assert again is not None and again.held.current and again.answer != t0.answer
    for name in ("t1", "t2", "t3"):   # room for about two: t0, least recently used, is evicted
        store.load_table(("hive", "d", name))
    assert cache.get_table(("hive", "d", "t0")) is None and not again.held.current
    t3 = store.ready_table(reader, "hive", "d", "t3")
    assert t3 is not None and store.ready_again(reader, t3.held)
    store.drop_table("hive", "d", "t3")
    assert not t3.held.current
    t2 = store.ready_table(reader, "hive", "d", "t2")
    assert t2 is not None and t2.held.current
    cache.clear()
    assert not t2.held.current
