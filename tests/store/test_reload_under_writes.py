"""A table whose entry was dropped (another instance wrote to it) is cached again even while this instance
writes to it without pause. A load that a write overlapped is never cached (it may be older than the write);
before the fix such a load was simply queued again, and under a steady stream of writes every new read was
overlapped too: the table was read from the database forever and never served from memory."""
from __future__ import annotations

import threading

import pytest

from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.databases import BACKENDS
from support.sql_stores import add_table_t, fresh_store, partition_k, sd_at

KEY = ("hive", "d", "t")


def _partitions(root: str, start: int, count: int) -> list[hms.Partition]:
    return [partition_k(str(i), f"{root}/k={i}") for i in range(start, start + count)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_table_written_during_every_read_of_it_is_still_cached(backend, tmp_path, monkeypatch):
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(root))
        store.add_partitions("hive", "d", "t", _partitions(root, 0, 50))
        cache = SharedCache(max_bytes=1 << 30)
        requested: list = []
        cached = CachedStore(store, cache, CachePolicy.from_patterns(), Metrics(), stats_as_stored,
                             request_load=requested.append)
        cached.load_catalog("hive")
        written = [50]
        blocked_writers: list[threading.Thread] = []

        def write() -> None:
            cached.add_partitions("hive", "d", "t", _partitions(root, written[0], 10))
            written[0] += 10

        read_bundle = store.get_table_bundle

        def read_with_a_write_during_it(*args, **kwargs):
            """Reads the table while this instance writes to it: at once when nothing holds its writes off,
            else from a writer that waits for them (joined below)."""
            bundle = read_bundle(*args, **kwargs)
            if cache.bookkeeping_entries()["key_locks"] == 0:
                write()
            else:
                blocked_writers.append(threading.Thread(target=write))
                blocked_writers[-1].start()
            return bundle

        monkeypatch.setattr(store, "get_table_bundle", read_with_a_write_during_it)
        loaded = cached.load_table(KEY)
        entry = cache.get_table(KEY)
        assert entry is not None, "every read of the table was overlapped by a write, and none was cached"
        assert loaded == len(entry.partitions) == 60   # the second read saw the first write, not the second
        for writer in blocked_writers:
            writer.join()
        assert len(blocked_writers) == 1 and written[0] == 70
        entry = cache.get_table(KEY)
        assert entry is not None   # the write after the load kept the entry and updated it
        assert sorted(entry.partitions.names) == sorted(store.get_partition_names(*KEY))
        assert len(entry.partitions) == 70
        assert requested == [] and cached.loads_in_flight() == 0
        assert cache.bookkeeping_entries()["key_locks"] == 0


@pytest.mark.parametrize("refresh", [False, True], ids=["load", "refresh_in_place"])
def test_a_read_installed_between_a_writes_cache_update_and_its_end_is_refused(refresh, tmp_path, monkeypatch):
    """A write updates the cached entry (or finds none) and only then, as it ends, bumps the table's generation.
    A read of the table that began before the write's commit and is installed in between would replace the
    written entry with the older state, for good (the write's own event is never applied here): a partition
    another instance's change made this one refresh (or reload) would go missing from this cache."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store("sqlite", tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(root))
        store.add_partitions("hive", "d", "t", _partitions(root, 0, 3))
        cache = SharedCache(max_bytes=1 << 30)
        cached = CachedStore(store, cache, CachePolicy.from_patterns(), Metrics(), stats_as_stored)
        cached.load_catalog("hive")
        if refresh:
            cached.load_table(KEY)
        entry_updated, first_install_over = threading.Event(), threading.Event()
        # an exception in it fails the test (pyproject.toml: PytestUnhandledThreadExceptionWarning is an error)
        writer = threading.Thread(target=cached.add_partitions, args=("hive", "d", "t", _partitions(root, 3, 1)))
        bump = cache.bump

        def bump_once_the_read_is_installed(key):
            if threading.current_thread() is writer:   # the write's end: its entry update is done
                entry_updated.set()
                assert first_install_over.wait(30), "the read was never installed"
            bump(key)

        read_bundle = store.get_table_bundle

        def read_then_write(*args, **kwargs):
            bundle = read_bundle(*args, **kwargs)
            if writer.ident is None:   # the first read only: the writer is not started yet
                writer.start()
                assert entry_updated.wait(30), "the write never updated the cache"
            return bundle

        install = cached._install

        def install_once(*args, **kwargs):
            try:
                return install(*args, **kwargs)
            finally:
                first_install_over.set()

        monkeypatch.setattr(cache, "bump", bump_once_the_read_is_installed)
        monkeypatch.setattr(store, "get_table_bundle", read_then_write)
        monkeypatch.setattr(cached, "_install", install_once)
        if refresh:
            installed = cached.refreshed_in_place(KEY)
        else:
            installed = cached.load_table(KEY) > 0
        first_install_over.set()
        writer.join(30)
        assert not writer.is_alive()
        entry = cache.get_table(KEY)
        stored = sorted(store.get_partition_names(*KEY))
        assert len(stored) == 4
        assert entry is None or sorted(entry.partitions.names) == stored, "the cache lost a committed write"
        assert installed != refresh   # the refresh gave up (its caller drops the entry); the load read it again
