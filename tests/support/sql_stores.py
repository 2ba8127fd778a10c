"""The SQL stores the store-level tests start from: a new database with Hive's schema."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hmsproxy.idl import hms
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.store import SqlStore
from support.databases import fresh_database


def sqlite_store(directory: Path, *databases: str) -> SqlStore:
    """A store on `directory`/m.db (warehouse file:/w) holding the named databases, at file:/w/<name>.db."""
    db = Database(f"sqlite:///{directory / 'm.db'}")
    init_schema(db, "file:/w")
    store = SqlStore(db)
    for name in databases:
        store.create_database(hms.Database(name=name, locationUri=f"file:/w/{name}.db", parameters={},
                                           catalogName="hive"))
    return store


@contextlib.contextmanager
def fresh_store(backend: str, workdir: Path) -> Iterator[SqlStore]:
    """A store on a new database of the backend (skipped where its server is unreachable), with Hive's schema and
    the warehouse file:`workdir`; closed afterwards."""
    with fresh_database(backend, workdir) as url:
        db = Database(url)
        init_schema(db, f"file:{workdir}")
        store = SqlStore(db)
        try:
            yield store
        finally:
            store.close()


def table_t(sd: hms.StorageDescriptor) -> hms.Table:
    """Managed table d.t with storage descriptor `sd`, partitioned by k int."""
    return hms.Table(tableName="t", dbName="d", catName="hive", sd=sd,
                     partitionKeys=[hms.FieldSchema(name="k", type="int")], parameters={},
                     tableType="MANAGED_TABLE", createTime=1, lastAccessTime=0, retention=0)


def add_table_t(store: SqlStore, root: str, sd: hms.StorageDescriptor) -> None:
    """Database `d` (at `root`/d.db) and its table `t` (`table_t`)."""
    store.create_database(hms.Database(name="d", locationUri=f"{root}/d.db", parameters={}, catalogName="hive"))
    store.create_table(table_t(sd))


def sd_at(location: str) -> hms.StorageDescriptor:
    """The plainest storage descriptor at `location`: one int column `id`, placeholder formats, no parameters."""
    return hms.StorageDescriptor(cols=[hms.FieldSchema(name="id", type="int")], location=location,
                                 inputFormat="in", outputFormat="out", parameters={},
                                 serdeInfo=hms.SerDeInfo(serializationLib="lib", parameters={}))


def partition_k(value: str, location: str, parameters: dict[str, str] | None = None) -> hms.Partition:
    """The partition k=`value` of d.t (`table_t`), stored at `location`."""
    return hms.Partition(values=[value], dbName="d", tableName="t", sd=sd_at(location),
                         parameters=dict(parameters or {}), createTime=1, lastAccessTime=0)


class RecordingStore:
    """A store that records which tables each bundle read asked for, to check how prewarm grouped its reads;
    `during_group_read` (when set) runs between a group's read and its return, to overlap a write with it."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.groups: list[list[tuple[str, str]]] = []
        self.alone: list[tuple[str, str]] = []
        self.during_group_read: Any = None

    def get_table_bundles(self, cat: str, tables: Any) -> Any:
        self.groups.append(list(tables))
        bundles = self.store.get_table_bundles(cat, tables)
        if self.during_group_read is not None:
            self.during_group_read()
        return bundles

    def get_table_bundle(self, cat: str, db: str, tbl: str, partition_sink: Any = None) -> Any:
        self.alone.append((db, tbl))
        return self.store.get_table_bundle(cat, db, tbl, partition_sink)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)
