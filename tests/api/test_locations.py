"""Locations a client may give, and what the server may delete or move (issue 11): relative locations are
refused with the call's declared exception; no drop, truncate or rename takes with it the server's working
directory, its parent, its database file or the warehouse root, whatever location an object claims; a
managed table at a location the user chose stays there when renamed; quick stats skip what they cannot
stat. Through a real socket, against a server process running in its own directory."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hmsproxy.idl import hms
from support.builders import connect_thrift, partition, table
from support.hmsproxy_server import start_hmsproxy_process
from support.running import RunningServer

RELATIVE = [".", "..", "dir", "file:.", "file:rel", "file:..", "hdfs:rel"]


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[RunningServer, list[Path]]]:
    """A server whose working directory is tmp_path/server, its SQLite file in tmp_path/server/db; canary
    files in the working directory, its parent, beside the database file and in the warehouse root."""
    workdir = tmp_path / "server"
    (workdir / "db").mkdir(parents=True)
    running = start_hmsproxy_process(workdir, f"sqlite:///{workdir / 'db' / 'metastore.db'}")
    canaries = [workdir / "canary", tmp_path / "canary-parent", workdir / "db" / "canary-db",
                workdir / "db" / "metastore.db"]
    for canary in canaries[:3] + [running.warehouse / "canary-warehouse"]:
        canary.write_text("alive")
    try:
        yield running, canaries + [running.warehouse / "canary-warehouse"]
    finally:
        running.stop()


def _survive(canaries: list[Path]) -> None:
    missing = [str(c) for c in canaries if not c.exists()]
    assert not missing, f"deleted: {missing}"


def test_relative_locations_are_refused_everywhere(server):
    running, canaries = server
    client = connect_thrift(running)
    client.create_database(hms.Database(name="d", parameters={}))
    client.create_table(table(hms, "d", "p", part_keys=[("ds", "string")]))
    client.add_partition(partition(hms, client.get_table("d", "p"), ["a"]))
    for location in RELATIVE:
        with pytest.raises(hms.InvalidObjectException, match="not absolute"):
            client.create_database(hms.Database(name="rel", locationUri=location, parameters={}))
        with pytest.raises(hms.InvalidObjectException, match="not absolute"):
            client.create_table(table(hms, "d", "rel", location=location))
        with pytest.raises(hms.InvalidObjectException, match="not absolute"):
            client.add_partition(partition(hms, client.get_table("d", "p"), ["rel"], location=location))
        altered = client.get_table("d", "p")
        altered.sd.location = location
        with pytest.raises(hms.InvalidOperationException, match="not absolute"):
            client.alter_table("d", "p", altered)
        part = client.get_partition("d", "p", ["a"])
        part.sd.location = location
        with pytest.raises(hms.InvalidOperationException, match="not absolute"):
            client.alter_partition("d", "p", part)
    assert client.get_all_databases() == ["d", "default"]
    assert client.get_all_tables("d") == ["p"] and client.get_partition_names("d", "p", -1) == ["ds=a"]
    assert not (running.workdir / "dir").exists() and not (running.workdir / "rel").exists()
    client.close()
    _survive(canaries)


def test_drops_and_truncates_never_take_what_the_server_runs_from(server):
    running, canaries = server
    workdir = running.workdir
    client = connect_thrift(running)
    (workdir / "sub").mkdir()
    # never "/" or anything outside tmp_path: were the guard broken, this test must not harm the machine
    dangerous = {"cwd": workdir, "parent": workdir.parent, "db": workdir / "db", "warehouse": running.warehouse,
                 "canary": workdir / "canary", "beside_db": workdir / "db" / "canary-db",
                 "db_file": workdir / "db" / "metastore.db", "in_cwd": workdir / "sub"}
    client.create_database(hms.Database(name="d", parameters={}))
    for name, path in dangerous.items():
        client.create_table(table(hms, "d", f"t_{name}", location=f"file:{path}"))
        client.truncate_table("d", f"t_{name}", None)
        client.drop_table("d", f"t_{name}", True)
        client.create_table(table(hms, "d", f"p_{name}", part_keys=[("ds", "string")]))
        client.add_partition(partition(hms, client.get_table("d", f"p_{name}"), ["x"], location=f"file:{path}"))
        client.drop_partition("d", f"p_{name}", ["x"], True)
        client.drop_table("d", f"p_{name}", True)
        client.create_database(hms.Database(name=f"db_{name}", locationUri=str(path), parameters={}))
        if path.is_dir():
            client.create_table(table(hms, f"db_{name}", "inside"))
        else:
            with pytest.raises(hms.MetaException):  # its directory cannot be made under a file
                client.create_table(table(hms, f"db_{name}", "inside"))
        client.drop_database(f"db_{name}", True, True)
        _survive(canaries)
    assert client.get_all_databases() == ["d", "default"] and (workdir / "sub").is_dir()
    client.close()


def test_a_renamed_managed_table_stays_at_the_location_its_user_chose(server, tmp_path):
    running, canaries = server
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    (chosen / "part-0").write_text("rows")
    client = connect_thrift(running)
    client.create_database(hms.Database(name="d", parameters={}))
    client.create_table(table(hms, "d", "mine", location=f"file:{chosen}"))
    client.create_table(table(hms, "d", "default_place"))
    for old, new in (("mine", "mine2"), ("default_place", "moved")):
        renamed = client.get_table("d", old)
        renamed.tableName = new
        client.alter_table("d", old, renamed)
    assert client.get_table("d", "mine2").sd.location == f"file:{chosen}"
    assert (chosen / "part-0").read_text() == "rows"
    assert client.get_table("d", "moved").sd.location == f"file:{running.warehouse}/d.db/moved"   # Hive's rule
    assert (running.warehouse / "d.db" / "moved").is_dir()
    client.close()
    _survive(canaries)


def test_quick_stats_skip_a_dangling_symlink(server):
    running, _ = server
    client = connect_thrift(running)
    client.create_database(hms.Database(name="d", parameters={}))
    client.create_table(table(hms, "d", "t"))
    directory = running.warehouse / "d.db" / "t"
    (directory / "part-0").write_bytes(b"x" * 7)
    (directory / "part-1").symlink_to(directory / "deleted-meanwhile")
    altered = client.get_table("d", "t")
    altered.parameters["touched"] = "yes"
    client.alter_table("d", "t", altered)
    params = client.get_table("d", "t").parameters
    assert (params["touched"], params["numFiles"], params["totalSize"]) == ("yes", "1", "7")
    client.close()
