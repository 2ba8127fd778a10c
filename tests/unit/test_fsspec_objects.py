"""The object-store calls GCS and ABFS take (storage/object_store.py FsspecObjects: fsspec's common calls), run on
fsspec's in-memory file system: the same code as gcsfs and adlfs run it, without their servers. And the warehouse
work (object_files.py) over it: quick stats, a neighbour that survives, a move by copy."""
from __future__ import annotations

import uuid

import fsspec
import pytest

from hmsproxy.ops.metrics import Metrics
from hmsproxy.storage.locations import object_place
from hmsproxy.storage.object_files import ObjectFiles
from hmsproxy.storage.object_store import FsspecObjects, ObjectStoreError, ObjectStores, ObjectStoreSettings


class MemoryStores(ObjectStores):
    """The stores with fsspec's memory file system standing in for gcsfs."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(frozenset({"gcs"}), ObjectStoreSettings(), metrics)
        self.memory = FsspecObjects("memory", metrics)

    def client(self, family: str) -> FsspecObjects:
        return self.memory


@pytest.fixture
def bucket():
    name = f"b{uuid.uuid4().hex[:10]}"
    yield name
    memory = fsspec.filesystem("memory")
    if memory.exists(f"/{name}"):
        memory.rm(f"/{name}", recursive=True)


def put(bucket: str, key: str, data: bytes = b"x") -> None:
    fsspec.filesystem("memory").pipe_file(f"/{bucket}/{key}", data)


def keys(bucket: str) -> list[str]:
    found = fsspec.filesystem("memory").find(f"/{bucket}")
    return sorted(path.split("/", 2)[2] for path in found)


def test_quick_stats_delete_and_copy_through_fsspecs_common_calls(bucket):
    metrics = Metrics()
    files = ObjectFiles(MemoryStores(metrics), (object_place(f"gs://{bucket}/wh"),), 100)
    for name, size in (("a", 3), ("b/c", 5), ("_SUCCESS", 0), (".hidden", 7), ("_tmp/d", 9)):
        put(bucket, f"wh/t1/{name}", b"x" * size)
    put(bucket, "wh/t10/neighbour")
    table = object_place(f"gs://{bucket}/wh/t1")
    assert table is not None
    assert files.quick_stats(table, missing_is_new=False) == {"numFiles": "2", "totalSize": "8"}
    copies = files.copy(table, object_place(f"gs://{bucket}/wh/t2"))
    assert sorted(copies) == [f"wh/t2/{n}" for n in (".hidden", "_SUCCESS", "_tmp/d", "a", "b/c")]
    files.remove(table)
    assert keys(bucket) == ["wh/t10/neighbour", *copies]
    files.remove(object_place(f"gs://{bucket}/wh"))   # holds the warehouse root: kept
    assert keys(bucket) == ["wh/t10/neighbour", *copies]
    assert metrics.object_store_requests.labels("memory", "list", "ok")._value.get() >= 3


def test_a_failing_request_is_an_object_store_error_naming_the_place(bucket):
    metrics = Metrics()
    memory = FsspecObjects("memory", metrics)
    with pytest.raises(ObjectStoreError, match=f"memory get {bucket}/missing") as caught:
        memory.read(bucket, "missing")
    assert caught.value.missing
    assert metrics.object_store_requests.labels("memory", "get", "not_found")._value.get() == 1


def test_a_store_whose_library_is_missing_is_named():
    stores = ObjectStores(frozenset({"gcs"}), ObjectStoreSettings(), None)
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="gcsfs"):
            stores.client("gcs")
    else:
        assert isinstance(stores.client("gcs"), FsspecObjects)
