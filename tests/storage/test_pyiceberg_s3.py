"""pyiceberg's HiveCatalog through hmsproxy with its warehouse on S3 (moto's server on loopback), end to end on each
database backend: the namespace's location derived under the s3:// warehouse, an Iceberg table's metadata and data
written under its s3:// location by pyiceberg's own FileIO, read back through a second catalog, renamed, dropped and
registered again; and under an s3a:// warehouse (as Hive and Spark write it), a namespace the client places at an
s3:// prefix of its own, with a rename across namespaces. Iceberg tables are EXTERNAL_TABLE in HMS terms, so the
server must never move nor delete their objects: a rename leaves them where the metadata says they are, and a drop,
even one asking to delete the data, leaves them all."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.exceptions import NamespaceNotEmptyError, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from support.builders import connect_thrift
from support.databases import BACKENDS, fresh_database
from support.hmsproxy_server import start_hmsproxy_process
from support.running import RunningServer
from support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server, running_s3_server

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType(), required=False))
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    """One moto S3 server for the module; each test has a bucket of its own."""
    with running_s3_server() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Each metastore database backend (a test needing one that is absent is skipped, as support.databases says)."""
    return request.param


@contextmanager
def serving(backend: str, s3: S3Server, workdir: Path, scheme: str) -> Iterator[tuple[RunningServer, str]]:
    """hmsproxy serving `<scheme>://<new bucket>/warehouse` on a fresh database of the backend, reaching moto
    through the standard AWS_* variables only; yields the server and the bucket."""
    bucket = s3.new_bucket()
    with fresh_database(backend, workdir) as url, \
            start_hmsproxy_process(workdir / "hmsproxy", url, "--warehouse", f"{scheme}://{bucket}/warehouse",
                                   environment=s3.environment()) as server:
        yield server, bucket


def catalog(server: RunningServer, s3: S3Server) -> HiveCatalog:
    """A HiveCatalog on the server whose FileIO reaches moto by pyiceberg's own s3.* properties (not the AWS_*
    variables, which only the server's process gets)."""
    return HiveCatalog(f"hms-{uuid.uuid4().hex[:6]}", uri=server.uri, **{
        "s3.endpoint": s3.endpoint, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY,
        "s3.region": "us-east-1"})


def rows(first: int, count: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "name": f"row-{i}"} for i in range(first, first + count)],
                                schema=ARROW_SCHEMA)


def read_rows(table: Any) -> list[tuple[int, str]]:
    data = table.scan().to_arrow().to_pydict()
    return sorted(zip(data["id"], data["name"], strict=True))


def key_of(location: str, bucket: str) -> str:
    """The object key an s3:// location inside the bucket names."""
    prefix = f"s3://{bucket}/"
    assert location.startswith(prefix), location
    return location[len(prefix):]


def test_iceberg_table_lives_on_s3_through_its_whole_life(backend, s3, tmp_path):
    with serving(backend, s3, tmp_path, "s3") as (server, bucket):
        _whole_life(server, bucket, s3)


