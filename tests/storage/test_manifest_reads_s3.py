"""A cold plan's manifest reads on S3 (moto on loopback): one GetObject per file and no HeadObject (s3fs asks for an
object's size first unless told otherwise), counted by the S3 client's own events."""
from __future__ import annotations

import threading
from collections import Counter

from pyiceberg.io.fsspec import FsspecFileIO

from hmsproxy.iceberg.manifest_reads import read_ahead
from support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server


def test_files_read_ahead_cost_one_get_each_through_one_client(s3: S3Server) -> None:
    bucket = s3.new_bucket()
    contents = {f"t/metadata/m{index}.avro": f"manifest {index}".encode() * (index + 1) for index in range(40)}
    for key, data in contents.items():
        s3.put(bucket, key, data)
    io = FsspecFileIO(properties={"s3.endpoint": s3.endpoint, "s3.access-key-id": ACCESS_KEY,
                                  "s3.secret-access-key": SECRET_KEY, "s3.region": "us-east-1"})
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def count(model: object, **_: object) -> None:
        with lock:
            calls[getattr(model, "name", "?")] += 1

    io.get_fs("s3a").s3.meta.events.register("before-call.s3", count)
    locations = [f"s3a://{bucket}/{key}" for key in contents]
    assert list(read_ahead(io, locations, readers=8)) == list(contents.values())
    assert calls == Counter({"GetObject": len(locations)})
