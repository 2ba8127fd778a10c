"""Java's String.hashCode and HashMap iteration order, as the metastore's SerDe parameters are sent."""
from __future__ import annotations

from hmsproxy.idl.java_map_order import in_java_hashmap_order, string_hash


def test_string_hash_is_javas():
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("Aa") == string_hash("BB") == 2112  # Java's classic collision
    assert string_hash("\U0001F600") == (31 * 0xD83D + 0xDE00)  # UTF-16 code units (jshell: 1772899)
    assert string_hash("serialization.format") == 906585013  # jshell: "serialization.format".hashCode()


def test_keys_come_in_bucket_order_and_in_key_order_within_a_bucket():
    params = {key: "v" for key in ("field.delim", "serialization.format", "line.delim", "BB", "Aa", "escape.delim")}
    ordered = list(in_java_hashmap_order(params))
    buckets = [(string_hash(k) ^ (string_hash(k) >> 16)) & 15 for k in ordered]
    assert buckets == sorted(buckets)
    assert ordered.index("Aa") + 1 == ordered.index("BB")  # one bucket: key order
    assert in_java_hashmap_order(params) == params  # same pairs


def test_capacity_grows_past_twelve_keys_as_javas_does():
    params = {f"k{i}": "v" for i in range(13)}
    ordered = list(in_java_hashmap_order(params))
    buckets = [(string_hash(k) ^ (string_hash(k) >> 16)) & 31 for k in ordered]
    assert buckets == sorted(buckets)
