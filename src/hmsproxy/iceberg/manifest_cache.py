"""Decoded manifests and manifest lists, kept in memory for scan planning.

Manifests and manifest lists are written once under unique paths, so entries are keyed by path and never go
stale: the cache only evicts (least recently used first) to stay within its byte bound.

Each manifest is held as one zlib-compressed pickle of its live entries reduced to plain `CachedEntry` tuples
(what planning and the reply need; the column stats marshalled inside, decoded only for the files that need
them). A decoded pyiceberg ManifestEntry weighs about 3.5 KB; this form about 60 bytes an entry (measured with
tracemalloc and the cache's own count on manifests of 50 data files with stats on 5 columns), because a
manifest's entries repeat their keys, path prefixes and snapshot ids. The price is a decompress and unpickle of
each manifest a plan reads, a fraction of what pyiceberg's Avro decoding of it costs.
"""
from __future__ import annotations

import marshal
import pickle
import sys
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge
from pyiceberg.io import FileIO
from pyiceberg.manifest import ManifestEntry, ManifestFile, read_manifest_list
from pyiceberg.utils.lazydict import LazyDict

from hmsproxy.iceberg.manifest_reads import ReadInput, live_entries

# What one stored item costs beyond its blob: the key's string and the ordered dict's node (measured, rounded up).
_ITEM_OVERHEAD = 160
_COMPRESSION_LEVEL = 1


class FileMetrics(NamedTuple):
    """A file's record count and column stats, decoded once: what pyiceberg's metrics evaluator reads."""

    record_count: int
    column_sizes: dict[int, int] | None
    value_counts: dict[int, int] | None
    null_value_counts: dict[int, int] | None
    nan_value_counts: dict[int, int] | None
    lower_bounds: dict[int, bytes] | None
    upper_bounds: dict[int, bytes] | None


_NO_STATS = (None, None, None, None, None, None)


class CachedEntry(NamedTuple):
    """A live manifest entry, with the fields of its content file that planning and the reply need.

    It answers the attributes pyiceberg's evaluators and delete index read from a DataFile (record_count, the
    stats maps, file_path, spec_id, partition) and from a ManifestEntry (data_file, sequence_number). The column
    stats stay marshalled in `stats` until read: most files of a plan are chosen by partition alone.
    """

    status: int
    snapshot_id: int | None
    sequence_number: int | None
    content: int
    file_path: str
    file_format: str
    spec_id: int
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    key_metadata: bytes | None
    split_offsets: tuple[int, ...] | None
    equality_ids: tuple[int, ...] | None
    sort_order_id: int | None
    stats: bytes   # marshal of (column_sizes, value_counts, null_value_counts, nan_value_counts, lower, upper)

    @property
    def data_file(self) -> CachedEntry:
        """The entry stands for its own content file (pyiceberg's DeleteFileIndex reads `entry.data_file`)."""
        return self

    def __hash__(self) -> int:
        """Files are identified by path, as pyiceberg's DataFile is."""
        return hash(self.file_path)

    def metrics(self) -> FileMetrics:
        return FileMetrics(self.record_count, *(marshal.loads(self.stats) if self.stats else _NO_STATS))

    def _stat(self, index: int) -> Any:
        return marshal.loads(self.stats)[index] if self.stats else None

    @property
    def value_counts(self) -> dict[int, int] | None:
        return self._stat(1)  # type: ignore[no-any-return]

    @property
    def null_value_counts(self) -> dict[int, int] | None:
        return self._stat(2)  # type: ignore[no-any-return]

    @property
    def nan_value_counts(self) -> dict[int, int] | None:
        return self._stat(3)  # type: ignore[no-any-return]

    @property
    def lower_bounds(self) -> dict[int, bytes] | None:
        return self._stat(4)  # type: ignore[no-any-return]

    @property
    def upper_bounds(self) -> dict[int, bytes] | None:
        return self._stat(5)  # type: ignore[no-any-return]


def _plain(mapping: Any) -> dict[Any, Any] | None:
    """A stats map as a dict; pyiceberg's decoder gives a LazyDict, whose own conversion builds it once (a dict()
    of it builds it and then reads it key by key, twice the work)."""
    if not mapping:
        return None
    return mapping.__dict__() if isinstance(mapping, LazyDict) else dict(mapping)


def _tuple_or_none(items: Any) -> tuple[int, ...] | None:
    return tuple(items) if items is not None else None


def compact_entry(entry: ManifestEntry) -> CachedEntry:
    """The cached form of a decoded pyiceberg manifest entry."""
    data_file = entry.data_file
    stats = (_plain(data_file.column_sizes), _plain(data_file.value_counts), _plain(data_file.null_value_counts),
             _plain(data_file.nan_value_counts), _plain(data_file.lower_bounds), _plain(data_file.upper_bounds))
    return CachedEntry(
        status=int(entry.status), snapshot_id=entry.snapshot_id, sequence_number=entry.sequence_number,
        content=int(data_file.content), file_path=data_file.file_path, file_format=data_file.file_format.value,
        spec_id=data_file.spec_id, partition=tuple(data_file.partition[pos] for pos in range(len(data_file.partition))),
        record_count=data_file.record_count, file_size_in_bytes=data_file.file_size_in_bytes,
        key_metadata=data_file.key_metadata, split_offsets=_tuple_or_none(data_file.split_offsets),
        equality_ids=_tuple_or_none(data_file.equality_ids), sort_order_id=data_file.sort_order_id,
        stats=marshal.dumps(stats) if any(stats) else b"")