def _whole_life(server: RunningServer, bucket: str, s3: S3Server) -> None:
    writer, reader = catalog(server, s3), catalog(server, s3)
    namespace = f"ice_{uuid.uuid4().hex[:8]}"

    writer.create_namespace(namespace)
    assert writer.load_namespace_properties(namespace)["location"] == f"s3://{bucket}/warehouse/{namespace}.db"

    table = writer.create_table(f"{namespace}.events", schema=SCHEMA)
    location = f"s3://{bucket}/warehouse/{namespace}.db/events"
    assert table.location() == location
    prefix = key_of(location, bucket) + "/"
    assert key_of(table.metadata_location, bucket).startswith(prefix + "metadata/")
    assert s3.keys(bucket, prefix) == [key_of(table.metadata_location, bucket)]

    table.append(rows(0, 3))
    table.append(rows(3, 2))
    expected = [(i, f"row-{i}") for i in range(5)]
    loaded = reader.load_table(f"{namespace}.events")
    assert loaded.metadata_location == table.metadata_location
    assert read_rows(loaded) == expected

    objects = s3.keys(bucket, prefix)
    data_files = [key for key in objects if key.startswith(prefix + "data/") and key.endswith(".parquet")]
    assert len(data_files) == 2
    assert key_of(loaded.metadata_location, bucket) in objects
    assert {key[len(prefix):].partition("/")[0] for key in objects} == {"data", "metadata"}
    assert s3.keys(bucket, "") == objects   # nothing written outside the table's own prefix
    _check_hms_table(server, namespace, "events", location, loaded.metadata_location)

    with pytest.raises(NamespaceNotEmptyError):
        writer.drop_namespace(namespace)

    renamed = writer.rename_table(f"{namespace}.events", f"{namespace}.events_renamed")
    assert renamed.location() == location
    assert renamed.metadata_location == loaded.metadata_location
    assert s3.keys(bucket, "") == objects   # EXTERNAL: nothing moved to the new name's default place
    _check_hms_table(server, namespace, "events_renamed", location, loaded.metadata_location)
    with pytest.raises(NoSuchTableError):
        reader.load_table(f"{namespace}.events")
    assert read_rows(reader.load_table(f"{namespace}.events_renamed")) == expected

    renamed.append(rows(5, 1))   # a commit after the rename swaps the metadata pointer of the new name
    after = reader.load_table(f"{namespace}.events_renamed")
    assert after.metadata_location != loaded.metadata_location
    assert after.location() == location
    assert read_rows(after) == [*expected, (5, "row-5")]
    kept = s3.keys(bucket, "")
    assert set(objects) < set(kept)
    assert all(key.startswith(prefix) for key in kept)

    writer.drop_table(f"{namespace}.events_renamed")   # pyiceberg's drop: deleteData false, no purge
    assert writer.list_tables(namespace) == []
    assert s3.keys(bucket, "") == kept

    registered = writer.register_table(f"{namespace}.events_again", after.metadata_location)
    assert read_rows(reader.load_table(f"{namespace}.events_again")) == [*expected, (5, "row-5")]
    assert registered.location() == location
    _drop_deleting_data(server, namespace, "events_again")
    assert writer.list_tables(namespace) == []
    assert s3.keys(bucket, "") == kept   # EXTERNAL: a drop asking to delete the data deletes nothing

    writer.drop_namespace(namespace)
    assert (namespace,) not in reader.list_namespaces()
    assert s3.keys(bucket, "") == kept


def test_namespace_placed_at_s3_under_an_s3a_warehouse_renames_across_namespaces(backend, s3, tmp_path):
    """A warehouse written as Hive and Spark write it (s3a://) and a namespace the client places at an s3:// prefix
    of its own: the table goes under that prefix, and a rename into another namespace leaves it there."""
    with serving(backend, s3, tmp_path, "s3a") as (server, bucket):
        writer, reader = catalog(server, s3), catalog(server, s3)
        source, target = f"src_{uuid.uuid4().hex[:8]}", f"dst_{uuid.uuid4().hex[:8]}"
        placed = f"s3://{bucket}/lake/{source}"
        writer.create_namespace(source, {"location": placed})
        writer.create_namespace(target)
        assert reader.load_namespace_properties(source)["location"] == placed
        assert reader.load_namespace_properties(target)["location"] == f"s3a://{bucket}/warehouse/{target}.db"

        table = writer.create_table(f"{source}.events", schema=SCHEMA)
        assert table.location() == f"{placed}/events"
        table.append(rows(0, 4))
        objects = s3.keys(bucket, "")
        assert objects and all(key.startswith(f"lake/{source}/events/") for key in objects)

        moved = writer.rename_table(f"{source}.events", f"{target}.events")
        assert moved.location() == f"{placed}/events"
        assert s3.keys(bucket, "") == objects   # EXTERNAL: not moved under the target namespace's location
        _check_hms_table(server, target, "events", f"{placed}/events", table.metadata_location)
        assert writer.list_tables(source) == []
        assert read_rows(reader.load_table(f"{target}.events")) == [(i, f"row-{i}") for i in range(4)]

        _drop_deleting_data(server, target, "events")
        writer.drop_namespace(source)
        writer.drop_namespace(target)
        assert {(source,), (target,)}.isdisjoint(reader.list_namespaces())
        assert s3.keys(bucket, "") == objects


def _check_hms_table(server: RunningServer, namespace: str, name: str, location: str, metadata: str) -> None:
    """What the metastore holds for an Iceberg table: EXTERNAL, at its s3:// location, pointing at its metadata."""
    client = connect_thrift(server)
    try:
        table = client.get_table(namespace, name)
    finally:
        client.close()
    assert table.tableType == "EXTERNAL_TABLE"
    assert table.parameters["EXTERNAL"] == "TRUE"
    assert table.parameters["table_type"] == "ICEBERG"
    assert table.parameters["metadata_location"] == metadata
    assert table.sd.location == location


def _drop_deleting_data(server: RunningServer, namespace: str, name: str) -> None:
    """A drop as Hive's own DROP TABLE sends it: deleteData true (the table's being EXTERNAL must keep the data)."""
    client = connect_thrift(server)
    try:
        client.drop_table(namespace, name, True)
    finally:
        client.close()
