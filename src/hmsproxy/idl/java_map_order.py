"""The order in which the Java metastore sends a SerDe's parameters: clients show it.

Spark's DESCRIBE lists "Storage Properties" in the order of the map its Hive client received, and the Java
client keeps the wire order where keys share a bucket of its HashMap. The Java metastore sends the map it
loaded: a java.util.HashMap filled in key order (the parameter table's primary key), iterated bucket by
bucket. Checked against the reference HMS 2.3.10 (tests/api/test_hive_answers.py): same client-side order
for every map of 2 to 5 keys tried. Bins that Java turns into trees (8+ keys in one bucket) are not modelled.
"""
from __future__ import annotations

import functools

INITIAL_CAPACITY, LOAD_FACTOR = 16, 0.75


def string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as an unsigned 32-bit value."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def in_java_hashmap_order(params: dict[str, str]) -> dict[str, str]:
    """`params` reordered as a Java HashMap filled in key order iterates them."""
    return {key: params[key] for key in _filled_in_key_order(tuple(params))}


@functools.lru_cache(maxsize=4096)
def _filled_in_key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The iteration order of a HashMap filled with `keys` in sorted order, memoized: the partitions of a table
    mostly carry the same keys (serde parameters), and hashing them in Python costs more than the rest."""
    capacity = INITIAL_CAPACITY
    while len(keys) > capacity * LOAD_FACTOR:
        capacity *= 2
    return tuple(java_hashmap_order(dict.fromkeys(sorted(keys), ""), capacity))


def java_hashmap_order(params: dict[str, str], capacity: int) -> dict[str, str]:
    """`params` reordered as a Java HashMap of `capacity` buckets, filled in `params`' order, iterates them:
    bucket by bucket, and in filling order within a bucket (a resize keeps that order)."""

    def bucket(key: str) -> int:
        h = string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return {key: params[key] for key in sorted(params, key=bucket)}