def _pack(items: Any) -> bytes:
    return zlib.compress(pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL), _COMPRESSION_LEVEL)


def _unpack(blob: bytes) -> Any:
    return pickle.loads(zlib.decompress(blob))


class _Stored(NamedTuple):
    blob: bytes
    entries: int   # content-file entries in a manifest; 0 for a manifest list
    size: int


class ManifestCache:
    """Manifests' live entries and manifest lists by path, within `max_bytes`, shared by concurrent plans.

    Two threads missing the same path decode it once: the second waits for the first's result.
    """

    def __init__(self, max_bytes: int, registry: CollectorRegistry | None) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[str, str], _Stored] = OrderedDict()
        self._loading: dict[tuple[str, str], threading.Event] = {}
        self._lock = threading.Lock()
        self._bytes = 0
        self._entries = 0
        registry = registry if registry is not None else CollectorRegistry()
        self.hits = Counter("hmsproxy_iceberg_manifest_cache_hits", "Manifests and manifest lists answered from "
                            "the planning cache, by kind (manifest, manifest_list)", ["kind"], registry=registry)
        self.misses = Counter("hmsproxy_iceberg_manifest_cache_misses", "Manifests and manifest lists read and "
                              "decoded because the planning cache did not hold them, by kind", ["kind"],
                              registry=registry)
        self.bytes_gauge = Gauge("hmsproxy_iceberg_manifest_cache_bytes", "Bytes held by the planning cache "
                                 "(compressed decoded manifests and manifest lists), at most its bound",
                                 registry=registry)
        self.entries_gauge = Gauge("hmsproxy_iceberg_manifest_cache_entries", "Content-file entries (data and "
                                   "delete files) of the manifests held by the planning cache", registry=registry)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def entries_held(self) -> int:
        return self._entries

    def manifests(self, io: FileIO, manifest_list: str) -> tuple[ManifestFile, ...]:
        """The manifests a snapshot's manifest list names, in its order."""
        def load() -> tuple[Any, bytes, int]:
            listed = tuple(read_manifest_list(io.new_input(manifest_list)))
            return listed, _pack(listed), 0
        result: tuple[ManifestFile, ...] = self._get(("manifest_list", manifest_list), load)
        return result

    def holds(self, manifest: ManifestFile) -> bool:
        """Whether the manifest's entries are in the cache now (they may be evicted right after)."""
        with self._lock:
            return ("manifest", manifest.manifest_path) in self._items

    def entries(self, io: FileIO, manifest: ManifestFile, content: bytes | None = None) -> tuple[CachedEntry, ...]:
        """A manifest's live entries (deleted ones dropped), with sequence numbers inherited from the manifest.

        `content`, when given, is the manifest file's bytes, read already (manifest_reads.read_ahead)."""
        def load() -> tuple[Any, bytes, int]:
            path = manifest.manifest_path
            file = io.new_input(path) if content is None else ReadInput(path, content)
            # Plain tuples: unpickling a NamedTuple goes through its Python-level __new__, twice as slow.
            live = [tuple(compact_entry(entry)) for entry in live_entries(file, manifest)]
            return live, _pack(live), len(live)
        return tuple(map(CachedEntry._make, self._get(("manifest", manifest.manifest_path), load)))

    def _get(self, key: tuple[str, str], load: Callable[[], tuple[Any, bytes, int]]) -> Any:
        """The decoded item: unpacked from the cache, or from `load` (the item, its packed form, its entries)."""
        kind = key[0]
        while True:
            with self._lock:
                stored = self._items.get(key)
                if stored is not None:
                    self._items.move_to_end(key)
                    self.hits.labels(kind).inc()
                    blob = stored.blob
                    break
                waiter = self._loading.get(key)
                loading_here = waiter is None
                if waiter is None:
                    waiter = self._loading[key] = threading.Event()
            if loading_here:
                return self._load(key, load, waiter)
            # Another thread is decoding it: take its result, or load it here if that thread failed.
            waiter.wait()
        return _unpack(blob)

    def _load(self, key: tuple[str, str], load: Callable[[], tuple[Any, bytes, int]], waiter: threading.Event) -> Any:
        try:
            self.misses.labels(key[0]).inc()
            item, blob, entries = load()
            self._keep(key, _Stored(blob, entries, sys.getsizeof(blob) + sys.getsizeof(key[1]) + _ITEM_OVERHEAD))
            return item
        finally:
            with self._lock:
                del self._loading[key]
            waiter.set()

    def _keep(self, key: tuple[str, str], stored: _Stored) -> None:
        with self._lock:
            if stored.size > self.max_bytes:
                return   # larger than the whole cache: used for this plan only
            self._items[key] = stored
            self._bytes += stored.size
            self._entries += stored.entries
            while self._bytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= evicted.size
                self._entries -= evicted.entries
            self.bytes_gauge.set(self._bytes)
            self.entries_gauge.set(self._entries)
