"""The batch API from the cache (CachedStore.get_partition_batch): the same answers as the database's,
batch for batch, with no database round trip while the cached set knows every partition's id; after
local writes too (an add learns the ids it was given, a rename keeps its id)."""
from __future__ import annotations

import random
from typing import Any

import pytest

from hmsproxy.hive.partition_filter import compile_filter
from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.builders import placeholder_sd
from support.sql_stores import sqlite_store
from support.statements import count_statements

KEY = ("hive", "d", "t")
KEYS = [("ds", "string"), ("hr", "int")]



def _partition(ds: str, hr: int) -> Any:
    return hms.Partition(values=[ds, str(hr)], sd=placeholder_sd(f"file:/w/t/ds={ds}/hr={hr}"),
                         parameters={"hr": str(hr)})


@pytest.fixture
def stores(tmp_path):
    plain = sqlite_store(tmp_path, "d")
    plain.create_table(hms.Table(tableName="t", dbName="d", catName="hive", sd=placeholder_sd("file:/w/t"),
                                 parameters={}, partitionKeys=[hms.FieldSchema(name=k, type=t) for k, t in KEYS],
                                 tableType="MANAGED_TABLE"))
    # added in an order unlike the name order, in several calls: ids and names sort differently
    days = [f"2024-01-{d:02d}" for d in random.Random(7).sample(range(1, 29), 28)]
    for day in days:
        plain.add_partitions("hive", "d", "t", [_partition(day, hr) for hr in (3, 1, 2)])
    requested: list[Any] = []
    cached = CachedStore(plain, SharedCache(max_bytes=1 << 30), CachePolicy.from_patterns(), Metrics(), stats_as_stored,
                         request_load=requested.append)
    cached.load_catalog("hive")
    cached.load_table(KEY)
    yield plain, cached, requested
    plain.close()



def _answer(batch: Any, names_only: bool) -> tuple[Any, ...]:
    items = list(batch.items) if names_only else ["/".join(p.values) + repr(sorted(p.parameters.items()))
                                                  + p.sd.location for p in batch.items]
    return items, batch.next_id, batch.min_id, batch.max_id


def _walk(store: Any, size: int, predicate: Any, names_only: bool, from_id: int = 0, to_id: int = -1) -> list[Any]:
    """Every batch of one iteration, as the client library pages through them."""
    answers, next_id = [], from_id
    while next_id >= 0:
        batch = store.get_partition_batch(*KEY, next_id, to_id, size, predicate, names_only)
        answers.append(_answer(batch, names_only))
        next_id = batch.next_id
    return answers


FILTERS = [None, "hr = 2", "ds >= '2024-01-20' and hr < 3", "ds = '2024-01-05'"]


@pytest.mark.parametrize("names_only", [False, True])
@pytest.mark.parametrize("size", [1, 7, 1000])
def test_batches_from_the_cache_are_the_databases_batch_for_batch(stores, size, names_only):
    plain, cached, _requested = stores
    for text in FILTERS:
        predicate = None if text is None else compile_filter(text, KEYS)
        assert _walk(cached, size, predicate, names_only) == _walk(plain, size, predicate, names_only), text
    low, high = plain.get_partition_batch(*KEY, 0, -1, 1, None, True).min_id, None
    high = plain.get_partition_batch(*KEY, 0, -1, 1, None, True).max_id
    middle = (low + high) // 2
    for from_id, to_id in ((middle, -1), (low, middle), (middle - 5, middle + 5), (high + 1, -1)):
        assert _walk(cached, size, None, names_only, from_id, to_id) == \
            _walk(plain, size, None, names_only, from_id, to_id)


def test_a_batch_from_the_cache_costs_no_database_round_trip(stores):
    plain, cached, _requested = stores
    statements, batch = count_statements(plain, lambda: cached.get_partition_batch(*KEY, 0, -1, 10, None, False))
    assert statements == 0 and len(batch.items) == 10


def test_local_writes_keep_the_ids_known_and_the_batches_right(stores):
    plain, cached, requested = stores
    cached.add_partitions("hive", "d", "t", [_partition("2023-12-31", 0), _partition("2024-02-01", 5)])
    cached.add_partitions("hive", "d", "t", [_partition("2023-06-01", h) for h in range(40)])   # the rebuild path
    cached.rename_partition("hive", "d", "t", ["2024-01-05", "1"], _partition("2024-03-05", 1))
    cached.drop_partitions("hive", "d", "t", ["ds=2024-01-07/hr=2"])
    altered = _partition("2024-01-09", 3)
    altered.parameters = {"changed": "yes"}
    cached.alter_partitions("hive", "d", "t", [altered])
    for size in (1, 13, 1000):
        statements, answers = count_statements(plain, lambda size=size: _walk(cached, size, None, False))
        assert statements == 0
        assert answers == _walk(plain, size, None, False)
    assert requested == []


def test_partitions_of_unknown_id_send_batches_to_the_database_and_the_table_to_be_read_again(stores):
    plain, cached, requested = stores
    entry = cached.cache.get_table(KEY)
    unknown = entry.partitions.with_partitions([_partition("2025-01-01", 0)])   # as if applied from an event
    assert unknown.ids is None
    plain.add_partitions("hive", "d", "t", [_partition("2025-01-01", 0)])
    cached.cache.put_table(KEY, entry.but(partitions=unknown))
    statements, answers = count_statements(plain, lambda: _walk(cached, 50, None, True))
    assert statements > 0 and answers == _walk(plain, 50, None, True)
    assert KEY in requested
    cached.load_table(KEY)
    statements, answers = count_statements(plain, lambda: _walk(cached, 50, None, True))
    assert statements == 0 and answers == _walk(plain, 50, None, True)
