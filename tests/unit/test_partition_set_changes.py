"""A cached table's partition set changed in place by a write (a few partitions added, replaced or dropped, its
size adjusted rather than counted again) holds exactly what a set built from scratch with the same partitions
holds: the same rows in name order, the same encoded bytes and storage-descriptor tails, the same size, and
the same partition ids (a replaced partition keeps its id; an added one takes the id its write gave it, and
one added without an id leaves the set's ids unknown)."""
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
OPS = st.lists(st.one_of(st.tuples(st.just("put"), st.lists(PARTS, max_size=5), st.booleans()),
                         st.tuples(st.just("drop"), st.lists(PARTS.map(lambda p: make_partition_name(KEYS, p.values)),
                                                             max_size=5), st.just(True))), max_size=8)


def _built(parts: dict[str, hms.Partition], ids: dict[str, int] | None = None) -> PartitionSet:
    builder = PartitionSetBuilder(PartitionSet(keys=KEYS))
    builder.add(list(parts.values()), None if ids is None else [ids[name] for name in parts])
    return builder.build()


def _rows(partitions: PartitionSet) -> list[tuple]:
    return [(name, own, partitions.tails[ref], values) for name, own, ref, values in
            zip(partitions.names, partitions.own.items(), partitions.tail_refs, partitions.values)]


@settings(max_examples=300, deadline=None)
@given(st.lists(PARTS, max_size=12), OPS)
def test_a_set_changed_in_place_equals_one_built_from_scratch(initial, ops):
    expected = {make_partition_name(KEYS, p.values): p for p in initial}
    expected_ids: dict[str, int] | None = {name: 1000 + i for i, name in enumerate(expected)}
    current = _built(expected, expected_ids)
    current.size_bytes()   # counted once: every change from here adjusts the count
    for kind, items, with_ids in ops:
        if kind == "put":
            names = [make_partition_name(KEYS, p.values) for p in items]
            new_ids = {name: 5000 + i for i, name in enumerate(names)} if with_ids else None
            current = current.with_partitions(items, new_ids)
            if expected_ids is not None:
                added = [name for name in dict.fromkeys(names) if name not in expected]
                expected_ids = None if added and new_ids is None else \
                    {**expected_ids, **{name: new_ids[name] for name in added if new_ids is not None}}
            expected.update((make_partition_name(KEYS, p.values), p) for p in items)
        else:
            current = current.without(items)
            for name in items:
                expected.pop(name, None)
        fresh = _built(expected)
        assert _rows(current) == _rows(fresh)
        if expected_ids is None:
            assert current.ids is None
        else:
            assert current.ids is not None and list(current.ids) == [expected_ids[name] for name in current.names]
        unused_tails = [t for t in current.tails if t not in fresh.tails]   # they stay until a rebuild
        assert _sizes(current) == (_sizes(fresh)[0] + sum(map(sys.getsizeof, unused_tails)), _sizes(fresh)[1])
        assert list(current.all()) == list(fresh.all())
        listing = current.all()
        assert listing.byte_size() == sum(map(len, listing.pieces)) == fresh.all().byte_size()
        assert current.tolerant_tails >= fresh.tolerant_tails


def _sizes(partitions: PartitionSet) -> tuple[int, int]:
    """A set's counted size but its own bytes, and its own bytes expanded: a written set rests expanded and a built
    one packed, so only these two compare between them."""
    return partitions.size_bytes() - partitions.own.nbytes(), partitions.own.expanded_nbytes()


def test_the_size_a_change_carries_is_the_size_counted_from_scratch():
    parts = {make_partition_name(KEYS, [f"2024-01-{d:02d}", str(h)]): _partition(f"2024-01-{d:02d}", str(h), 0)
             for d in range(1, 29) for h in range(24)}
    base = _built(parts)
    changed = base.with_partitions([_partition("2024-01-05", "3", 1), _partition("2024-02-01", "0", 0)])
    changed = changed.without(["ds=2024-01-07/hr=5", "ds=2024-01-08/hr=6"])
    recounted = PartitionSet(KEYS, changed.names, changed.own, changed.tail_refs, changed.flat_values, changed.tails,
                             changed.tolerant_tails)
    assert changed.known_size is not None and changed.size_bytes() == recounted.size_bytes()


def test_a_large_change_keeps_the_ids():
    first = _partition("2024-01-01", "0", 0)
    base = _built({make_partition_name(KEYS, first.values): first}, {make_partition_name(KEYS, first.values): 7})
    parts = [_partition("2024-01-01", str(h), h % 2) for h in range(SMALL_CHANGE + 1)]
    new_ids = {make_partition_name(KEYS, p.values): 100 + i for i, p in enumerate(parts)}
    changed = base.with_partitions(parts, new_ids)
    assert _rows(changed) == _rows(_built({make_partition_name(KEYS, p.values): p for p in parts}))
    assert changed.ids is not None and list(changed.ids) == [7] + [new_ids[n] for n in changed.names[1:]]


def test_a_tail_no_partition_uses_any_more_is_let_go():
    """Partitions altered one at a time to new storage descriptors: the set never holds more tails than its
    partitions use, however many writes came before (memory that does not grow with writes)."""
    parts = {make_partition_name(KEYS, ["2024-01-01", str(h)]): _partition("2024-01-01", str(h), 0) for h in range(6)}
    current = _built(parts)
    current.size_bytes()
    for variant in (1, 2, 0, 1, 2):
        for h in range(6):
            current = current.with_partitions([_partition("2024-01-01", str(h), variant)])
            parts[make_partition_name(KEYS, ["2024-01-01", str(h)])] = _partition("2024-01-01", str(h), variant)
            fresh = _built(parts)
            assert sorted(current.tails) == sorted(fresh.tails)
            assert _sizes(current) == _sizes(fresh)


def test_a_partition_reads_back_whole_from_its_own_bytes_and_the_shared_tail():
    """The tail carries what the table's partitions share (names included): each partition decodes to itself,
    its write id and times too."""
    parts = [_partition("2024-01-01", str(h), h % 3) for h in range(4)]
    for h, part in enumerate(parts):
        part.catName, part.writeId, part.createTime, part.lastAccessTime = "hive", 7 + h, 100 + h, h
    current = _built({make_partition_name(KEYS, p.values): p for p in parts})
    assert list(current.all()) == parts
    assert len(current.tails) == 3 and all(b"\x00\x00\x00\x01d" in tail for tail in current.tails)   # dbName "d"
