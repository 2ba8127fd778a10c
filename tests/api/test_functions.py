"""User-defined functions: create, get, list by pattern, alter, drop."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms


def function(T, db: str, name: str, class_name: str = "com.example.Upper", jar: str = "file:/tmp/udf.jar"):
    return T.Function(functionName=name, dbName=db, className=class_name, ownerName="alice",
                      ownerType=T.PrincipalType.USER, createTime=0, functionType=T.FunctionType.JAVA,
                      resourceUris=[T.ResourceUri(resourceType=T.ResourceType.JAR, uri=jar)])


def test_create_get_list_alter_drop(client, hclient, db):
    hclient.create_function(function(A, db, "MyUpper"))
    client.create_function(function(hms, db, "my_lower", "com.example.Lower"))
    client.create_function(function(hms, db, "other"))
    got = hclient.get_function(db, "MYUPPER")
    assert (got.functionName, got.dbName, got.className) == ("myupper", db, "com.example.Upper")
    assert got.createTime > 0
    assert [(r.resourceType, r.uri) for r in got.resourceUris] == [(A.ResourceType.JAR, "file:/tmp/udf.jar")]
    assert client.get_functions(db, "my*") == ["my_lower", "myupper"]
    assert client.get_functions(db, "*") == ["my_lower", "myupper", "other"]
    assert hclient.get_functions(db, "oth*|my_l*") == ["my_lower", "other"]
    every = {(f.dbName, f.functionName) for f in hclient.get_all_functions().functions}
    assert {(db, "myupper"), (db, "my_lower"), (db, "other")} <= every

    client.alter_function(db, "myupper", function(hms, db, "myupper", "com.example.Upper2", "file:/tmp/v2.jar"))
    changed = client.get_function(db, "myupper")
    assert changed.className == "com.example.Upper2" and changed.resourceUris[0].uri == "file:/tmp/v2.jar"
    assert changed.createTime == got.createTime

    client.drop_function(db, "myupper")
    with pytest.raises(hms.NoSuchObjectException):
        client.get_function(db, "myupper")
    assert client.get_functions(db, "*") == ["my_lower", "other"]


def test_errors(client, hclient, db):
    # Spark's 2.3 client tells "not found" from the exception field: get_function -> field 2.
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_function(db, "missing")
    with pytest.raises(A.NoSuchObjectException):
        hclient.drop_function(db, "missing")
    with pytest.raises(hms.MetaException, match="function missing doesn't exist"):  # Hive 2.3's answer
        client.alter_function(db, "missing", function(hms, db, "missing"))
    client.create_function(function(hms, db, "f"))
    with pytest.raises(A.AlreadyExistsException):
        hclient.create_function(function(A, db, "F"))
    with pytest.raises(hms.InvalidObjectException):
        client.create_function(function(hms, db, "bad name"))
    with pytest.raises(hms.NoSuchObjectException):
        client.create_function(function(hms, "no_such_db_x", "f"))


def test_drop_database_cascade_drops_functions(client, hclient, db):
    client.create_function(function(hms, db, "f"))
    client.drop_database(db, True, True)
    assert all(f.dbName != db for f in hclient.get_all_functions().functions or [])
