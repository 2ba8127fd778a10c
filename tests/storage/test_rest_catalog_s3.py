"""The Iceberg REST catalog with its warehouse on S3 (moto on loopback): the server writes each table's metadata
files under the table's s3a:// location with its own S3 settings, plans scans from manifests it reads there, and a
purge deletes the table's objects; pyiceberg's REST client writes the data with its own FileIO."""
from __future__ import annotations

import pyarrow as pa
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from support.ports import free_port
from support.s3_metastore import lake_server
from support.s3_server import ACCESS_KEY, SECRET_KEY

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))
CLIENT_S3 = {"s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY, "s3.region": "us-east-1"}


def test_rest_tables_on_s3(s3, tmp_path):
    with lake_server(s3, "sqlite", tmp_path, iceberg_rest_port=free_port()) as lake:
        rest = RestCatalog("rest", uri=lake.server.rest_uri, **{"s3.endpoint": s3.endpoint, **CLIENT_S3})
        rest.create_namespace("lakehouse")
        table = rest.create_table("lakehouse.events", SCHEMA)
        assert table.location() == f"{lake.root}/lakehouse.db/events"
        table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}))
        table.append(pa.table({"id": [3], "name": ["c"]}))

        prefix = "warehouse/lakehouse.db/events/"
        keys = lake.keys(prefix)
        metadata_files = [k for k in keys if k.endswith(".metadata.json")]
        assert len(metadata_files) == 3, keys   # the create's and one per append, written by the server
        assert rest.load_table("lakehouse.events").metadata_location == f"s3a://{lake.bucket}/{max(metadata_files)}"

        # planned on the server from the manifests it read from S3; the rows read by the client
        assert sorted(rest.load_table("lakehouse.events").scan(row_filter="id >= 2").to_arrow()["id"].to_pylist()) \
            == [2, 3]
        hive = HiveCatalog("hive", uri=lake.server.uri, **{"s3.endpoint": s3.endpoint, **CLIENT_S3})
        assert sorted(hive.load_table("lakehouse.events").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]

        rest.purge_table("lakehouse.events")
        assert lake.keys(prefix) == []
