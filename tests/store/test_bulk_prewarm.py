"""Prewarm reads small tables in groups (store/cache/prewarm.py): every table ends up cached as it is in the
database, groups respect their bounds, a large table is read alone, and a write that overlaps a group's read
never leaves a stale entry behind."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache import prewarm
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.prewarm import Loader
from hmsproxy.store.cache.shared_cache import SharedCache, TableKey
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.builders import placeholder_sd
from support.sql_stores import RecordingStore, sqlite_store

SIZES = {"a": 3, "b": 4, "c": 0, "d": 5, "big": 30, "e": 2, "f": 6, "g": 1}




@pytest.fixture
def plain(tmp_path):
    store = sqlite_store(tmp_path, "d", "e")
    for i, (name, count) in enumerate(SIZES.items()):
        database = "de"[i % 2]
        store.create_table(hms.Table(tableName=name, dbName=database, catName="hive", parameters={"n": name},
                                     sd=placeholder_sd(f"file:/w/{database}.db/{name}"), tableType="MANAGED_TABLE",
                                     partitionKeys=[hms.FieldSchema(name="k", type="int")]))
        store.add_partitions("hive", database, name, [
            hms.Partition(values=[str(j)], sd=placeholder_sd(f"file:/w/{name}/k={j}"), parameters={"j": str(j)})
            for j in range(count)])
    yield store
    store.close()


def _cached(delegate: Any, request_load: Callable[[TableKey], None] = lambda key: None
            ) -> tuple[CachedStore, SharedCache]:
    cache = SharedCache(max_bytes=1 << 30)
    return CachedStore(delegate, cache, CachePolicy.from_patterns(), Metrics(), stats_as_stored,
                       request_load=request_load), cache


def _prewarmed(delegate: Any) -> tuple[CachedStore, SharedCache]:
    store, cache = _cached(delegate)
    loader = Loader(store, store.metrics)
    loader.start()
    try:
        assert loader.complete.wait(60)
    finally:
        loader.stop()
    return store, cache


def test_prewarm_groups_small_tables_within_the_bounds_and_caches_every_table_as_stored(plain, monkeypatch):
    monkeypatch.setattr(prewarm, "GROUP_PARTITIONS", 10)
    monkeypatch.setattr(prewarm, "GROUP_TABLES", 3)
    recording = RecordingStore(plain)
    store, cache = _prewarmed(recording)
    counts = plain.partition_counts("hive")
    for group in recording.groups:
        assert 1 < len(group) <= 3 and sum(counts.get(key, 0) for key in group) <= 10
    assert ("d", "big") in recording.alone                    # larger than a group: read alone, streamed
    read = [key for group in recording.groups for key in group] + recording.alone
    assert sorted(read) == sorted((("de"[i % 2], name)) for i, name in enumerate(SIZES))   # each once
    for i, name in enumerate(SIZES):
        key = ("hive", "de"[i % 2], name)
        entry = cache.get_table(key)
        assert entry is not None and len(entry.partitions) == SIZES[name]
        assert store.get_table(*key) == plain.get_table(*key)
        assert list(store.get_partitions(*key)) == plain.get_partitions(*key)


def test_a_store_that_cannot_count_partitions_is_prewarmed_table_by_table(plain):
    recording = RecordingStore(plain)
    recording.partition_counts = lambda cat: None   # as the upstream store answers
    _store, cache = _prewarmed(recording)
    assert recording.groups == [] and len(recording.alone) == len(SIZES)
    assert all(cache.get_table(("hive", "de"[i % 2], name)) is not None for i, name in enumerate(SIZES))


def test_a_write_that_overlaps_a_group_read_leaves_no_stale_entry(plain):
    recording = RecordingStore(plain)
    requested: list[Any] = []
    store, cache = _cached(recording, requested.append)
    store.load_catalog("hive")
    changed = ("hive", "d", "a")
    recording.during_group_read = lambda: store.alter_partitions(
        "hive", "d", "a", [hms.Partition(values=["1"], sd=placeholder_sd("file:/w/moved"), parameters={"j": "moved"})])
    keys = [("hive", "d", "a"), ("hive", "e", "b"), ("hive", "e", "d")]
    loaded = store.load_tables(keys)
    assert loaded == SIZES["b"] + SIZES["d"]                   # the two the write did not touch
    assert cache.get_table(changed) is None and requested == [changed]   # not cached stale: read again
    store.load_table(changed)
    assert store.get_partition("hive", "d", "a", ["1"]).sd.location == "file:/w/moved"
    assert cache.get_table(changed) is not None
