"""A cached table's partition set changed in place by a write (a few partitions added, replaced or dropped, its
size adjusted rather than counted again) holds exactly what a set built from scratch with the same partitions
holds: the same rows in name order, the same encoded bytes and storage-descriptor tails, the same size, and
the same partition ids (a replaced partition keeps its id; an added one takes the id its write gave it, and
one added without an id leaves the set's ids unknown). The sets here hold their partitions in blocks of three, so
that every change meets several blocks, splits some and empties others; and a write to one partition shares every
block it does not change with the set it came from."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsproxy.hive.names import make_partition_name
from hmsproxy.idl import hms
from hmsproxy.store.cache.partitions import PartitionSet, PartitionSetBuilder
from support.partition_blocks import small_blocks

KEYS = ("ds", "hr")
SMALL_BLOCK = 3


@pytest.fixture(autouse=True, scope="module")
def _small_blocks() -> Iterator[None]:
    with small_blocks(SMALL_BLOCK):
        yield


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


def _rows(current: PartitionSet) -> list[tuple]:
    return [(name, own, tail, values) for name, (own, tail, values, _) in current.rows().items()]


def _tails(current: PartitionSet) -> list[bytes]:
    return sorted({tail for block in current.blocks for tail in block.tails})


def _check_blocks(current: PartitionSet) -> None:
    """Blocks in name order, none empty or past twice the block size, each holding only tails its rows use; and
    the size a change carried is the size counted again from its blocks."""
    names = [name for block in current.blocks for name in block.names]
    assert names == sorted(set(names)) and list(current.names) == names
    assert all(0 < len(block) <= 2 * SMALL_BLOCK for block in current.blocks)
    assert all(sorted(set(block.tail_refs)) == list(range(len(block.tails))) for block in current.blocks)
    assert [current.index_of(name) for name in names] == list(range(len(names)))
    recounted = PartitionSet(KEYS, current.blocks)
    assert current.size_bytes() == recounted.size_bytes()


@settings(max_examples=300, deadline=None)
@given(st.lists(PARTS, max_size=12), OPS)
def test_a_set_changed_in_place_equals_one_built_from_scratch(initial, ops):
    expected = {make_partition_name(KEYS, p.values): p for p in initial}
    expected_ids: dict[str, int | None] = {name: 1000 + i for i, name in enumerate(expected)}   # None: not known
    any_unknown = False   # whether a partition was ever added without its id
    current = _built(expected, expected_ids)   # type: ignore[arg-type]   # every id known
    current.size_bytes()   # counted once: every change from here adjusts the count
    for kind, items, with_ids in ops:
        if kind == "put":
            names = [make_partition_name(KEYS, p.values) for p in items]
            new_ids = {name: 5000 + i for i, name in enumerate(names)} if with_ids else None
            current = current.with_partitions(items, new_ids)
            for name in dict.fromkeys(names):
                if name not in expected_ids:
                    expected_ids[name] = None if new_ids is None else new_ids[name]
                    any_unknown = any_unknown or new_ids is None
            expected.update((make_partition_name(KEYS, p.values), p) for p in items)
        else:
            current = current.without(items)
            for name in items:
                expected.pop(name, None)
                expected_ids.pop(name, None)
        fresh = _built(expected)
        assert _rows(current) == _rows(fresh)
        # ids are either all known and right, or unknown: always unknown while a partition's is, never while none
        # was added without one
        if current.ids is not None:
            assert list(current.ids) == [expected_ids[name] for name in current.names]
        assert current.ids is not None or any_unknown
        _check_blocks(current)
        assert _tails(current) == _tails(fresh)
        assert list(current.all()) == list(fresh.all())
        listing = current.all()
        assert listing.byte_size() == sum(map(len, listing.pieces)) == fresh.all().byte_size()
        assert current.tolerant_tails == fresh.tolerant_tails


def test_the_size_a_change_carries_is_the_size_counted_from_scratch():
    parts = {make_partition_name(KEYS, [f"2024-01-{d:02d}", str(h)]): _partition(f"2024-01-{d:02d}", str(h), 0)
             for d in range(1, 29) for h in range(24)}
    base = _built(parts)
    changed = base.with_partitions([_partition("2024-01-05", "3", 1), _partition("2024-02-01", "0", 0)])
    changed = changed.without(["ds=2024-01-07/hr=5", "ds=2024-01-08/hr=6"])
    recounted = PartitionSet(KEYS, changed.blocks)
    assert changed.known_size is not None and changed.size_bytes() == recounted.size_bytes()


def test_a_large_change_keeps_the_ids():
    first = _partition("2024-01-01", "0", 0)
    base = _built({make_partition_name(KEYS, first.values): first}, {make_partition_name(KEYS, first.values): 7})
    parts = [_partition("2024-01-01", str(h), h % 2) for h in range(40)]
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
            assert _tails(current) == _tails(fresh) and current.tolerant_tails == fresh.tolerant_tails
            _check_blocks(current)


def test_a_partition_reads_back_whole_from_its_own_bytes_and_the_shared_tail():
    """The tail carries what the table's partitions share (names included): each partition decodes to itself,
    its write id and times too."""
    parts = [_partition("2024-01-01", str(h), h % 3) for h in range(4)]
    for h, part in enumerate(parts):
        part.catName, part.writeId, part.createTime, part.lastAccessTime = "hive", 7 + h, 100 + h, h
    current = _built({make_partition_name(KEYS, p.values): p for p in parts})
    assert list(current.all()) == parts
    assert len(_tails(current)) == 3 and all(b"\x00\x00\x00\x01d" in tail for tail in _tails(current))   # dbName "d"


def _many(count: int) -> dict[str, hms.Partition]:
    parts = [_partition(f"2024-01-{1 + i // 6:02d}", str(i % 6), 0) for i in range(count)]
    return {make_partition_name(KEYS, p.values): p for p in parts}


def test_a_write_to_one_partition_builds_one_block_and_shares_the_others():
    """Altering, adding or dropping one partition of a set of many blocks builds new blocks for the one it touches
    (at most three, where that block splits) and keeps every other block of the set it came from: the write's
    cache update does not grow with the table."""
    base = _built(_many(60))
    assert len(base.blocks) == 20
    middle = base.name_at(31)
    writes = {
        "alter": base.with_partitions([_partition(*base.values[31], 1)]),
        "add": base.with_partitions([_partition("2024-01-06", "0b", 0)]),
        "drop": base.without([middle]),
    }
    for write, changed in writes.items():
        kept = {id(block) for block in base.blocks}
        built = [block for block in changed.blocks if id(block) not in kept]
        assert len(built) == 1 and len(changed.blocks) - len(built) == len(base.blocks) - 1, write
        _check_blocks(changed)
    current = base
    for h in range(7 * SMALL_BLOCK):   # one block growing a partition at a time, splitting as it goes
        previous, current = current, current.with_partitions([_partition("2024-01-06", f"0{h:02d}", 0)])
        assert 1 <= sum(id(block) not in {id(b) for b in previous.blocks} for block in current.blocks) <= 3
        _check_blocks(current)
    assert len(current) == 60 + 7 * SMALL_BLOCK


def test_partitions_asked_out_of_name_order_come_in_the_order_asked():
    """The batch API pages in id order, which need not be name order: its partitions, gathered from several
    blocks, come in the order of their ids."""
    parts = _many(30)
    names = sorted(parts)
    ids = {name: 1000 - 7 * ((i * 11) % 30) for i, name in enumerate(names)}   # a shuffle of the name order
    current = _built(parts, ids)
    batch = current.batch(0, -1, 30, None, names_only=False)
    assert batch is not None
    by_id = sorted(names, key=ids.__getitem__)
    assert list(batch.items) == [parts[name] for name in by_id]
    positions = [17, 2, 29, 0, 9]
    assert list(current.encoded(positions)) == [parts[names[i]] for i in positions]
