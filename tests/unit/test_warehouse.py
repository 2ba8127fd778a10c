"""Locations as Hive writes them, and the directory work the server does."""
from pathlib import Path

import pytest

from hmsproxy.storage.locations import local_path, normalise_location
from hmsproxy.storage.warehouse import Warehouse


@pytest.mark.parametrize("location, path", [
    ("file:/a/b", "/a/b"), ("file:///a/b", "/a/b"), ("/a/b", "/a/b"), ("file:/a/ds=x%2Fy", "/a/ds=x%2Fy"),
])
def test_local_paths(location, path):
    assert local_path(location) == Path(path)


@pytest.mark.parametrize("location", ["hdfs://nn:8020/a", "s3a://bucket/a", "file://otherhost/a", None, ""])
def test_non_local_locations_are_left_alone(location):
    assert local_path(location) is None


def test_normalise_location():
    assert normalise_location("/x/y/") == "file:/x/y"
    assert normalise_location("file:///x//y") == "file:/x/y"
    assert normalise_location("s3a://b/x/") == "s3a://b/x"


def test_default_locations(tmp_path):
    warehouse = Warehouse(tmp_path)
    assert warehouse.default_database_location("default") == f"file:{tmp_path}"
    assert warehouse.default_database_location("sales") == f"file:{tmp_path}/sales.db"
    assert Warehouse.default_table_location("file:/w/sales.db", "t") == "file:/w/sales.db/t"


def test_quick_stats_skip_hidden_files(tmp_path):
    (tmp_path / "part-0").write_bytes(b"x" * 10)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "part-1").write_bytes(b"y" * 5)
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / ".part-0.crc").write_bytes(b"zz")
    assert Warehouse(tmp_path / "wh").quick_stats(f"file:{tmp_path}") == {"numFiles": "2", "totalSize": "15"}


def test_a_missing_directory_holds_no_files_unless_it_is_about_to_be_made(tmp_path):
    """An alter lists what is there (HMS records 0 and 0); an add or create makes the directory: a new one."""
    warehouse = Warehouse(tmp_path / "wh")
    assert warehouse.quick_stats(f"file:{tmp_path}/missing") == {"numFiles": "0", "totalSize": "0"}
    assert warehouse.quick_stats(f"file:{tmp_path}/missing", missing_is_new=True) is None
    (tmp_path / "a-file").write_bytes(b"x")
    assert warehouse.quick_stats(f"file:{tmp_path}/a-file") is None


def test_move_refuses_to_overwrite(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("data")
    (tmp_path / "b").mkdir()
    warehouse = Warehouse(tmp_path / "warehouse")
    with pytest.raises(FileExistsError):
        warehouse.move(f"file:{tmp_path}/a", f"file:{tmp_path}/b")
    assert warehouse.move(f"file:{tmp_path}/a", f"file:{tmp_path}/c/d")
    assert (tmp_path / "c" / "d" / "f").read_text() == "data"


@pytest.mark.parametrize("location", [".", "..", "dir", "file:.", "file:rel", "file:..", "hdfs:rel"])
def test_relative_locations_are_refused(location):
    with pytest.raises(ValueError, match="not absolute"):
        normalise_location(location)


def test_dangling_symlinks_are_skipped_by_quick_stats(tmp_path):
    (tmp_path / "part-0").write_bytes(b"x" * 10)
    (tmp_path / "gone").symlink_to(tmp_path / "never-there")
    assert Warehouse(tmp_path / "wh").quick_stats(f"file:{tmp_path}") == {"numFiles": "1", "totalSize": "10"}


def test_nothing_that_holds_the_warehouse_or_a_kept_path_is_deleted_or_moved(tmp_path):
    server_dir = tmp_path / "server"
    (server_dir / "warehouse" / "t").mkdir(parents=True)
    database_file = server_dir / "metastore.db"
    database_file.write_text("db")
    warehouse = Warehouse(server_dir / "warehouse", keep=(server_dir, database_file))
    # never "/": were the guard broken, this test must not harm the machine
    for location in (f"file:{tmp_path}", f"file:{server_dir}", f"file:{server_dir}/warehouse",
                     f"file:{server_dir}/metastore.db"):
        warehouse.remove(location)
        with pytest.raises(PermissionError):
            warehouse.move(location, f"file:{tmp_path}/elsewhere")
    assert database_file.read_text() == "db" and (server_dir / "warehouse" / "t").is_dir()
    warehouse.remove(f"file:{server_dir}/warehouse/t")   # an object's own directory is deleted
    assert not (server_dir / "warehouse" / "t").exists()


def test_quick_stats_of_a_tree_larger_than_the_bound_are_skipped(tmp_path):
    """A table placed over a huge tree (`file:/`) must not hold its call while every file is listed."""
    data = tmp_path / "data"
    for d in range(3):
        (data / f"d{d}").mkdir(parents=True)
        for f in range(4):
            (data / f"d{d}" / f"f{f}").write_text("x")
    assert Warehouse(tmp_path / "wh", quick_stats_max_files=15).quick_stats(f"file:{data}") == {
        "numFiles": "12", "totalSize": "12"}
    assert Warehouse(tmp_path / "wh", quick_stats_max_files=14).quick_stats(f"file:{data}") is None


def test_a_planned_directory_is_made_once_and_only_what_the_call_made_is_undone(tmp_path):
    """Planned directories: one under an existing table directory, one whose parents are missing, one that exists
    already, one that another writer makes between the plan and the making (neither is this call's to remove), one
    not on the local file system. A failure undoes the call's own."""
    warehouse = Warehouse(tmp_path / "wh")
    table = tmp_path / "wh" / "t"
    table.mkdir(parents=True)
    (table / "kept").mkdir(parents=True)
    (table / "kept" / "data").write_text("x")
    with pytest.raises(RuntimeError), warehouse.changes() as work:
        for location in ("ds=1", "a=1/b=2", "raced", "kept"):
            work.plan_mkdirs(f"file:{table}/{location}")
        work.plan_mkdirs("s3a://bucket/t/ds=1")
        (table / "raced").mkdir()   # another writer, after the plan
        work.start_planned()
        work.wait()
        assert {p.name for p in table.iterdir()} == {"ds=1", "a=1", "raced", "kept"}
        assert (table / "a=1" / "b=2").is_dir()
        raise RuntimeError("the store refused the call")
    assert {p.name for p in table.iterdir()} == {"raced", "kept"}
    assert (table / "kept" / "data").read_text() == "x"
