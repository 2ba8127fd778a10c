"""A cached table's partition set changed in place by a write (a few partitions added, replaced or dropped, its
size adjusted rather than counted again) holds exactly what a set built from scratch with the same partitions
holds: the same rows in name order, the same encoded bytes and storage-descriptor tails, and the same size."""
from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from hmsproxy.idl import hms
from hmsproxy.names import make_partition_name
from hmsproxy.store.cache.partitions import SMALL_CHANGE, PartitionSet, PartitionSetBuilder

KEYS = ("ds", "hr")


def _partition(ds: str, hr: str, variant: int) -> hms.Partition:
    """`variant` picks one of three storage descriptors (three tails), one with a list-keyed skew map."""
    skew = hms.SkewedInfo(skewedColNames=["c"], skewedColValues=[["x"]],
                          skewedColValueLocationMaps={("x",): f"file:/w/{ds}/{hr}/c=x"}) if variant == 2 else None
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="c", type="string" if variant != 1 else "int")],
                               location=f"file:/w/{ds}/{hr}", inputFormat="i", outputFormat="o",
                               serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                               skewedInfo=skew)
    return hms.Partition(values=[ds, hr], dbName="d", tableName="t", sd=sd, parameters={"v": str(variant)})


PARTS = st.builds(_partition, st.sampled_from(["2024-01-01", "2024-01-02", "2024-01-03", "b"]),
                  st.sampled_from([str(h) for h in range(6)]), st.integers(0, 2))
OPS = st.lists(st.one_of(st.tuples(st.just("put"), st.lists(PARTS, max_size=5)),
                         st.tuples(st.just("drop"), st.lists(PARTS.map(lambda p: make_partition_name(KEYS, p.values)),
                                                             max_size=5))), max_size=8)


def _built(parts: dict[str, hms.Partition]) -> PartitionSet:
    builder = PartitionSetBuilder(PartitionSet(keys=KEYS))
    builder.add(list(parts.values()))
    return builder.build()


def _rows(partitions: PartitionSet) -> list[tuple]:
    return [(name, own, partitions.tails[ref], values) for name, own, ref, values in
            zip(partitions.names, partitions.own, partitions.tail_refs, partitions.values)]


@settings(max_examples=300, deadline=None)
@given(st.lists(PARTS, max_size=12), OPS)
def test_a_set_changed_in_place_equals_one_built_from_scratch(initial, ops):
    expected = {make_partition_name(KEYS, p.values): p for p in initial}
    current = _built(expected)
    current.size_bytes()   # counted once: every change from here adjusts the count
    for kind, items in ops:
        if kind == "put":
            current = current.with_partitions(items)
            expected.update((make_partition_name(KEYS, p.values), p) for p in items)
        else:
            current = current.without(items)
            for name in items:
                expected.pop(name, None)
        fresh = _built(expected)
        assert _rows(current) == _rows(fresh)
        unused_tails = [t for t in current.tails if t not in fresh.tails]   # they stay until a rebuild
        assert current.size_bytes() == fresh.size_bytes() + sum(map(sys.getsizeof, unused_tails))
        assert list(current.all()) == list(fresh.all())
        listing = current.all()
        assert listing.byte_size() == sum(map(len, listing.pieces)) == fresh.all().byte_size()
        assert current.tolerant_tails >= fresh.tolerant_tails


def test_the_size_a_change_carries_is_the_size_counted_from_scratch():
    parts = {make_partition_name(KEYS, [f"2024-01-{d:02d}", str(h)]): _partition(f"2024-01-{d:02d}", str(h), 0)
             for d in range(1, 29) for h in range(24)}
    base = _built(parts)
    changed = base.with_partitions([_partition("2024-01-05", "3", 1), _partition("2024-02-01", "0", 0)])
    changed = changed.without(["ds=2024-01-07/hr=5", "ds=2024-01-08/hr=6"])
    recounted = PartitionSet(KEYS, changed.names, changed.own, changed.tail_refs, changed.values, changed.tails,
                             changed.tolerant_tails)
    assert changed.known_size is not None and changed.size_bytes() == recounted.size_bytes()


def test_a_large_change_rebuilds_the_set():
    parts = [_partition("2024-01-01", str(h), h % 2) for h in range(SMALL_CHANGE + 1)]
    changed = PartitionSet(KEYS).with_partitions(parts)
    assert _rows(changed) == _rows(_built({make_partition_name(KEYS, p.values): p for p in parts}))
