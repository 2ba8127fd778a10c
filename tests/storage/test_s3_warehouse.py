"""Hive's warehouse semantics with the warehouse on S3 (`--warehouse s3a://bucket/warehouse`), through a real socket
with Hive's own IDL client (hmsclient) and checked in the bucket itself: default locations, no directory markers,
quick statistics from a paginated listing, rename moving a managed table's objects, drop and truncate deleting
exactly the prefixes the server owns."""
from __future__ import annotations

import math

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as T

from support.builders import connect_thrift, partition, table
from support.databases import BACKENDS
from support.s3_metastore import Lake, lake_server

SIZE = 10   # bytes in each object Lake.put writes


def _files(lake: Lake, prefix: str, names: list[str]) -> list[str]:
    keys = [f"{prefix}/{name}" for name in names]
    lake.put(keys)
    return keys


def _stats(parameters: dict[str, str]) -> tuple[str | None, str | None]:
    return parameters.get("numFiles"), parameters.get("totalSize")


def test_locations_are_derived_as_hive_derives_them_and_nothing_is_written(lake: Lake) -> None:
    c = lake.client()
    assert c.get_database("default").locationUri == lake.root
    db = lake.database(c)
    assert c.get_database(db).locationUri == f"{lake.root}/{db}.db"
    c.create_table(table(T, db, "t1", part_keys=[("k", "string")]))
    created = c.get_table(db, "t1")
    assert created.sd.location == f"{lake.root}/{db}.db/t1"
    c.add_partitions([partition(T, created, ["v"])])
    assert c.get_partition(db, "t1", ["v"]).sd.location == f"{lake.root}/{db}.db/t1/k=v"
    c.create_table(table(T, "default", f"{db}_plain"))
    assert c.get_table("default", f"{db}_plain").sd.location == f"{lake.root}/{db}_plain"
    assert lake.keys(f"warehouse/{db}") == []   # no marker object for a database, table or partition
    assert lake.keys("warehouse/") == []


