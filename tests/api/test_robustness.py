"""Robustness: malformed input on the socket, internal errors turned into declared exceptions,
concurrent clients, and atomic multi-row writes."""
from __future__ import annotations

import socket
import struct
from concurrent.futures import ThreadPoolExecutor

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms
from support.builders import connect_hive as hive_client
from support.builders import connect_thrift as thrift_client
from support.builders import database, partition, path_of, table, unique, write_file


def _raw_send(server, payload: bytes) -> bytes:
    """Sends bytes on a fresh connection, half-closes it and returns whatever the server answers."""
    with socket.create_connection((server.host, server.port), timeout=30) as sock:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _call_header(name: str) -> bytes:
    encoded = name.encode()
    return struct.pack("!iI", -2147418111, len(encoded)) + encoded + struct.pack("!i", 1)  # 0x80010001 = CALL


@pytest.mark.parametrize("payload", [
    b"\x00\x01garbage\xff\xfe" * 50,                                         # not Thrift at all
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                                      # the wrong protocol
    _call_header("get_database"),                                              # truncated: no arguments
    _call_header("get_database") + b"\x0b\x00\x01\x7f\xff\xff\xff",            # a string of 2 GB announced
    _call_header("get_table") + b"\x0b\x00\x01\x00\x00\x00\x03ab",             # truncated inside a field
    struct.pack("!i", 0x7FFFFFFF),                                             # absurd non-strict name length
    b"",
])
def test_malformed_input_does_not_take_the_server_down(backend_server, payload):
    _raw_send(backend_server, payload)
    c = thrift_client(backend_server)
    try:
        assert c.get_database("default").name == "default"
    finally:
        c.close()


def _stats(T, db: str, col: str, col_type: str, data: object) -> object:
    desc = T.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName="t")
    return T.ColumnStatistics(statsDesc=desc, statsObj=[T.ColumnStatisticsObj(colName=col, colType=col_type,
                                                                              statsData=data)])


def test_stats_that_do_not_fit_the_column_type_are_declared_errors(client, hclient, db):
    client.create_table(table(hms, db, "t"))
    strings_for_int = A.ColumnStatisticsData(stringStats=A.StringColumnStatsData(
        maxColLen=1, avgColLen=1.0, numNulls=0, numDVs=1))
    with pytest.raises(A.InvalidInputException):
        hclient.update_table_column_statistics(_stats(A, db, "id", "int", strings_for_int))
    with pytest.raises(hms.InvalidInputException):
        client.update_table_column_statistics(_stats(hms, db, "id", "int", hms.ColumnStatisticsData()))
    assert hclient.get_table(db, "t").tableName == "t"  # the same connection still works


def test_undeclared_internal_error_becomes_meta_exception(client, hclient, db):
    # numNulls is required by the IDL but nothing stops a client from leaving it out: the database's NOT NULL
    # constraint fails, an error no method declares; it must arrive as MetaException, connection intact
    client.create_table(table(hms, db, "t"))
    no_nulls = hms.ColumnStatisticsData(longStats=hms.LongColumnStatsData(lowValue=1, highValue=2, numDVs=1))
    with pytest.raises(hms.MetaException):
        client.update_table_column_statistics(_stats(hms, db, "id", "int", no_nulls))
    assert client.get_table(db, "t").tableName == "t"
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table_column_statistics(db, "t", "id")


def test_concurrent_clients(backend_server, client, db):
    client.create_table(table(hms, db, "shared", part_keys=[("ds", "string")]))

    def work(worker: int) -> int:
        c = thrift_client(backend_server) if worker % 2 else hive_client(backend_server)
        T = hms if worker % 2 else A
        try:
            tbl = c.get_table(db, "shared")
            done = 0
            for i in range(50):
                step = i % 5
                if step == 0:
                    assert c.get_database(db).name == db
                elif step == 1:
                    assert c.get_table(db, "shared").tableName == "shared"
                elif step == 2:
                    if worker % 2:
                        c.add_partition(partition(T, tbl, [f"w{worker}_{i}"]))
                    else:
                        c.append_partition(db, "shared", [f"w{worker}_{i}"])
                elif step == 3:
                    assert f"ds=w{worker}_{i - 1}" in c.get_partition_names(db, "shared", -1)
                else:
                    name = f"t_{worker}_{i}"
                    c.create_table(table(T, db, name))
                    c.drop_table(db, name, True)
                done += 1
            return done
        finally:
            c.close()

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(work, range(8))) == [50] * 8
    assert len(client.get_partition_names(db, "shared", -1)) == 8 * 10
    assert client.get_all_tables(db) == ["shared"]


