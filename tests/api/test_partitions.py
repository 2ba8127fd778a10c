"""Partitions: add (single, batch, request; all or nothing), reads by values, name, partial spec and
names, alter, rename (directory moves), drop variants, append, default partition name and ordering."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms
from hmsproxy.storage.locations import to_uri
from support.builders import partition, path_of, table, write_file


@pytest.fixture
def tbl(client, db):
    """A managed table partitioned by (ds string, hr int)."""
    client.create_table(table(hms, db, "events", part_keys=[("ds", "string"), ("hr", "int")]))
    return client.get_table(db, "events")


def add(client, tbl, *values_list):
    client.add_partitions([partition(hms, tbl, v) for v in values_list])


def names(client, tbl):
    return client.get_partition_names(tbl.dbName, tbl.tableName, -1)


def test_add_partition_defaults(client, hclient, tbl):
    added = client.add_partition(partition(hms, tbl, ["2024-01-01", "1"]))
    assert added.values == ["2024-01-01", "1"]
    got = hclient.get_partition(tbl.dbName, "EVENTS", ["2024-01-01", "1"])
    assert got.sd.location == f"{tbl.sd.location}/ds=2024-01-01/hr=1"
    assert path_of(got.sd.location).is_dir()
    assert got.createTime > 0 and got.tableName == "events" and got.dbName == tbl.dbName
    by_name = client.get_partition_by_name(tbl.dbName, tbl.tableName, "ds=2024-01-01/hr=1")
    assert by_name.values == got.values
    with pytest.raises(A.AlreadyExistsException):
        # HMSClient shadows add_partition with a helper: call the generated method
        ThriftHiveMetastore.Client.add_partition(
            hclient, partition(A, hclient.get_table(tbl.dbName, "events"), ["2024-01-01", "1"]))


def test_add_partition_to_missing_table(client, db):
    part = hms.Partition(values=["x"], dbName=db, tableName="missing", sd=None, parameters={})
    with pytest.raises(hms.InvalidObjectException):
        client.add_partition(part)


def test_get_missing_partition(client, hclient, tbl):
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_partition(tbl.dbName, tbl.tableName, ["nope", "1"])
    with pytest.raises(hms.NoSuchObjectException):
        client.get_partition_by_name(tbl.dbName, tbl.tableName, "ds=nope/hr=1")


def test_values_count_mismatch_is_meta_exception(client, hclient, tbl):
    with pytest.raises(hms.MetaException):
        client.add_partition(partition(hms, tbl, ["only-one"]))
    with pytest.raises(A.MetaException):
        hclient.get_partition(tbl.dbName, tbl.tableName, ["a", "1", "extra"])
    assert names(client, tbl) == []


def test_empty_value_is_default_partition(client, tbl):
    add(client, tbl, ["", "1"])
    assert names(client, tbl) == ["ds=__HIVE_DEFAULT_PARTITION__/hr=1"]
    part = client.get_partition(tbl.dbName, tbl.tableName, ["__HIVE_DEFAULT_PARTITION__", "1"])
    assert part.values == ["__HIVE_DEFAULT_PARTITION__", "1"]


@pytest.mark.parametrize("bad_name", ["garbage", "ds=a", "hr=1"])
def test_partition_names_are_read_as_hms_does(client, hclient, tbl, bad_name):
    # HMS's getPartValsFromName: any component order, extra components ignored, a missing key is
    # NoSuchObjectException (InvalidObjectException for append)
    add(client, tbl, ["a", "1"])
    db, t = tbl.dbName, tbl.tableName
    assert client.get_partition_by_name(db, t, "hr=1/ds=a").values == ["a", "1"]
    assert hclient.get_partition_by_name(db, t, "ds=a/hr=1/extra=x").values == ["a", "1"]
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_partition_by_name(db, t, bad_name)
    with pytest.raises(hms.NoSuchObjectException):
        client.drop_partition_by_name(db, t, bad_name, True)
    with pytest.raises(A.InvalidObjectException):
        hclient.append_partition_by_name(db, t, bad_name)
    result = client.drop_partitions_req(hms.DropPartitionsRequest(
        dbName=db, tblName=t, parts=hms.RequestPartsSpec(names=[bad_name]), ifExists=True))
    assert result.partitions == []
    with pytest.raises(hms.NoSuchObjectException):
        client.drop_partitions_req(hms.DropPartitionsRequest(
            dbName=db, tblName=t, parts=hms.RequestPartsSpec(names=[bad_name]), ifExists=False))
    assert names(client, tbl) == ["ds=a/hr=1"]


def test_escaped_values_round_trip(client, tbl):
    add(client, tbl, ["a/b:c", "1"])
    assert names(client, tbl) == ["ds=a%2Fb%3Ac/hr=1"]
    part = client.get_partition_by_name(tbl.dbName, tbl.tableName, "ds=a%2Fb%3Ac/hr=1")
    assert part.values == ["a/b:c", "1"]
    assert path_of(part.sd.location).name == "hr=1"
    assert path_of(part.sd.location).parent.name == "ds=a%2Fb%3Ac"


def test_listings_are_sorted_by_name(client, hclient, tbl):
    add(client, tbl, ["b", "2"], ["a", "10"], ["b", "1"], ["a", "2"])
    expected = ["ds=a/hr=10", "ds=a/hr=2", "ds=b/hr=1", "ds=b/hr=2"]
    assert names(client, tbl) == expected
    assert hclient.get_partition_names(tbl.dbName, tbl.tableName, -1) == expected
    parts = hclient.get_partitions(tbl.dbName, tbl.tableName, -1)
    assert [p.values for p in parts] == [["a", "10"], ["a", "2"], ["b", "1"], ["b", "2"]]
    assert len(client.get_partitions(tbl.dbName, tbl.tableName, 2)) == 2
    assert client.get_partition_names(tbl.dbName, tbl.tableName, 3) == expected[:3]
    resp = client.get_partitions_req(hms.PartitionsRequest(dbName=tbl.dbName, tblName=tbl.tableName))
    assert [p.values for p in resp.partitions] == [p.values for p in parts]


def test_partial_specs(client, hclient, tbl):
    add(client, tbl, ["a", "1"], ["a", "2"], ["b", "1"], ["c", "3"])
    db, t = tbl.dbName, tbl.tableName
    assert [p.values for p in client.get_partitions_ps(db, t, ["a"], -1)] == [["a", "1"], ["a", "2"]]
    assert [p.values for p in client.get_partitions_ps(db, t, ["", "1"], -1)] == [["a", "1"], ["b", "1"]]
    parts = hclient.get_partitions_ps_with_auth(db, t, ["", "1"], -1, "alice", ["users"])
    assert [p.values for p in parts] == [["a", "1"], ["b", "1"]]
    assert len(hclient.get_partitions_ps_with_auth(db, t, [], -1, "alice", [])) == 4
    assert client.get_partition_names_ps(db, t, ["", "1"], -1) == ["ds=a/hr=1", "ds=b/hr=1"]
    assert hclient.get_partition_names_ps(db, t, ["a", ""], 1) == ["ds=a/hr=1"]
    with pytest.raises(hms.MetaException):
        client.get_partitions_ps(db, t, ["a", "1", "x"], -1)


def test_by_names(client, hclient, tbl):
    add(client, tbl, ["a", "1"], ["b", "2"], ["c", "3"])
    db, t = tbl.dbName, tbl.tableName
    parts = client.get_partitions_by_names(db, t, ["ds=c/hr=3", "ds=a/hr=1", "ds=zz/hr=9"])
    assert sorted(p.values for p in parts) == [["a", "1"], ["c", "3"]]
    parts = hclient.get_partitions_by_names(db, t, ["ds=b/hr=2"])
    assert [p.values for p in parts] == [["b", "2"]]
    resp = client.get_partitions_by_names_req(
        hms.GetPartitionsByNamesRequest(db_name=db, tbl_name=t, names=["ds=a/hr=1", "ds=b/hr=2"]))
    assert sorted(p.values for p in resp.partitions) == [["a", "1"], ["b", "2"]]


def test_add_partitions_req_all_or_nothing(client, hclient, tbl):
    db, t = tbl.dbName, tbl.tableName
    duplicate = [partition(hms, tbl, ["a", "1"]), partition(hms, tbl, ["b", "1"]), partition(hms, tbl, ["a", "1"])]
    with pytest.raises(hms.MetaException):
        client.add_partitions_req(hms.AddPartitionsRequest(dbName=db, tblName=t, parts=duplicate, ifNotExists=False))
    assert names(client, tbl) == []
    assert not (path_of(tbl.sd.location) / "ds=b").exists()

    add(client, tbl, ["a", "1"])
    atbl = hclient.get_table(db, t)
    batch = [partition(A, atbl, ["b", "1"]), partition(A, atbl, ["a", "1"])]
    with pytest.raises(A.AlreadyExistsException):
        hclient.add_partitions_req(A.AddPartitionsRequest(dbName=db, tblName=t, parts=batch, ifNotExists=False))
    assert names(client, tbl) == ["ds=a/hr=1"]
    assert not (path_of(tbl.sd.location) / "ds=b").exists()
    with pytest.raises(A.AlreadyExistsException):
        hclient.add_partitions(batch)
    assert names(client, tbl) == ["ds=a/hr=1"]

    result = hclient.add_partitions_req(
        A.AddPartitionsRequest(dbName=db, tblName=t, parts=batch, ifNotExists=True, needResult=True))
    assert [p.values for p in result.partitions] == [["b", "1"]]
    assert names(client, tbl) == ["ds=a/hr=1", "ds=b/hr=1"]


def test_add_partitions_count_and_foreign_partition(client, db, tbl):
    assert client.add_partitions([partition(hms, tbl, ["a", "1"]), partition(hms, tbl, ["a", "2"])]) == 2
    client.create_table(table(hms, db, "other", part_keys=[("ds", "string"), ("hr", "int")]))
    other = client.get_table(db, "other")
    with pytest.raises(hms.MetaException):
        client.add_partitions([partition(hms, tbl, ["z", "1"]), partition(hms, other, ["z", "2"])])
    assert names(client, tbl) == ["ds=a/hr=1", "ds=a/hr=2"]
    assert client.get_partition_names(db, "other", -1) == []


def test_many_partitions_in_one_request(client, tbl):
    parts = [partition(hms, tbl, [f"d{i // 24:04d}", str(i % 24)]) for i in range(2100)]
    result = client.add_partitions_req(
        hms.AddPartitionsRequest(dbName=tbl.dbName, tblName=tbl.tableName, parts=parts, ifNotExists=False,
                                 needResult=False))
    assert not result.partitions
    got = names(client, tbl)
    assert len(got) == 2100 and got == sorted(got)
    assert len(client.get_partitions(tbl.dbName, tbl.tableName, -1)) == 2100
    assert client.get_num_partitions_by_filter(tbl.dbName, tbl.tableName, 'ds = "d0003"') == 24


def test_alter_partition_and_partitions(client, hclient, tbl):
    add(client, tbl, ["a", "1"], ["a", "2"])
    db, t = tbl.dbName, tbl.tableName
    part = hclient.get_partition(db, t, ["a", "1"])
    part.parameters["owner_note"] = "x"
    hclient.alter_partition(db, t, part)
    assert client.get_partition(db, t, ["a", "1"]).parameters["owner_note"] == "x"
    both = client.get_partitions(db, t, -1)
    for p in both:
        p.parameters["batch"] = "y"
        p.sd.cols.append(hms.FieldSchema(name="extra", type="string"))
    client.alter_partitions(db, t, both)
    for p in client.get_partitions(db, t, -1):
        assert p.parameters["batch"] == "y" and [c.name for c in p.sd.cols][-1] == "extra"
    missing = partition(hms, tbl, ["zz", "9"])
    with pytest.raises(hms.InvalidOperationException):
        client.alter_partition(db, t, missing)


def test_rename_partition_moves_directory(client, hclient, tbl):
    add(client, tbl, ["a", "1"])
    db, t = tbl.dbName, tbl.tableName
    old = client.get_partition(db, t, ["a", "1"])
    write_file(old.sd.location, "f", b"data")
    new = hclient.get_partition(db, t, ["a", "1"])
    new.values = ["b", "2"]
    hclient.rename_partition(db, t, ["a", "1"], new)
    assert names(client, tbl) == ["ds=b/hr=2"]
    moved = client.get_partition(db, t, ["b", "2"])
    assert moved.sd.location == f"{tbl.sd.location}/ds=b/hr=2"
    assert (path_of(moved.sd.location) / "f").read_bytes() == b"data"
    assert not path_of(old.sd.location).exists()
    with pytest.raises(A.InvalidOperationException):
        hclient.rename_partition(db, t, ["nope", "1"], new)
    add(client, tbl, ["c", "3"])
    clash = client.get_partition(db, t, ["c", "3"])
    clash.values = ["b", "2"]
    with pytest.raises(hms.InvalidOperationException):
        client.rename_partition(db, t, ["c", "3"], clash)
    assert names(client, tbl) == ["ds=b/hr=2", "ds=c/hr=3"]


def test_drop_partition_variants(client, hclient, tbl):
    add(client, tbl, ["a", "1"], ["a", "2"], ["b", "1"], ["b", "2"])
    db, t = tbl.dbName, tbl.tableName
    locations = {p.values[0] + p.values[1]: p.sd.location for p in client.get_partitions(db, t, -1)}
    for location in locations.values():
        write_file(location)
    assert hclient.drop_partition_with_environment_context(db, t, ["a", "1"], True, A.EnvironmentContext(properties={}))
    assert not path_of(locations["a1"]).exists()
    assert client.drop_partition_by_name(db, t, "ds=a/hr=2", False)
    assert path_of(locations["a2"]).exists()
    with pytest.raises(A.NoSuchObjectException):
        hclient.drop_partition(db, t, ["a", "1"], True)
    with pytest.raises(hms.NoSuchObjectException):
        client.drop_partition_by_name(db, t, "ds=a/hr=1", True)
    assert names(client, tbl) == ["ds=b/hr=1", "ds=b/hr=2"]


def test_drop_partitions_req(client, hclient, tbl):
    add(client, tbl, ["a", "1"], ["b", "1"], ["c", "1"])
    db, t = tbl.dbName, tbl.tableName
    request = A.DropPartitionsRequest(dbName=db, tblName=t, parts=A.RequestPartsSpec(names=["ds=a/hr=1", "ds=x/hr=1"]),
                                      deleteData=True, ifExists=False, needResult=True)
    with pytest.raises(A.NoSuchObjectException):
        hclient.drop_partitions_req(request)
    assert names(client, tbl) == ["ds=a/hr=1", "ds=b/hr=1", "ds=c/hr=1"]
    request.ifExists = True
    result = hclient.drop_partitions_req(request)
    assert [p.values for p in result.partitions] == [["a", "1"]]
    result = client.drop_partitions_req(hms.DropPartitionsRequest(
        dbName=db, tblName=t, parts=hms.RequestPartsSpec(names=["ds=b/hr=1", "ds=c/hr=1"]), deleteData=True))
    assert sorted(p.values for p in result.partitions) == [["b", "1"], ["c", "1"]]
    assert names(client, tbl) == []
    assert not (path_of(tbl.sd.location) / "ds=b").exists() or not any((path_of(tbl.sd.location) / "ds=b").iterdir())


def test_external_table_partitions_keep_data_on_drop(client, db, tmp_path):
    location = to_uri(tmp_path / "ext")
    client.create_table(table(hms, db, "ext", part_keys=[("ds", "string")], location=location,
                              table_type="EXTERNAL_TABLE"))
    ext = client.get_table(db, "ext")
    client.add_partition(partition(hms, ext, ["a"]))
    data = write_file(client.get_partition(db, "ext", ["a"]).sd.location)
    client.drop_partition(db, "ext", ["a"], True)
    assert data.exists()


def test_append_partition(client, hclient, tbl):
    db, t = tbl.dbName, tbl.tableName
    part = hclient.append_partition(db, t, ["a", "1"])
    assert part.values == ["a", "1"] and path_of(part.sd.location).is_dir()
    part = client.append_partition_by_name(db, t, "ds=b/hr=2")
    assert part.values == ["b", "2"]
    assert part.sd.location == f"{tbl.sd.location}/ds=b/hr=2"
    with pytest.raises(A.AlreadyExistsException):
        hclient.append_partition_by_name(db, t, "ds=b/hr=2")
    with pytest.raises(hms.MetaException):
        client.append_partition(db, t, ["only-one"])
    assert names(client, tbl) == ["ds=a/hr=1", "ds=b/hr=2"]


def test_partition_quick_stats_over_existing_files(client, tbl):
    location = f"{tbl.sd.location}/ds=pre/hr=0"
    write_file(location, "f1", b"123")
    add(client, tbl, ["pre", "0"])
    params = client.get_partition(tbl.dbName, tbl.tableName, ["pre", "0"]).parameters
    assert (params["numFiles"], params["totalSize"]) == ("1", "3")


def test_partition_calls_on_missing_table(client, hclient, db):
    with pytest.raises(hms.NoSuchObjectException):
        client.get_partitions(db, "missing", -1)
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_partitions_ps_with_auth(db, "missing", [], -1, "alice", [])
    # Hive 2.3 declares MetaException in field 1 where Hive 4 has NoSuchObjectException: both clients
    # must get a declared exception (real 2.3 answers a TApplicationException "internal error" here)
    with pytest.raises(A.MetaException):
        hclient.get_partition_names(db, "missing", -1)
    with pytest.raises(hms.NoSuchObjectException):
        client.get_partition_names(db, "missing", -1)


def test_alter_partition_recomputes_quick_stats(client, tbl):
    # Hive's requireCalStats, checked against HMS 2.3.10: fast stats are recomputed from the directory unless
    # DO_NOT_UPDATE_STATS, even when the client sends its own numbers and the old partition had none
    add(client, tbl, ["a", "1"])
    db, t = tbl.dbName, tbl.tableName

    def fast_stats():
        params = client.get_partition(db, t, ["a", "1"]).parameters
        return params.get("numFiles"), params.get("totalSize")

    part = client.get_partition(db, t, ["a", "1"])
    assert fast_stats() == (None, None)
    write_file(part.sd.location, "f1", b"12345")
    part.parameters.update(numFiles="7", totalSize="70")
    client.alter_partition(db, t, part)
    assert fast_stats() == ("1", "5")
    part = client.get_partition(db, t, ["a", "1"])
    part.parameters.update(numFiles="8", totalSize="80")
    client.alter_partitions(db, t, [part])
    assert fast_stats() == ("1", "5")
    part = client.get_partition(db, t, ["a", "1"])
    del part.parameters["numFiles"]
    client.alter_partition(db, t, part)
    assert fast_stats() == ("1", "5")
    part.parameters.update(numFiles="9", totalSize="90")
    client.alter_partition_with_environment_context(
        db, t, part, hms.EnvironmentContext(properties={"DO_NOT_UPDATE_STATS": "true"}))
    assert fast_stats() == ("9", "90")
