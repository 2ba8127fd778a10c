"""Under a tiny memory bound the cache evicts whole tables (least recently used first), serves them from
the database meanwhile, never holds a table larger than the bound, and never answers wrongly."""
from __future__ import annotations

import pytest

from api.builders import PLACEHOLDER_FORMATS, sd
from hmsproxy.idl import hms
from hmsproxy.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore, entry_from_bundle
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from support.sql_stores import sqlite_store


def _sd(location):
    return sd(hms, [("c", "string")], location, **PLACEHOLDER_FORMATS)


@pytest.fixture
def stores(tmp_path):
    plain = sqlite_store(tmp_path, "d")
    sizes = {"t0": 50, "t1": 50, "t2": 50, "t3": 50, "huge": 3000}
    for name, count in sizes.items():
        plain.create_table(hms.Table(tableName=name, dbName="d", catName="hive", sd=_sd(f"file:/w/d.db/{name}"),
                                     partitionKeys=[hms.FieldSchema(name="k", type="int")], parameters={},
                                     tableType="MANAGED_TABLE"))
        plain.add_partitions("hive", "d", name, [
            hms.Partition(values=[str(i)], sd=_sd(f"file:/w/d.db/{name}/k={i}"), parameters={"i": str(i)})
            for i in range(count)])
    metrics = Metrics()
    probe = SharedCache(max_bytes=1 << 40)
    cached = CachedStore(plain, probe, CachePolicy.from_patterns(), metrics)
    cached.load_catalog("hive")
    cached.load_table(("hive", "d", "t0"))
    one_table = probe.bytes_used()
    # room for about two small tables, far too little for the huge one
    cache = SharedCache(max_bytes=int(one_table * 2.5), on_evict=lambda key: metrics.cache_evictions.inc())
    requested = []
    store = CachedStore(plain, cache, CachePolicy.from_patterns(), metrics, request_load=requested.append)
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
    store.alter_partitions("hive", "d", "t1", [hms.Partition(values=["1"], sd=_sd("file:/w/x"), parameters={})])
    assert not cache.put_table(key, entry_from_bundle(stale), loaded_at_generation=generation)
    store.load_table(key)
    assert store.get_partition("hive", "d", "t1", ["1"]).sd.location == "file:/w/x"