def test_quick_stats_count_the_visible_objects_of_a_new_table(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    prefix = f"warehouse/{db}.db/t1"
    _files(lake, prefix, ["a", "sub/b", "_SUCCESS", ".a.crc", "_tmp/c", "sub/.d", "deep/_x/e"])
    lake.put([f"{prefix}/", f"{prefix}/dir/"], b"")   # markers other tools leave
    c.create_table(table(T, db, "t1"))
    assert _stats(c.get_table(db, "t1").parameters) == ("2", str(2 * SIZE))


def test_quick_stats_of_an_added_partition(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    c.create_table(table(T, db, "t1", part_keys=[("k", "string")]))
    parted = c.get_table(db, "t1")
    _files(lake, f"warehouse/{db}.db/t1/k=1", ["a", "b", "c", "_SUCCESS", "_tmp/x", ".hidden"])
    lake.put([f"warehouse/{db}.db/t1/k=1/dir/"], b"")
    _files(lake, f"warehouse/{db}.db/t1/k=10", ["not-counted"])
    c.add_partitions([partition(T, parted, ["1"])])
    assert _stats(c.get_partition(db, "t1", ["1"]).parameters) == ("3", str(3 * SIZE))


def test_each_of_many_added_partitions_gets_its_own_stats(lake: Lake) -> None:
    """A request adding many partitions lists them side by side (a pool, as Hive's fshandler threads): each gets the
    figures of its own prefix, a new one none."""
    c = lake.client()
    db = lake.database(c)
    c.create_table(table(T, db, "t1", part_keys=[("k", "string")]))
    parted = c.get_table(db, "t1")
    filled = {str(n): n for n in range(1, 40, 3)}   # partition value -> the objects under it
    for value, count in filled.items():
        _files(lake, f"warehouse/{db}.db/t1/k={value}", [f"f{i}" for i in range(count)])
    values = sorted({*filled, *(f"new{n}" for n in range(12))})
    c.add_partitions([partition(T, parted, [value]) for value in values])
    for value in values:
        expected = (str(filled[value]), str(filled[value] * SIZE)) if value in filled else (None, None)
        assert _stats(c.get_partition(db, "t1", [value]).parameters) == expected, value


@pytest.mark.parametrize("backend", BACKENDS)
def test_quick_stats_are_skipped_past_the_limit(s3, backend, tmp_path) -> None:
    with lake_server(s3, backend, tmp_path, quick_stats_max_files=5) as lake:
        c = lake.client()
        db = lake.database(c)
        _files(lake, f"warehouse/{db}.db/five", [f"f{i}" for i in range(5)])
        _files(lake, f"warehouse/{db}.db/six", [f"f{i}" for i in range(6)])
        c.create_table(table(T, db, "five"))
        c.create_table(table(T, db, "six"))
        assert _stats(c.get_table(db, "five").parameters) == ("5", str(5 * SIZE))
        assert _stats(c.get_table(db, "six").parameters) == (None, None)


def test_a_listing_of_several_pages_is_counted_whole_and_deleted_in_batches(lake: Lake) -> None:
    count = 1500   # moto, as S3, lists 1,000 objects a page and deletes 1,000 a request
    c = lake.client()
    db = lake.database(c)
    prefix = f"warehouse/{db}.db/big"
    _files(lake, prefix, [f"part-{i:05d}" for i in range(count)])
    lists = lake.requests("list_objects_v2")
    c.create_table(table(T, db, "big"))
    assert _stats(c.get_table(db, "big").parameters) == (str(count), str(count * SIZE))
    pages = math.ceil(count / 1000)
    assert lake.requests("list_objects_v2") - lists <= 1 + pages   # a look whether it is new, then the pages
    deletes = lake.requests("delete_objects")
    c.drop_table(db, "big", True)
    assert lake.keys(prefix) == []
    assert lake.requests("delete_objects") - deletes == pages


def test_rename_moves_the_objects_of_a_managed_table_and_spares_its_neighbour(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    names = ["a", "sub/b", "_SUCCESS", "sub/deeper/c"]
    _files(lake, f"warehouse/{db}.db/t1", names)
    neighbour = _files(lake, f"warehouse/{db}.db/t10", ["keep"])
    c.create_table(table(T, db, "t1"))
    c.create_table(table(T, db, "t10"))
    renamed = c.get_table(db, "t1")
    renamed.tableName = "t2"
    c.alter_table(db, "t1", renamed)
    assert c.get_table(db, "t2").sd.location == f"{lake.root}/{db}.db/t2"
    assert lake.keys(f"warehouse/{db}.db/t2/") == sorted(f"warehouse/{db}.db/t2/{n}" for n in names)
    assert lake.keys(f"warehouse/{db}.db/t1/") == []
    assert lake.keys(f"warehouse/{db}.db/t10/") == neighbour
    other = lake.database(c)
    moved = c.get_table(db, "t2")
    moved.dbName = other
    c.alter_table(db, "t2", moved)
    assert c.get_table(other, "t2").sd.location == f"{lake.root}/{other}.db/t2"
    assert lake.keys(f"warehouse/{other}.db/t2/") == sorted(f"warehouse/{other}.db/t2/{n}" for n in names)
    assert lake.keys(f"warehouse/{db}.db/") == neighbour


def test_rename_onto_a_prefix_holding_objects_is_refused_and_moves_nothing(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    sources = _files(lake, f"warehouse/{db}.db/t1", ["a", "b"])
    squatter = _files(lake, f"warehouse/{db}.db/t2", ["someone-elses"])
    c.create_table(table(T, db, "t1"))
    renamed = c.get_table(db, "t1")
    renamed.tableName = "t2"
    with pytest.raises(T.InvalidOperationException, match="already holds objects"):
        c.alter_table(db, "t1", renamed)
    assert c.get_table(db, "t1").sd.location == f"{lake.root}/{db}.db/t1"
    assert lake.keys(f"warehouse/{db}.db/") == sorted(sources + squatter)


def test_a_rename_the_store_refuses_after_the_copy_deletes_the_copies(lake: Lake) -> None:
    """The objects are copied before the metadata changes: when the change is refused (the new name is taken by a
    table placed elsewhere), the copies are deleted and the sources are whole."""
    c = lake.client()
    db = lake.database(c)
    sources = _files(lake, f"warehouse/{db}.db/t1", ["a", "sub/b"])
    c.create_table(table(T, db, "t1"))
    c.create_table(table(T, db, "t2", location=f"s3a://{lake.bucket}/data/{db}/t2"))
    copies = lake.requests("copy_object")
    renamed = c.get_table(db, "t1")
    renamed.tableName = "t2"
    with pytest.raises(T.InvalidOperationException):
        c.alter_table(db, "t1", renamed)
    assert lake.requests("copy_object") - copies == len(sources)   # copied, then undone
    assert lake.keys(f"warehouse/{db}.db/") == sources
    assert c.get_table(db, "t1").sd.location == f"{lake.root}/{db}.db/t1"


def test_rename_partition_moves_its_objects(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    c.create_table(table(T, db, "t1", part_keys=[("k", "string")]))
    parted = c.get_table(db, "t1")
    for value in ("1", "10"):
        _files(lake, f"warehouse/{db}.db/t1/k={value}", ["a", "_SUCCESS"])
        c.add_partitions([partition(T, parted, [value])])
    moved = c.get_partition(db, "t1", ["1"])
    moved.values = ["2"]
    c.rename_partition(db, "t1", ["1"], moved)
    assert c.get_partition(db, "t1", ["2"]).sd.location == f"{lake.root}/{db}.db/t1/k=2"
    assert lake.keys(f"warehouse/{db}.db/") == [f"warehouse/{db}.db/t1/k={v}/{n}" for v in ("10", "2")
                                                for n in ("_SUCCESS", "a")]


def test_rename_of_a_table_at_a_chosen_location_moves_nothing(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    chosen = f"s3a://{lake.bucket}/data/{db}/t1"
    keys = _files(lake, f"data/{db}/t1", ["a"])
    c.create_table(table(T, db, "t1", location=chosen))
    renamed = c.get_table(db, "t1")
    renamed.tableName = "t2"
    c.alter_table(db, "t1", renamed)
    assert c.get_table(db, "t2").sd.location == chosen
    assert lake.keys(f"data/{db}/") == keys
    assert lake.keys(f"warehouse/{db}.db/") == []


def test_drop_table_deletes_its_prefix_and_nothing_beside_it(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    _files(lake, f"warehouse/{db}.db/t1", ["a", "_SUCCESS", "sub/b"])
    lake.put([f"warehouse/{db}.db/t1/"], b"")
    neighbour = _files(lake, f"warehouse/{db}.db/t10", ["keep"])
    beside = _files(lake, f"warehouse/{db}.db", ["t1-file"])
    c.create_table(table(T, db, "t1"))
    c.create_table(table(T, db, "kept"))
    _files(lake, f"warehouse/{db}.db/kept", ["a"])
    c.drop_table(db, "kept", False)   # without deleteData nothing goes
    c.drop_table(db, "t1", True)
    assert lake.keys(f"warehouse/{db}.db/") == sorted([*neighbour, *beside, f"warehouse/{db}.db/kept/a"])


def test_drop_partition_deletes_its_prefix_and_nothing_beside_it(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    c.create_table(table(T, db, "t1", part_keys=[("k", "string")]))
    parted = c.get_table(db, "t1")
    for value in ("1", "10"):
        _files(lake, f"warehouse/{db}.db/t1/k={value}", ["a", "b"])
        c.add_partitions([partition(T, parted, [value])])
    c.drop_partition(db, "t1", ["1"], True)
    assert lake.keys(f"warehouse/{db}.db/") == [f"warehouse/{db}.db/t1/k=10/a", f"warehouse/{db}.db/t1/k=10/b"]
    c.drop_table(db, "t1", True)
    assert lake.keys(f"warehouse/{db}.db/") == []


def test_drop_database_deletes_its_prefix_and_its_tables(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    _files(lake, f"warehouse/{db}.db/t1", ["a"])
    _files(lake, f"warehouse/{db}.db", ["loose"])
    outside = _files(lake, f"warehouse/{db}.dbx", ["keep"])
    elsewhere = _files(lake, f"data/{db}/placed", ["a"])
    c.create_table(table(T, db, "t1"))
    c.create_table(table(T, db, "placed", location=f"s3a://{lake.bucket}/data/{db}/placed"))
    c.drop_database(db, True, True)
    assert lake.keys(f"warehouse/{db}") == outside
    assert lake.keys(f"data/{db}/") == []   # a managed table's data goes wherever it was placed
    assert elsewhere   # (it was there)


def test_an_external_tables_data_survives_a_drop_with_delete_data(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    keys = _files(lake, f"ext/{db}/e1", ["a", "b"])
    c.create_table(table(T, db, "e1", location=f"s3a://{lake.bucket}/ext/{db}/e1", table_type="EXTERNAL_TABLE",
                         params={"EXTERNAL": "TRUE"}))
    assert _stats(c.get_table(db, "e1").parameters) == ("2", str(2 * SIZE))
    c.drop_table(db, "e1", True)
    assert lake.keys(f"ext/{db}/") == keys


def test_a_neighbour_of_a_table_at_a_chosen_prefix_survives(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    _files(lake, f"data/{db}/t1", ["a", "sub/b"])
    neighbour = _files(lake, f"data/{db}/t10", ["keep"])
    sibling = _files(lake, f"data/{db}", ["t1.txt"])
    c.create_table(table(T, db, "t1", location=f"s3a://{lake.bucket}/data/{db}/t1/"))
    assert c.get_table(db, "t1").sd.location == f"s3a://{lake.bucket}/data/{db}/t1"
    c.drop_table(db, "t1", True)
    assert lake.keys(f"data/{db}/") == sorted(neighbour + sibling)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bucket_root_or_what_holds_the_warehouse_is_never_deleted(s3, backend, tmp_path) -> None:
    with lake_server(s3, backend, tmp_path) as lake:   # a bucket of its own: a failure here would empty it
        c = lake.client()
        db = lake.database(c)
        other = s3.new_bucket()
        s3.put(other, "data/a")
        lake.put(["warehouse/x.db/t/a", "data/b"])
        everything = lake.keys("")
        places = {"root": f"s3a://{other}", "slash": f"s3a://{other}/", "whole": f"s3a://{lake.bucket}",
                  "wh": lake.root, "above": f"s3a://{lake.bucket}/warehouse/..", "dots": f"s3://{lake.bucket}/./"}
        for name, location in places.items():
            c.create_table(table(T, db, name, location=location))
        thrift = connect_thrift(lake.server)
        try:
            for name in places:
                thrift.truncate_table(db, name, None)
        finally:
            thrift.close()
        for name in places:
            c.drop_table(db, name, True)
        assert lake.keys("") == everything
        assert s3.keys(other) == ["data/a"]


def test_truncate_empties_the_prefix_and_only_it(lake: Lake) -> None:
    c = lake.client()
    db = lake.database(c)
    _files(lake, f"warehouse/{db}.db/t1", ["a", "_SUCCESS", "sub/b"])
    neighbour = _files(lake, f"warehouse/{db}.db/t10", ["keep"])
    c.create_table(table(T, db, "t1"))
    c.create_table(table(T, db, "p1", part_keys=[("k", "string")]))
    parted = c.get_table(db, "p1")
    for value in ("1", "2"):
        _files(lake, f"warehouse/{db}.db/p1/k={value}", ["a", "b"])
        c.add_partitions([partition(T, parted, [value])])
    thrift = connect_thrift(lake.server)   # truncate_table is not in hmsclient's (Hive 2.3) IDL
    try:
        thrift.truncate_table(db, "t1", None)
        thrift.truncate_table(db, "p1", ["k=1"])
    finally:
        thrift.close()
    assert lake.keys(f"warehouse/{db}.db/") == sorted(
        [*neighbour, f"warehouse/{db}.db/p1/k=2/a", f"warehouse/{db}.db/p1/k=2/b"])
    assert _stats(c.get_table(db, "t1").parameters) == ("0", "0")
    assert _stats(c.get_partition(db, "p1", ["1"]).parameters) == ("0", "0")
    assert _stats(c.get_partition(db, "p1", ["2"]).parameters) == ("2", str(2 * SIZE))


def test_keys_with_escaped_and_unusual_characters_are_counted_moved_and_deleted(lake: Lake) -> None:
    """Hive escapes '/' (and '%', '=', ...) in a partition's directory name (`k=a%2Fb`); the key holds those
    characters literally, as do keys with spaces, '+' and non-ASCII letters, which S3 requests must encode."""
    c = lake.client()
    db = lake.database(c)
    c.create_table(table(T, db, "t1", part_keys=[("k", "string")]))
    parted = c.get_table(db, "t1")
    values = {"a/b": "k=a%2Fb", "x y+z": "k=x y+z", "é~ü": "k=é~ü"}
    for value, directory in values.items():
        _files(lake, f"warehouse/{db}.db/t1/{directory}", ["data 1+1.txt", "naïve"])
        c.add_partitions([partition(T, parted, [value])])
        added = c.get_partition(db, "t1", [value])
        assert added.sd.location == f"{lake.root}/{db}.db/t1/{directory}"
        assert _stats(added.parameters) == ("2", str(2 * SIZE))
    renamed = c.get_table(db, "t1")
    renamed.tableName = "t2"
    c.alter_table(db, "t1", renamed)
    assert lake.keys(f"warehouse/{db}.db/") == sorted(f"warehouse/{db}.db/t2/{d}/{n}" for d in values.values()
                                                      for n in ("data 1+1.txt", "naïve"))
    c.drop_partition(db, "t2", ["a/b"], True)
    assert not lake.keys(f"warehouse/{db}.db/t2/k=a%2Fb/")
    c.drop_table(db, "t2", True)
    assert lake.keys(f"warehouse/{db}.db/") == []
