"""An add's cache rows (its partitions in canonical form, encoded) are made while the query that commits it runs
on MySQL/MariaDB, instead of after it returns: that work overlaps the database's. Wherever they are made, the
cache ends up holding what the database holds, also when the store adds only some of the partitions asked for, or
returns other objects than it was given; and work that fails leaves the connection usable."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal, WorkAhead
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store import canonical
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.stats_codec import stats_as_stored
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS
from support.polling import wait_for
from support.sql_stores import add_table_t, fresh_store, partition_k, sd_at

KEY = ("hive", "d", "t")
ROOT = "file:/w/d.db/t"


def _partitions(values: range, tag: str) -> list[Any]:
    return [partition_k(str(v), f"{ROOT}/k={v}", {"tag": tag}) for v in values]


def _add(cached: CachedStore, store: SqlStore, parts: list[Any], if_not_exists: bool = False) -> list[Any]:
    """As the handler adds: with the ADD_PARTITION event (the store makes it itself with if_not_exists)."""
    events = [] if if_not_exists else [messages.add_partition(store.get_table(*KEY), parts)]
    return cached.add_partitions(*KEY, parts, if_not_exists, journal=Journal(events))


def _cached(store: SqlStore) -> CachedStore:
    cached = CachedStore(store, SharedCache(max_bytes=1 << 30), CachePolicy.from_patterns(), Metrics(), stats_as_stored)
    cached.load_catalog("hive")
    cached.load_table(KEY)
    return cached


def _same_as_database(cached: CachedStore, store: SqlStore) -> None:
    entry = cached.cache.get_table(KEY)
    assert entry is not None, "the add dropped the table's entry instead of updating it"
    assert sorted(entry.partitions.names) == sorted(store.get_partition_names(*KEY))
    by_name = {tuple(p.values): p for p in store.get_partitions(*KEY)}
    assert {tuple(p.values): p for p in cached.get_partitions(*KEY)} == by_name


def test_the_cache_rows_of_an_add_are_made_while_its_commit_query_runs(tmp_path: Path, monkeypatch):
    with fresh_store("mariadb", tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(ROOT))
        cached = _cached(store)
        made = threading.Event()
        canonical_partition = canonical.partition

        def recorded(*args: Any) -> Any:
            made.set()
            return canonical_partition(*args)

        monkeypatch.setattr(canonical, "partition", recorded)
        outcome: list[Any] = []
        adding = threading.Thread(target=lambda: outcome.append(_add(cached, store, _partitions(range(3), "first"))))
        with store.db.engine.connect() as holder:   # the commit query's first statement bumps this row: it waits
            holder.execute(select(s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID).with_for_update())
            adding.start()
            wait_for(made.is_set, "the cache rows made while the add's commit query waits for the lock")
            assert outcome == [], "the add returned while its commit could not have run"
            holder.commit()
        adding.join(timeout=60)
        [added] = outcome
        assert [p.values for p in added] == [["0"], ["1"], ["2"]]
        _same_as_database(cached, store)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_add_that_skips_existing_partitions_caches_only_those_it_added(backend, tmp_path: Path):
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(ROOT))
        cached = _cached(store)
        _add(cached, store, _partitions(range(0, 3), "first"))
        added = _add(cached, store, _partitions(range(1, 5), "second"), if_not_exists=True)
        assert [p.values for p in added] == [["3"], ["4"]]
        _same_as_database(cached, store)
        tags = {p.values[0]: p.parameters["tag"] for p in cached.get_partitions(*KEY)}
        assert tags == {"0": "first", "1": "first", "2": "first", "3": "second", "4": "second"}


def test_a_store_returning_other_objects_than_it_was_given_is_cached_from_those(tmp_path: Path, monkeypatch):
    """As a store in front of another metastore returns the partitions that one answers."""
    with fresh_store("sqlite", tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(ROOT))
        cached = _cached(store)
        add = store.add_partitions

        def answered_by_another(*args: Any, **kwargs: Any) -> list[Any]:
            return [partition_k(p.values[0], p.sd.location, {**p.parameters, "answered": "yes"})
                    for p in add(*args, **kwargs)]

        monkeypatch.setattr(store, "add_partitions", answered_by_another)
        _add(cached, store, _partitions(range(2), "first"))
        assert {p.parameters.get("answered") for p in cached.get_partitions(*KEY)} == {"yes"}


def test_work_that_fails_while_the_commit_runs_fails_the_call_and_leaves_the_connection_usable(
        tmp_path: Path, monkeypatch):
    with fresh_store("mariadb", tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(ROOT))
        cached = _cached(store)
        canonical_partition = canonical.partition

        def failing(*args: Any) -> Any:
            raise RuntimeError("the cache's encoding failed")

        monkeypatch.setattr(canonical, "partition", failing)
        with pytest.raises(RuntimeError, match="encoding failed"):
            _add(cached, store, _partitions(range(2), "first"))
        assert sorted(store.get_partition_names(*KEY)) == ["k=0", "k=1"]   # committed: only the cache missed it
        monkeypatch.setattr(canonical, "partition", canonical_partition)
        for _ in range(3):   # every pooled connection still answers in step
            _add(cached, store, _partitions(range(2, 4), "again"), if_not_exists=True)
            assert sorted(store.get_partition_names(*KEY)) == ["k=0", "k=1", "k=2", "k=3"]


def test_work_ahead_runs_once_and_hands_its_failure_to_whoever_asks():
    calls: list[int] = []

    def make() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first")
        return len(calls)

    work = WorkAhead(make)
    work.run()
    work.run()
    assert calls == [1]
    with pytest.raises(ValueError, match="first"):
        work.result()
    assert calls == [1]
    assert WorkAhead(lambda: 7).result() == 7
