"""The cache's bookkeeping beside the cached objects stays bounded under a write load over ever new tables
(issue 11: RSS grew without bound), and bounding it keeps the rules it exists for: a load that overlapped a
write is never cached, writes to one table stay serialised."""
from __future__ import annotations

import threading
import time

import pytest

from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.builders import placeholder_sd
from support.sql_stores import sqlite_store

KEPT = 50


def _table(name: str) -> hms.Table:
    return hms.Table(tableName=name, dbName="d", catName="hive", sd=placeholder_sd(f"file:/w/d.db/{name}"),
                     partitionKeys=[], parameters={}, tableType="EXTERNAL_TABLE")


@pytest.fixture
def store(tmp_path):
    plain = sqlite_store(tmp_path, "d")
    cache = SharedCache(max_bytes=1 << 30, generations_kept=KEPT)
    requested: list = []
    cached = CachedStore(plain, cache, CachePolicy.from_patterns(), Metrics(), stats_as_stored,
                         request_load=requested.append)
    cached.load_catalog("hive")
    yield cached, cache, requested
    plain.close()


def test_create_drop_and_misses_over_new_tables_leave_bounded_bookkeeping(store):
    cached, cache, _requested = store
    for i in range(4 * KEPT):
        cached.create_table(_table(f"t{i}"))
        cached.load_table(("hive", "d", f"t{i}"))
        cached.drop_table("hive", "d", f"t{i}")
        with pytest.raises(hms.NoSuchObjectException):
            cached.get_table("hive", "d", f"missing{i}")   # a database answer for a table never cached
    sizes = cache.bookkeeping_entries()
    assert sizes["generations"] <= KEPT + 1
    assert sizes["key_locks"] == 0
    assert cached.loads_in_flight() == 0
    assert cache.table_count() == 0


def test_a_load_that_overlapped_a_write_is_dropped_even_when_generations_were_forgotten(store):
    cached, cache, _requested = store
    key = ("hive", "d", "kept")
    cached.create_table(_table("kept"))
    started_at = cache.generation(key)
    cache.bump(key)                          # a write after the load started ...
    for i in range(2 * KEPT):                # ... then so many others that every generation is forgotten
        cache.bump(("hive", "d", f"other{i}"))
    assert cache.bookkeeping_entries()["generations"] <= KEPT + 1
    assert cache.generation(key) != started_at


def test_writes_to_one_table_stay_serialised_and_leave_no_lock_behind(store):
    _cached, cache, _requested = store
    key = ("hive", "d", "contended")
    inside, most_inside, rounds = [0], [0], 300

    def write() -> None:
        for _ in range(rounds):
            with cache.writing(key):
                inside[0] += 1
                most_inside[0] = max(most_inside[0], inside[0])
                time.sleep(0)                # gives the GIL away: another writer runs while this one is inside
                inside[0] -= 1

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most_inside[0] == 1
    assert cache.bookkeeping_entries()["key_locks"] == 0
    assert cache.generation(key)[1] > 0
