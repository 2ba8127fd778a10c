"""Yes/no columns are declared as Hive's scripts declare them (bit(1) on MariaDB/MySQL, boolean on
PostgreSQL) and read right whatever a metastore database holds: bit(1) bytes, integers of an older hmsproxy
schema, booleans."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from hmsproxy.idl import hms
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.store import SqlStore
from support.databases import fresh_database

FLAGS = (("SDS", "IS_COMPRESSED"), ("SDS", "IS_STOREDASSUBDIRECTORIES"), ("TBLS", "IS_REWRITE_ENABLED"))


@pytest.fixture
def store(request, tmp_path):
    """A store on the backend the test is parametrized with (indirectly)."""
    with fresh_database(request.param, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        store = SqlStore(db)
        store.create_database(hms.Database(name="d", locationUri=f"file:{tmp_path}/d.db", parameters={},
                                           catalogName="hive"))
        yield store
        store.close()


def _create(store: SqlStore, name: str, flag: bool) -> None:
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], location=f"file:/w/d.db/{name}",
                               inputFormat="i", outputFormat="o", compressed=flag, numBuckets=-1,
                               serdeInfo=hms.SerDeInfo(name="s", serializationLib="l", parameters={}),
                               bucketCols=[], sortCols=[], parameters={}, storedAsSubDirectories=flag)
    store.create_table(hms.Table(tableName=name, dbName="d", catName="hive", sd=sd, partitionKeys=[],
                                 parameters={}, tableType="MANAGED_TABLE", rewriteEnabled=flag))


def _flags(store: SqlStore, name: str) -> tuple[bool, bool, bool]:
    table = store.get_table("hive", "d", name)
    return table.sd.compressed, table.sd.storedAsSubDirectories, table.rewriteEnabled


@pytest.mark.parametrize("store", ["mariadb", "postgres"], indirect=True)  # Hive has no SQLite script
def test_flags_are_declared_as_in_hives_scripts(store):
    dialect = store.db.engine.dialect.name
    with store.db.engine.connect() as conn:
        for table, column in FLAGS:
            declared = conn.execute(text(
                "SELECT column_type FROM information_schema.columns WHERE table_schema = DATABASE() "
                "AND table_name = :t AND column_name = :c" if dialect == "mysql" else
                "SELECT data_type FROM information_schema.columns WHERE table_catalog = current_database() "
                "AND table_name = :t AND column_name = :c"), {"t": table, "c": column}).scalar_one()
            assert declared == ("bit(1)" if dialect == "mysql" else "boolean"), (table, column)


@pytest.mark.parametrize("store", ["sqlite", "mariadb", "postgres"], indirect=True)
def test_false_and_true_read_back_as_written(store):
    _create(store, "no", False)
    _create(store, "yes", True)
    assert _flags(store, "no") == (False, False, False)
    assert _flags(store, "yes") == (True, True, True)


@pytest.mark.parametrize("store", ["mariadb"], indirect=True)  # where the flags are bit(1) or integers
def test_flags_written_by_hive_or_an_older_schema_read_right(store):
    """Hive on MySQL writes bit(1) values; an hmsproxy schema from before this change holds TINYINT(1)."""
    _create(store, "t", True)
    with store.db.engine.begin() as conn:
        conn.execute(text("UPDATE SDS SET IS_COMPRESSED = b'0', IS_STOREDASSUBDIRECTORIES = b'1'"))
        conn.execute(text("UPDATE TBLS SET IS_REWRITE_ENABLED = b'0'"))
    assert _flags(store, "t") == (False, True, False)
    with store.db.engine.begin() as conn:
        conn.execute(text("ALTER TABLE SDS MODIFY IS_COMPRESSED TINYINT(1) NOT NULL"))
        conn.execute(text("UPDATE SDS SET IS_COMPRESSED = 1"))
    assert _flags(store, "t") == (True, True, False)


def _partition_flags(store: SqlStore) -> set[tuple[str, bool, bool]]:
    """(value, compressed, storedAsSubDirectories) of p's partitions, as listed and as prewarm reads them."""
    [bundle] = store.get_table_bundles("hive", [("d", "p")])
    return {(part.values[0], part.sd.compressed, part.sd.storedAsSubDirectories)
            for part in [*store.get_partitions("hive", "d", "p"), *bundle.partitions]}


@pytest.mark.parametrize("store", ["sqlite", "mariadb", "postgres"], indirect=True)
def test_partition_flags_read_right_in_every_form(store):
    """Prewarm reads partitions packed as JSON text (store/sql/partitions.py), where bit(1) is a control character;
    a listing reads them a row each."""
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], location="file:/w/d.db/p",
                               inputFormat="i", outputFormat="o", numBuckets=-1,
                               serdeInfo=hms.SerDeInfo(name="s", serializationLib="l", parameters={}),
                               bucketCols=[], sortCols=[], parameters={})
    store.create_table(hms.Table(tableName="p", dbName="d", catName="hive", sd=sd, parameters={},
                                 partitionKeys=[hms.FieldSchema(name="k", type="string")], tableType="MANAGED_TABLE"))
    parts = []
    for value, compressed, subdirectories in (("a", False, False), ("b", True, False), ("c", False, True)):
        part_sd = hms.StorageDescriptor(**{**sd.__dict__, "location": f"file:/w/d.db/p/k={value}",
                                           "compressed": compressed, "storedAsSubDirectories": subdirectories})
        parts.append(hms.Partition(values=[value], dbName="d", tableName="p", sd=part_sd, parameters={}))
    store.add_partitions("hive", "d", "p", parts)
    written = {("a", False, False), ("b", True, False), ("c", False, True)}
    assert _partition_flags(store) == written
    if store.db.engine.dialect.name == "mysql":   # an hmsproxy schema from before bit(1): integers
        with store.db.engine.begin() as conn:
            conn.execute(text("ALTER TABLE SDS MODIFY IS_COMPRESSED TINYINT(1) NOT NULL"))
        assert _partition_flags(store) == written
