"""Tables: managed, external and views; reads and listings; alter and rename (with partitions and data
following); drop with and without data; fields and schema; quick stats over existing files."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms
from hmsproxy.storage.locations import to_uri
from support.builders import database, partition, path_of, table, unique, write_file


def test_managed_table_defaults(client, backend_server, db):
    client.create_table(table(hms, db, "Sales", columns=[("ID", "int"), ("Name", "string")]))
    got = client.get_table(db, "SALES")
    assert (got.tableName, got.dbName, got.tableType) == ("sales", db, "MANAGED_TABLE")
    assert [c.name for c in got.sd.cols] == ["id", "name"]
    assert path_of(got.sd.location) == backend_server.warehouse / f"{db}.db" / "sales"
    assert path_of(got.sd.location).is_dir()
    assert got.createTime > 0
    assert "transient_lastDdlTime" in got.parameters


def test_external_by_parameter_or_type(client, db, tmp_path):
    location = to_uri(tmp_path / "ext1")
    client.create_table(table(hms, db, "e1", location=location, params={"EXTERNAL": "TRUE"}))
    client.create_table(table(hms, db, "e2", location=to_uri(tmp_path / "ext2"), table_type="EXTERNAL_TABLE"))
    e1, e2 = client.get_table(db, "e1"), client.get_table(db, "e2")
    assert e1.tableType == e2.tableType == "EXTERNAL_TABLE"
    assert e2.parameters["EXTERNAL"] == "TRUE"
    assert e1.sd.location == location and path_of(location).is_dir()


def test_view_has_no_location(client, db):
    client.create_table(table(hms, db, "v1", table_type="VIRTUAL_VIEW", view_text="select 1"))
    view = client.get_table(db, "v1")
    assert view.tableType == "VIRTUAL_VIEW"
    assert not view.sd.location
    assert view.viewOriginalText == "select 1"


def test_create_errors(client, hclient, db):
    with pytest.raises(hms.InvalidObjectException):
        client.create_table(table(hms, db, "bad-name"))
    with pytest.raises(A.InvalidObjectException):
        hclient.create_table(table(A, db, "with space"))
    with pytest.raises(hms.InvalidObjectException):  # HMS 2.3's answer for a database that does not exist
        client.create_table(table(hms, unique("missing"), "t"))
    client.create_table(table(hms, db, "dup"))
    with pytest.raises(A.AlreadyExistsException):
        hclient.create_table(table(A, db, "DUP"))
    client.create_table(table(hms, db, "clash", part_keys=[("id", "int")]))  # HMS 2.3 accepts a key named like a column
    with pytest.raises(hms.InvalidObjectException, match="Invalid column type: notatype"):
        client.create_table(table(hms, db, "badtype", columns=[("c", "notatype")]))


def test_get_missing_table_is_field_two_for_spark(hclient, db):
    # Spark's 2.3 client tells "not found" from the exception field: get_table -> field 2.
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_table(db, "nope")
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_table(unique("missing"), "nope")


def test_listings(client, hclient, db):
    for name in ["alpha", "beta", "alps", "gamma"]:
        client.create_table(table(hms, db, name))
    client.create_table(table(hms, db, "v", table_type="VIRTUAL_VIEW", view_text="select 1"))
    assert client.get_all_tables(db) == ["alpha", "alps", "beta", "gamma", "v"]
    assert hclient.get_tables(db, "al*") == ["alpha", "alps"]
    assert client.get_tables(db, "al*|GA*") == ["alpha", "alps", "gamma"]
    assert client.get_tables(db, "*") == client.get_all_tables(db)
    assert client.get_tables_by_type(db, "*", "VIRTUAL_VIEW") == ["v"]
    assert client.get_all_tables(unique("missing")) == []


def test_objects_by_name_and_req_calls(client, hclient, db):
    for name in ["t1", "t2", "t3"]:
        client.create_table(table(hms, db, name))
    found = client.get_table_objects_by_name(db, ["T1", "t3", "missing"])
    assert sorted(t.tableName for t in found) == ["t1", "t3"]
    found = hclient.get_table_objects_by_name(db, ["t2"])
    assert [t.tableName for t in found] == ["t2"]
    result = client.get_table_objects_by_name_req(hms.GetTablesRequest(dbName=db, tblNames=["t1", "t2"]))
    assert sorted(t.tableName for t in result.tables) == ["t1", "t2"]
    result = hclient.get_table_objects_by_name_req(A.GetTablesRequest(dbName=db, tblNames=["t3"]))
    assert [t.tableName for t in result.tables] == ["t3"]
    got = client.get_table_req(hms.GetTableRequest(dbName=db, tblName="T2")).table
    assert got.tableName == "t2"
    got = hclient.get_table_req(A.GetTableRequest(dbName=db, tblName="t1")).table
    assert got.tableName == "t1"
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_table_req(A.GetTableRequest(dbName=db, tblName="missing"))


def test_get_fields_and_schema(client, hclient, db):
    client.create_table(table(hms, db, "p", part_keys=[("ds", "string")]))
    assert [f.name for f in client.get_fields(db, "p")] == ["id", "name"]
    assert [f.name for f in hclient.get_schema(db, "p")] == ["id", "name", "ds"]
    with pytest.raises(hms.UnknownTableException):
        client.get_fields(db, "missing")
    with pytest.raises(A.UnknownTableException):
        hclient.get_schema(db, "missing")
    # Hive 3+'s request forms answer the same
    fields = client.get_fields_req(hms.GetFieldsRequest(dbName=db, tblName="p")).fields
    assert fields == client.get_fields(db, "p")
    schema = client.get_schema_req(hms.GetSchemaRequest(catName="hive", dbName=db, tblName="P")).fields
    assert schema == client.get_schema(db, "p")
    with pytest.raises(hms.UnknownTableException):
        client.get_schema_req(hms.GetSchemaRequest(dbName=db, tblName="missing"))


def test_alter_properties_and_columns(client, hclient, db):
    client.create_table(table(hms, db, "t"))
    t = hclient.get_table(db, "t")
    t.parameters["comment"] = "hello"
    t.sd.cols.append(A.FieldSchema(name="extra", type="double", comment=None))
    hclient.alter_table_with_environment_context(db, "t", t, A.EnvironmentContext(properties={}))
    got = client.get_table(db, "t")
    assert got.parameters["comment"] == "hello"
    assert [c.name for c in got.sd.cols] == ["id", "name", "extra"]


def test_alter_missing_table_and_partition_key_change(client, hclient, db):
    with pytest.raises(hms.InvalidOperationException):
        client.alter_table(db, "missing", table(hms, db, "missing"))
    client.create_table(table(hms, db, "p", part_keys=[("ds", "string")]))
    changed = client.get_table(db, "p")
    changed.partitionKeys = [hms.FieldSchema(name="ds", type="int")]
    with pytest.raises(hms.InvalidOperationException):
        client.alter_table(db, "p", changed)
    changed = hclient.get_table(db, "p")
    changed.partitionKeys = [A.FieldSchema(name="ds", type="string"), A.FieldSchema(name="hr", type="int")]
    with pytest.raises(A.InvalidOperationException):
        hclient.alter_table(db, "p", changed)
    assert [k.type for k in client.get_table(db, "p").partitionKeys] == ["string"]


def _partitioned_with_data(client, db: str, name: str) -> tuple[object, list[str]]:
    client.create_table(table(hms, db, name, part_keys=[("ds", "string")]))
    tbl = client.get_table(db, name)
    client.add_partitions([partition(hms, tbl, [v]) for v in ("a", "b")])
    for part in client.get_partitions(db, name, -1):
        write_file(part.sd.location, "part-0", b"x" * 10)
    write_file(tbl.sd.location, "top", b"abc")
    return tbl, ["a", "b"]


def test_rename_within_database_moves_table_and_partitions(client, hclient, db):
    old, _values = _partitioned_with_data(client, db, "src")
    renamed = hclient.get_table(db, "src")
    renamed.tableName = "DST"
    hclient.alter_table(db, "src", renamed)
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table(db, "src")
    new = client.get_table(db, "dst")
    assert new.sd.location.endswith(f"{db}.db/dst")
    assert not path_of(old.sd.location).exists()
    assert (path_of(new.sd.location) / "top").read_bytes() == b"abc"
    parts = client.get_partitions(db, "dst", -1)
    assert [p.values for p in parts] == [["a"], ["b"]]
    for part in parts:
        assert part.tableName == "dst"
        assert part.sd.location == f"{new.sd.location}/ds={part.values[0]}"
        assert (path_of(part.sd.location) / "part-0").read_bytes() == b"x" * 10
    assert client.get_partition_names(db, "dst", -1) == ["ds=a", "ds=b"]


def test_rename_across_databases(client, db):
    old, _ = _partitioned_with_data(client, db, "src")
    other = unique()
    client.create_database(database(hms, other))
    try:
        moved = client.get_table(db, "src")
        moved.dbName, moved.tableName = other, "moved"
        client.alter_table(db, "src", moved)
        assert client.get_all_tables(db) == []
        new = client.get_table(other, "moved")
        assert new.dbName == other and new.sd.location.endswith(f"{other}.db/moved")
        assert not path_of(old.sd.location).exists()
        for part in client.get_partitions(other, "moved", -1):
            assert part.dbName == other and part.sd.location.startswith(new.sd.location + "/")
            assert (path_of(part.sd.location) / "part-0").exists()
    finally:
        client.drop_database(other, True, True)


def test_rename_to_missing_database_or_existing_table(client, db):
    client.create_table(table(hms, db, "a"))
    client.create_table(table(hms, db, "b"))
    moved = client.get_table(db, "a")
    moved.tableName = "b"
    with pytest.raises(hms.InvalidOperationException):
        client.alter_table(db, "a", moved)
    moved.dbName, moved.tableName = unique("missing"), "a"
    with pytest.raises(hms.InvalidOperationException):
        client.alter_table(db, "a", moved)
    assert client.get_all_tables(db) == ["a", "b"]
    assert path_of(client.get_table(db, "a").sd.location).is_dir()


def test_drop_managed_deletes_data(client, hclient, db):
    tbl, _ = _partitioned_with_data(client, db, "m")
    parts = client.get_partitions(db, "m", -1)
    hclient.drop_table_with_environment_context(db, "m", True, A.EnvironmentContext(properties={}))
    assert not path_of(tbl.sd.location).exists()
    assert all(not path_of(p.sd.location).exists() for p in parts)
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table(db, "m")


def test_drop_managed_partition_at_external_location_deletes_it(client, db, tmp_path):
    client.create_table(table(hms, db, "m", part_keys=[("ds", "string")]))
    tbl = client.get_table(db, "m")
    outside = to_uri(tmp_path / "outside")
    client.add_partition(partition(hms, tbl, ["x"], location=outside))
    write_file(outside)
    client.drop_table(db, "m", True)
    assert not path_of(outside).exists()


def test_drop_external_keeps_data_and_delete_data_false_keeps_data(client, db, tmp_path):
    location = to_uri(tmp_path / "ext")
    client.create_table(table(hms, db, "e", location=location, table_type="EXTERNAL_TABLE"))
    data = write_file(location)
    client.drop_table(db, "e", True)
    assert data.exists()
    client.create_table(table(hms, db, "m"))
    managed = write_file(client.get_table(db, "m").sd.location)
    client.drop_table(db, "m", False)
    assert managed.exists()
    with pytest.raises(hms.NoSuchObjectException):
        client.drop_table(db, "m", True)


def test_quick_stats_when_created_over_existing_files(client, db, tmp_path):
    location = to_uri(tmp_path / "existing")
    write_file(location, "f1", b"12345")
    write_file(location, "f2", b"1234567")
    write_file(location, "_SUCCESS", b"")
    client.create_table(table(hms, db, "e", location=location, table_type="EXTERNAL_TABLE"))
    params = client.get_table(db, "e").parameters
    assert (params["numFiles"], params["totalSize"]) == ("2", "12")
    client.create_table(table(hms, db, "fresh"))
    assert "numFiles" not in client.get_table(db, "fresh").parameters or \
        client.get_table(db, "fresh").parameters["numFiles"] == "0"


def test_alter_updates_quick_stats_unless_told_not_to(client, db):
    client.create_table(table(hms, db, "t"))
    tbl = client.get_table(db, "t")
    write_file(tbl.sd.location, "f1", b"1234")
    client.alter_table_with_environment_context(
        db, "t", tbl, hms.EnvironmentContext(properties={"DO_NOT_UPDATE_STATS": "true"}))
    assert client.get_table(db, "t").parameters.get("totalSize") != "4"
    client.alter_table(db, "t", client.get_table(db, "t"))
    params = client.get_table(db, "t").parameters
    assert (params["numFiles"], params["totalSize"]) == ("1", "4")


def test_alter_with_cascade_updates_partition_columns(client, hclient, db):
    client.create_table(table(hms, db, "p", part_keys=[("ds", "string")]))
    tbl = client.get_table(db, "p")
    client.add_partitions([partition(hms, tbl, ["a"]), partition(hms, tbl, ["b"])])
    changed = hclient.get_table(db, "p")
    changed.sd.cols.append(A.FieldSchema(name="added", type="bigint", comment=None))
    hclient.alter_table_with_cascade(db, "p", changed, True)
    for part in client.get_partitions(db, "p", -1):
        assert [c.name for c in part.sd.cols] == ["id", "name", "added"]
    changed.sd.cols.append(A.FieldSchema(name="later", type="int", comment=None))
    hclient.alter_table_with_environment_context(db, "p", changed, A.EnvironmentContext(properties={}))
    assert [c.name for c in client.get_partition(db, "p", ["a"]).sd.cols] == ["id", "name", "added"]


def test_truncate_empties_managed_data(client, db, tmp_path):
    client.create_table(table(hms, db, "m"))
    location = client.get_table(db, "m").sd.location
    write_file(location, "f1", b"123")
    client.truncate_table(db, "m", None)
    assert list(path_of(location).iterdir()) == []
    assert client.get_table(db, "m").parameters["numFiles"] == "0"
    client.create_table(table(hms, db, "e", location=to_uri(tmp_path / "e"), table_type="EXTERNAL_TABLE"))
    with pytest.raises(hms.MetaException):
        client.truncate_table(db, "e", None)


def test_rename_external_table_leaves_data_in_place(client, db, tmp_path):
    location = to_uri(tmp_path / "ext")
    client.create_table(table(hms, db, "e", location=location, table_type="EXTERNAL_TABLE"))
    data = write_file(location)
    renamed = client.get_table(db, "e")
    renamed.tableName = "e2"
    client.alter_table(db, "e", renamed)
    assert client.get_table(db, "e2").sd.location == location
    assert data.exists()
