"""ManifestCache on a real table's manifests: hits and misses counted, the byte bound kept by LRU eviction, one
decode for threads missing the same manifest together."""
from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import pytest
from prometheus_client import CollectorRegistry
from pyiceberg.io import FileIO, InputFile
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import ManifestFile
from pyiceberg.table import Table

from hmsproxy.iceberg.manifest_cache import ManifestCache, compact_entry
from hmsproxy.iceberg.manifest_reads import live_entries, read_ahead
from support.iceberg_tables import build_table


class CountingIO(PyArrowFileIO):
    """The local file IO, counting the files it opens."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: Counter[str] = Counter()
        self._lock = threading.Lock()

    def new_input(self, location: str) -> InputFile:
        with self._lock:
            self.opened[location] += 1
        return super().new_input(location)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return build_table(tmp_path_factory.mktemp("manifest-cache"), seed=11)


def _manifests(table: Table) -> list[ManifestFile]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return list(snapshot.manifests(table.io))


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_entries_are_the_live_entries_and_hits_are_counted(table: Table) -> None:
    registry = CollectorRegistry()
    cache = ManifestCache(10_000_000, registry)
    io = CountingIO()
    for manifest in _manifests(table):
        expected = [compact_entry(entry) for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)]
        assert list(cache.entries(io, manifest)) == expected
        assert list(cache.entries(io, manifest)) == expected
        assert io.opened[manifest.manifest_path] == 1
    count = len(_manifests(table))
    assert _sample(registry, "hmsproxy_iceberg_manifest_cache_misses_total", kind="manifest") == count
    assert _sample(registry, "hmsproxy_iceberg_manifest_cache_hits_total", kind="manifest") == count
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert cache.manifests(io, snapshot.manifest_list) == tuple(_manifests(table))
    assert cache.manifests(io, snapshot.manifest_list) == tuple(_manifests(table))
    assert io.opened[snapshot.manifest_list] == 1
    assert _sample(registry, "hmsproxy_iceberg_manifest_cache_hits_total", kind="manifest_list") == 1
    entries = sum(len(manifest.fetch_manifest_entry(table.io)) for manifest in _manifests(table))
    assert _sample(registry, "hmsproxy_iceberg_manifest_cache_entries") == cache.entries_held == entries
    assert _sample(registry, "hmsproxy_iceberg_manifest_cache_bytes") == cache.size_bytes > 0


def test_the_byte_bound_evicts_least_recently_used(table: Table) -> None:
    manifests = _manifests(table)
    sizing = ManifestCache(10_000_000, None)
    sizes = []
    for manifest in manifests:
        before = sizing.size_bytes
        sizing.entries(table.io, manifest)
        sizes.append(sizing.size_bytes - before)
    bound = sizes[0] + sizes[1] + sizes[2] // 2   # room for two of the first three, not all three
    registry = CollectorRegistry()
    cache = ManifestCache(bound, registry)
    io = CountingIO()
    cache.entries(io, manifests[0])
    cache.entries(io, manifests[1])
    cache.entries(io, manifests[0])               # 0 is now the most recently used
    cache.entries(io, manifests[2])               # evicts 1
    assert cache.size_bytes <= bound
    assert _sample(registry, "hmsproxy_iceberg_manifest_cache_bytes") == cache.size_bytes
    cache.entries(io, manifests[0])
    assert io.opened[manifests[0].manifest_path] == 1
    cache.entries(io, manifests[1])
    assert io.opened[manifests[1].manifest_path] == 2
    assert cache.size_bytes <= bound


def test_a_manifest_larger_than_the_bound_is_not_kept(table: Table) -> None:
    cache = ManifestCache(10, None)
    io = CountingIO()
    manifest = _manifests(table)[0]
    assert cache.entries(io, manifest) == cache.entries(io, manifest)
    assert io.opened[manifest.manifest_path] == 2 and cache.size_bytes == 0 and cache.entries_held == 0


def test_threads_missing_the_same_manifests_decode_each_once(table: Table, tmp_path: Path) -> None:
    manifests = _manifests(table)
    cache = ManifestCache(10_000_000, None)
    io = CountingIO()
    threads = 4
    start = threading.Barrier(threads)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def plan() -> None:
        try:
            start.wait()
            results.append([len(cache.entries(io, manifest)) for manifest in manifests])
        except BaseException as exc:   # handed to the test's own thread
            errors.append(exc)

    workers = [threading.Thread(target=plan) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert len(results) == threads and all(result == results[0] for result in results)
    assert all(io.opened[manifest.manifest_path] == 1 for manifest in manifests)


@pytest.mark.parametrize("file_io", [PyArrowFileIO, FsspecFileIO])
def test_manifests_read_ahead_decode_to_what_pyiceberg_reads(table: Table, file_io: type[FileIO]) -> None:
    """The cold plan's path: bytes read ahead (one read a file, in order), decoded without opening the file again,
    equal to pyiceberg's own reading of the manifests."""
    manifests = _manifests(table)
    readers = 3
    assert len(manifests) > readers   # more than one window of reads ahead
    contents = list(read_ahead(file_io(properties={}), [manifest.manifest_path for manifest in manifests], readers))
    assert contents == [Path(urlparse(manifest.manifest_path).path).read_bytes() for manifest in manifests]
    cache = ManifestCache(10_000_000, None)
    io = CountingIO()
    for manifest, content in zip(manifests, contents, strict=True):
        expected = [compact_entry(entry) for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)]
        assert list(cache.entries(io, manifest, content)) == expected
        assert live_entries(table.io.new_input(manifest.manifest_path), manifest) == \
            manifest.fetch_manifest_entry(table.io)
    assert not io.opened
