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
