"""What a location names (storage/locations.py): a local directory, an object-store prefix, or a place left alone;
and how object-store locations are normalised before anything is deleted or moved under them."""
from __future__ import annotations

import pytest

from hmsproxy.storage.locations import ObjectPlace, normalise_location, object_place


@pytest.mark.parametrize(("location", "expected"), [
    ("s3a://lake/warehouse/db.db/t", ObjectPlace("s3a", "lake", "warehouse/db.db/t")),
    ("S3://lake/a//b/./c/", ObjectPlace("s3", "lake", "a/b/c")),
    ("s3n://lake", ObjectPlace("s3n", "lake", "")),
    ("s3a://lake/", ObjectPlace("s3a", "lake", "")),
    ("gs://bucket/wh/x=1", ObjectPlace("gs", "bucket", "wh/x=1")),
    ("abfss://data@acct.dfs.core.windows.net/wh", ObjectPlace("abfss", "data@acct.dfs.core.windows.net", "wh")),
    ("s3a://lake/a/../b", ObjectPlace("s3a", "lake", "b")),
])
def test_object_store_locations_are_parsed_into_bucket_and_key(location, expected):
    assert object_place(location) == expected


@pytest.mark.parametrize("location", ["hdfs://nn:8020/wh", "file:/data/wh", "/data/wh", "s3a:///nobucket", None, ""])
def test_other_locations_name_no_object_store_place(location):
    assert object_place(location) is None


@pytest.mark.parametrize("location", ["s3a://lake/../other", "s3a://lake/a/../../b"])
def test_a_key_climbing_above_its_bucket_is_refused(location):
    with pytest.raises(ValueError, match="climbs above its bucket"):
        object_place(location)
    with pytest.raises(ValueError, match="climbs above its bucket"):
        normalise_location(location)


def test_object_store_locations_are_stored_normalised_with_their_scheme_as_written():
    assert normalise_location("s3a://lake/wh//db.db/t/") == "s3a://lake/wh/db.db/t"
    assert normalise_location("s3://lake/wh/./x/../t") == "s3://lake/wh/t"
    assert normalise_location("s3a://lake/") == "s3a://lake"
    assert normalise_location("hdfs://nn:8020/wh/t/") == "hdfs://nn:8020/wh/t"   # left alone, as before


def test_a_prefix_never_takes_its_neighbour_and_holds_only_its_own_store():
    table = ObjectPlace("s3a", "lake", "data/t1")
    assert table.prefix == "data/t1/"
    assert table.holds(ObjectPlace("s3", "lake", "data/t1/part=1"))      # s3 and s3a: one store
    assert not table.holds(ObjectPlace("s3a", "lake", "data/t10"))
    assert not table.holds(ObjectPlace("s3a", "other", "data/t1/x"))
    assert not table.holds(ObjectPlace("gs", "lake", "data/t1/x"))
    assert ObjectPlace("s3a", "lake", "").holds(table)
