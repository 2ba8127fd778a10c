"""Locations as Hive writes them, and the directory work the server does."""
from pathlib import Path

import pytest

from hmsproxy.warehouse import Warehouse, local_path, normalise_location


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
    assert Warehouse.quick_stats(f"file:{tmp_path}") == {"numFiles": "2", "totalSize": "15"}
    assert Warehouse.quick_stats(f"file:{tmp_path}/missing") is None


def test_move_refuses_to_overwrite(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("data")
    (tmp_path / "b").mkdir()
    with pytest.raises(FileExistsError):
        Warehouse.move(f"file:{tmp_path}/a", f"file:{tmp_path}/b")
    assert Warehouse.move(f"file:{tmp_path}/a", f"file:{tmp_path}/c/d")
    assert (tmp_path / "c" / "d" / "f").read_text() == "data"