def test_failing_add_partitions_leaves_nothing_behind(client, db):
    client.create_table(table(hms, db, "p", part_keys=[("ds", "string")]))
    tbl = client.get_table(db, "p")
    client.add_partition(partition(hms, tbl, ["existing"]))
    table_dir = path_of(tbl.sd.location)
    before = sorted(p.name for p in table_dir.iterdir())
    batch = [partition(hms, tbl, [f"new{i}"]) for i in range(20)] + [partition(hms, tbl, ["existing"])]
    with pytest.raises(hms.AlreadyExistsException):
        client.add_partitions(batch)
    assert client.get_partition_names(db, "p", -1) == ["ds=existing"]
    assert sorted(p.name for p in table_dir.iterdir()) == before
    # a failure inside the database transaction, after rows were written (a column without a name violates
    # COLUMNS_V2's NOT NULL), undoes the rows and the directories made for the batch
    broken = partition(hms, tbl, ["broken"])
    broken.sd.cols.append(hms.FieldSchema(name=None, type="int"))
    batch = [partition(hms, tbl, [f"ok{i}"]) for i in range(5)] + [broken]
    with pytest.raises(hms.MetaException):
        client.add_partitions(batch)
    assert client.get_partition_names(db, "p", -1) == ["ds=existing"]
    assert sorted(p.name for p in table_dir.iterdir()) == before


def test_a_rename_refused_after_its_data_moved_moves_the_data_back(client, backend_server):
    """A rename moves the table's directory first; a compare-and-set the new table cannot satisfy is refused
    after that, and the directory must be back where the table still points."""
    name = unique()
    client.create_database(database(hms, name))
    try:
        client.create_table(table(hms, name, "t"))
        location = client.get_table(name, "t").sd.location
        write_file(location)
        renamed = table(hms, name, "u")
        context = hms.EnvironmentContext(properties={"expected_parameter_key": "metadata_location",
                                                     "expected_parameter_value": "v1"})
        with pytest.raises(hms.MetaException, match="expected key metadata_location is not set"):
            client.alter_table_with_environment_context(name, "t", renamed, context)
        assert (path_of(location) / "data.txt").exists()
        assert client.get_table(name, "t").sd.location == location
        assert not path_of(location).with_name("u").exists()
    finally:
        client.drop_database(name, True, True)


def test_failing_create_database_removes_its_directory(client, backend_server):
    name = unique()
    client.create_database(database(hms, name))
    try:
        other_location = backend_server.warehouse / f"{name}_elsewhere"
        with pytest.raises(hms.AlreadyExistsException):
            client.create_database(database(hms, name, location="file:" + str(other_location)))
        assert not other_location.exists()
    finally:
        client.drop_database(name, True, True)


@pytest.mark.parametrize("refusal", ["one exists", "one cannot be made"])
def test_a_refused_add_partitions_leaves_none_of_its_directories(client, backend_server, refusal):
    """add_partitions makes its directories beside writing its rows, and waits for them before it commits: when
    the call is refused, by the database (a partition exists) or by the file system (a directory cannot be made,
    its parent being a file), no partition is added and none of the directories it made is left."""
    name = unique()
    client.create_database(database(hms, name))
    try:
        tbl = table(hms, name, "t", part_keys=[("k", "int")])
        client.create_table(tbl)
        root = backend_server.warehouse / f"{name}_parts"
        client.add_partition(partition(hms, tbl, ["0"], location=f"file:{root}/k=0"))
        blocker = root / "not_a_directory"
        blocker.write_bytes(b"")
        wanted = [str(i) for i in range(1, 60)]
        locations = [f"file:{root}/k={value}" for value in wanted]
        if refusal == "one exists":
            wanted[30], locations[30] = "0", f"file:{root}/k=0"
        else:
            locations[45] = f"file:{blocker}/k=46"
        with pytest.raises((hms.AlreadyExistsException, hms.MetaException)):
            client.add_partitions([partition(hms, tbl, [value], location=location)
                                   for value, location in zip(wanted, locations)])
        assert client.get_partition_names(name, "t", -1) == ["k=0"]
        assert sorted(path.name for path in root.iterdir()) == ["k=0", "not_a_directory"]
        client.add_partitions([partition(hms, tbl, [str(i)], location=f"file:{root}/k={i}") for i in range(1, 60)])
        assert len(client.get_partition_names(name, "t", -1)) == 60
        assert all((root / f"k={i}").is_dir() for i in range(60))
    finally:
        client.drop_database(name, True, True)
