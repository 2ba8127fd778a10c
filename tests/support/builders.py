"""Builders of metastore objects for the tests, for either client's generated types.

`T` is a module of Thrift types: `hmsproxy.idl.hms` (thriftpy2, our IDL) or hmsclient's
`hive_metastore.ttypes` (Apache Thrift, Hive 2.3's IDL). Both share the 2.3 field names used here.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hmsproxy.storage.locations import local_path

TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
LAZY_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


def unique(prefix: str = "db") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def cols(T: Any, spec: Sequence[tuple[str, str]]) -> list[Any]:
    return [T.FieldSchema(name=n, type=t, comment=None) for n, t in spec]


def sd(T: Any, columns: Sequence[tuple[str, str]] = (("id", "int"), ("name", "string")),
       location: str | None = None, *, input_format: str = TEXT_INPUT, output_format: str = TEXT_OUTPUT,
       serde: str = LAZY_SERDE, serde_params: dict[str, str] | None = None) -> Any:
    """A text table's storage descriptor; `serde_params` defaults to {"serialization.format": "1"}."""
    serde_params = {"serialization.format": "1"} if serde_params is None else dict(serde_params)
    return T.StorageDescriptor(
        cols=cols(T, columns), location=location, inputFormat=input_format, outputFormat=output_format,
        compressed=False, numBuckets=-1,
        serdeInfo=T.SerDeInfo(name=None, serializationLib=serde, parameters=serde_params),
        bucketCols=[], sortCols=[], parameters={}, skewedInfo=None, storedAsSubDirectories=False)


def placeholder_sd(location: str | None = None, columns: Sequence[tuple[str, str]] = (("c", "string"),), *,
                   T: Any = None) -> Any:
    """A storage descriptor (of our IDL's types unless `T` is given) with placeholder formats and serde, for tests
    where only its location and columns matter (the stores keep the formats as given)."""
    if T is None:
        from hmsproxy.idl import hms as T
    return sd(T, columns, location, input_format="i", output_format="o", serde="s", serde_params={})


def database(T: Any, name: str, location: str | None = None, params: dict[str, str] | None = None,
             owner: str | None = "alice") -> Any:
    return T.Database(name=name, description=f"test database {name}", locationUri=location,
                      parameters=dict(params or {}), ownerName=owner, ownerType=T.PrincipalType.USER)


def table(T: Any, db: str, name: str, *, columns: Sequence[tuple[str, str]] = (("id", "int"), ("name", "string")),
          part_keys: Sequence[tuple[str, str]] = (), location: str | None = None, table_type: str = "MANAGED_TABLE",
          params: dict[str, str] | None = None, view_text: str | None = None) -> Any:
    return T.Table(tableName=name, dbName=db, owner="alice", createTime=0, lastAccessTime=0, retention=0,
                   sd=sd(T, columns, location), partitionKeys=cols(T, part_keys), parameters=dict(params or {}),
                   viewOriginalText=view_text, viewExpandedText=view_text, tableType=table_type)


def partition(T: Any, tbl: Any, values: Sequence[str], location: str | None = None,
              params: dict[str, str] | None = None) -> Any:
    part_sd = sd(T, [(c.name, c.type) for c in tbl.sd.cols], location)
    return T.Partition(values=list(values), dbName=tbl.dbName, tableName=tbl.tableName, createTime=0,
                       lastAccessTime=0, sd=part_sd, parameters=dict(params or {}))


def path_of(location: str) -> Path:
    path = local_path(location)
    assert path is not None, location
    return path


def write_file(location: str, name: str = "data.txt", content: bytes = b"1,a\n2,b\n") -> Path:
    directory = path_of(location)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    target.write_bytes(content)
    return target


def connect_thrift(server: Any, *, timeout_ms: int = 60000, **options: Any) -> Any:
    """A new thriftpy2 client (our IDL) on its own connection; `options` go to thriftpy2's make_client."""
    import thriftpy2.rpc

    from hmsproxy.idl import hms
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=timeout_ms,
                                     **options)


def connect_hive(server: Any) -> Any:
    """A new hmsclient (Hive 2.3's IDL, Apache Thrift) on its own connection."""
    from hmsclient import hmsclient
    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    return client
