"""Every partition set the cache holds keeps its partitions' own bytes in the cache's hot set (--cache-hot-bytes),
however its table came into the cache: a set without one packs each write at once and expands nothing."""
from __future__ import annotations

from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.builders import placeholder_sd
from support.sql_stores import sqlite_store

DB = "d"


def _table(name: str, keys: list[str]) -> hms.Table:
    return hms.Table(tableName=name, dbName=DB, catName="hive", sd=placeholder_sd(), parameters={},
                     partitionKeys=[hms.FieldSchema(name=k, type="string") for k in keys],
                     tableType="EXTERNAL_TABLE")


def test_a_table_loaded_alone_keeps_its_partitions_in_the_caches_hot_set(tmp_path):
    sql = sqlite_store(tmp_path, DB)
    for name, partitions in (("empty", 0), ("filled", 3)):
        sql.create_table(_table(name, ["p"]))
        sql.add_partitions("hive", DB, name, [hms.Partition(dbName=DB, tableName=name, catName="hive",
                                                            values=[str(i)], sd=placeholder_sd(), parameters={})
                                              for i in range(partitions)])
    store = CachedStore(sql, SharedCache(max_bytes=1 << 30), CachePolicy.from_patterns(), Metrics(), stats_as_stored)
    for name in ("empty", "filled"):
        store.load_table(("hive", DB, name))   # as the loader reads a table asked for, one at a time
        entry = store.cache.get_table(("hive", DB, name))
        assert entry is not None and entry.partitions.hot is store.cache.hot, name
