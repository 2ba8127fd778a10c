"""Databases: create, get, list by pattern, alter, drop (cascade or not), the `default` database and the
directories the server creates and removes."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms
from hmsproxy.storage.locations import to_uri
from support.builders import database, path_of, table, unique, write_file


def test_create_with_location_params_and_owner(client, backend_server, tmp_path):
    name = unique()
    location = to_uri(tmp_path / "elsewhere" / f"{name}.db")
    client.create_database(database(hms, name, location=location, params={"k": "v"}, owner="bob"))
    try:
        got = client.get_database(name)
        assert (got.name, got.locationUri, got.parameters, got.ownerName) == (name, location, {"k": "v"}, "bob")
        assert got.ownerType == hms.PrincipalType.USER
        assert path_of(location).is_dir()
    finally:
        client.drop_database(name, True, True)
    assert not path_of(location).exists()


def test_default_location_is_under_the_warehouse_and_names_are_lower_cased(client, backend_server):
    name = unique("MiXeD")
    client.create_database(database(hms, name))
    got = client.get_database(name.upper())
    assert got.name == name.lower()
    assert path_of(got.locationUri) == backend_server.warehouse / f"{name.lower()}.db"
    assert path_of(got.locationUri).is_dir()
    client.drop_database(name, True, False)
    assert not (backend_server.warehouse / f"{name.lower()}.db").exists()
    with pytest.raises(hms.NoSuchObjectException):
        client.get_database(name)


def test_create_twice_and_invalid_name(client, db):
    with pytest.raises(hms.AlreadyExistsException):
        client.create_database(database(hms, db))
    with pytest.raises(hms.InvalidObjectException):
        client.create_database(database(hms, "bad-name!"))


def test_get_missing_database_is_field_one_for_spark(hclient):
    # Spark's 2.3 client tells "not found" from the exception field: get_database -> field 1.
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_database(unique("missing"))


def test_get_databases_patterns(client):
    stem = unique("pat")
    names = [f"{stem}_a1", f"{stem}_a2", f"{stem}_b1", f"{stem}_c1"]
    for name in names:
        client.create_database(database(hms, name))
    try:
        everything = client.get_databases("*")
        assert set(names) <= set(everything) and "default" in everything
        assert everything == sorted(everything)
        assert set(client.get_all_databases()) == set(everything)
        assert client.get_databases(f"{stem}_a*|{stem}_b*") == names[:3]
        assert client.get_databases(f"{stem.upper()}_C*") == [names[3]]
        assert client.get_databases(f"{stem}_z*") == []
    finally:
        for name in names:
            client.drop_database(name, True, False)


def test_alter_changes_params_and_owner_only(client, hclient, db):
    before = client.get_database(db)
    changed = database(hms, db, location="file:/somewhere/else", params={"new": "1"}, owner="carol")
    changed.description = "changed description"
    client.alter_database(db, changed)
    after = hclient.get_database(db)
    assert after.parameters == {"new": "1"}
    assert after.ownerName == "carol"
    assert after.description == before.description
    assert after.locationUri == before.locationUri


def test_alter_missing_database(client):
    with pytest.raises(hms.NoSuchObjectException):
        client.alter_database(unique("missing"), database(hms, "x"))


def test_drop_non_empty_without_cascade_drops_nothing(client, hclient, db):
    client.create_table(table(hms, db, "t1"))
    with pytest.raises(A.InvalidOperationException):
        hclient.drop_database(db, True, False)
    assert client.get_database(db).name == db
    assert client.get_all_tables(db) == ["t1"]


def test_drop_cascade_removes_tables_and_directories(client, backend_server):
    name = unique()
    client.create_database(database(hms, name))
    client.create_table(table(hms, name, "t1"))
    client.create_table(table(hms, name, "p1", part_keys=[("ds", "string")]))
    t1 = client.get_table(name, "t1")
    write_file(t1.sd.location)
    client.drop_database(name, True, True)
    assert name not in client.get_all_databases()
    assert not (backend_server.warehouse / f"{name}.db").exists()
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table(name, "t1")


def test_drop_without_delete_data_keeps_directory(client, backend_server):
    name = unique()
    client.create_database(database(hms, name))
    client.create_table(table(hms, name, "t1"))
    client.drop_database(name, False, True)
    assert (backend_server.warehouse / f"{name}.db" / "t1").is_dir()


def test_drop_missing_database(client, hclient):
    with pytest.raises(hms.NoSuchObjectException):
        client.drop_database(unique("missing"), True, True)
    with pytest.raises(A.NoSuchObjectException):
        hclient.drop_database(unique("missing"), True, True)


def test_default_database_exists_and_cannot_be_dropped(client, hclient, backend_server):
    default = hclient.get_database("default")
    assert default.name == "default"
    assert path_of(default.locationUri) == backend_server.warehouse
    with pytest.raises(hms.MetaException):
        client.drop_database("default", True, True)
    assert client.get_database("default").name == "default"
