"""Partitions' own bytes packed at rest and expanded while read: the same bytes in every form, a bounded number of
them expanded, and nothing kept alive for a set that is gone."""
from __future__ import annotations

import pickle
import random
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsproxy.store.cache import own_bytes
from hmsproxy.store.cache.own_bytes import CHUNK, HotOwnBytes, OwnBytes, Packed


@pytest.fixture
def hot() -> HotOwnBytes:
    """A cache's hot own bytes, for one test (a test that wants another budget sets its own)."""
    return HotOwnBytes(64 << 20)


NO_BASE = OwnBytes(())


def _written(items: tuple[bytes, ...], hot: HotOwnBytes) -> OwnBytes:
    return OwnBytes.written(items, own_bytes.expanded_nbytes(items), NO_BASE, hot)


def _items(count: int, seed: int = 0) -> tuple[bytes, ...]:
    """Bytes like partitions' own: alike but for a few characters."""
    rng = random.Random(seed)
    return tuple(f"\x0f\x00\x01ds=2024-{i % 12:02d}\x0bnumFiles\x01totalSize{rng.randrange(10**6)}"
                 f"s3a://bucket/t/ds=2024-{i % 12:02d}/part={i}".encode() for i in range(count))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=3 * CHUNK + 5), st.data())
def test_packed_bytes_expand_and_pick_to_what_was_packed(items, data):
    packed = Packed.of(items)
    assert packed.expand() == tuple(items)
    if items:
        indexes = data.draw(st.lists(st.integers(0, len(items) - 1), max_size=20))
        assert packed.pick(indexes) == [items[i] for i in indexes]


def test_an_item_longer_than_a_chunk_of_others_and_empty_ones_survive():
    items = [b"", b"x" * 70_000, b"", *_items(CHUNK), b"\x00" * 3]
    assert Packed.of(items).expand() == tuple(items)


def test_packing_takes_a_fraction_of_the_expanded_bytes():
    items = _items(1000)
    own = OwnBytes.packed(items)
    assert own.nbytes() * 4 < own_bytes.expanded_nbytes(items)


def test_a_loaded_set_rests_packed_and_a_read_expands_it(hot):
    items = _items(300)
    own = OwnBytes.packed(items)
    assert own.is_packed() and not own.is_expanded()
    assert own.pick([5, 299, 5], hot) == [items[5], items[299], items[5]]
    assert not own.is_expanded(), "a few partitions are read from their chunks"
    assert own.items(hot) == items and own.is_expanded()
    assert len(own) == 300
    assert own.total_length() == sum(map(len, items))


def test_a_read_spread_over_many_chunks_expands_the_set_and_the_next_decompresses_nothing(hot):
    """A filter on the second key picks a partition from every chunk: read from the chunks each time, every call
    decompressed the whole table (3.2 ms for 10,000 partitions) and the set never became hot."""
    items = _items(40 * CHUNK, 11)
    own = OwnBytes.packed(items)
    few = [3, CHUNK + 5, 9 * CHUNK]
    assert own.pick(few, hot) == [items[i] for i in few] and not own.is_expanded()
    spread = list(range(0, len(items), CHUNK // 2))
    assert own.pick(spread, hot) == [items[i] for i in spread]
    assert own.is_expanded()


def test_the_same_few_read_again_and_again_expand_the_set_once_a_quarter_of_it_was_decompressed(hot):
    """A repeated filter picks the same partitions of a packed set on every call: read from their chunk each time,
    every call decompressed it again (a tenth of the call's CPU) and the set never became hot."""
    items = _items(40 * CHUNK, 11)
    own = OwnBytes.packed(items)
    few = [CHUNK * 3 + n for n in range(49)]
    for _ in range(10):
        assert own.pick(few, hot) == [items[i] for i in few]
    assert not own.is_expanded(), "ten reads of one chunk: a quarter of the 40 decompressed"
    assert own.pick(few, hot) == [items[i] for i in few]
    assert own.is_expanded()
    own.cool()
    assert own.pick(few, hot) == [items[i] for i in few] and not own.is_expanded(), "cooled: counted afresh"


def test_a_pick_that_would_expand_the_set_is_refused_when_asked_not_to(hot):
    items = _items(40 * CHUNK, 11)
    own = OwnBytes.packed(items)
    few = [CHUNK * 7 + n for n in range(20)]
    assert own.pick_without_expanding(list(range(0, len(items), CHUNK // 2)), hot) is None, "spread over every chunk"
    assert own.pick_without_expanding(few, hot) is None, "and the reads so far decompressed a quarter"
    assert not own.is_expanded()
    assert own.pick(few, hot) == [items[i] for i in few] and own.is_expanded()
    assert own.pick_without_expanding(few, hot) == [items[i] for i in few]


def test_beyond_the_budget_the_least_recently_read_are_packed(hot):
    sets = [OwnBytes.packed(_items(200, seed)) for seed in range(4)]
    one = own_bytes.expanded_nbytes(_items(200))
    hot.budget = int(2.5 * one)
    for own in sets:
        own.items(hot)
    assert [own.is_expanded() for own in sets] == [False, False, True, True]
    sets[2].items(hot)   # read again: now the most recent
    OwnBytes.packed(_items(200, 9)).items(hot)
    assert [own.is_expanded() for own in sets] == [False, False, True, False]
    assert [own.items(hot) for own in sets] == [_items(200, seed) for seed in range(4)]


@pytest.fixture
def packing_gate(monkeypatch, hot) -> Iterator[tuple[threading.Event, list[str]]]:
    """Holds the packer thread before each packing until the gate opens; records which thread packed."""
    gate, packed_on = threading.Event(), []
    pack = own_bytes.Packed.of

    def held_pack(items):
        packed_on.append(threading.current_thread().name.split("_")[0])
        if packed_on[-1] == "pack-own-bytes":
            assert gate.wait(10)
        return pack(items)

    monkeypatch.setattr(own_bytes.Packed, "of", staticmethod(held_pack))
    yield gate, packed_on
    gate.set()
    hot.wait_packed()


def test_a_written_set_is_packed_when_it_leaves_the_hot_ones(hot, packing_gate):
    """On the packer thread: the read that pushed it out does not wait for it."""
    gate, packed_on = packing_gate
    items = _items(500, 1)
    written = _written(items, hot)
    assert written.is_expanded() and not written.is_packed()
    estimate = written.nbytes()
    hot.budget = 0
    newest = _written(_items(10, 2), hot)   # the newest stays, however small the budget
    assert written.is_expanded(), "still expanded while the packer is held"
    gate.set()
    hot.wait_packed()
    assert packed_on == ["pack-own-bytes"]
    assert written.is_packed() and not written.is_expanded() and newest.is_expanded()
    assert estimate / 2 < written.nbytes() < estimate * 2 < own_bytes.expanded_nbytes(items) / 2
    assert written.items(hot) == items


def test_past_the_queued_packings_the_pushing_thread_packs_and_a_set_read_again_stays_expanded(
        hot, packing_gate, monkeypatch):
    gate, packed_on = packing_gate
    monkeypatch.setattr(own_bytes, "PACKS_QUEUED", 1)
    first, second = _written(_items(300, 7), hot), _written(_items(300, 8), hot)
    hot.budget = 0
    newest = _written(_items(10, 2), hot)   # pushes both out: the first waits for the packer, the second not
    assert packed_on.count(threading.current_thread().name) == 1
    assert second.is_packed() and not second.is_expanded()
    assert first.items(hot) == _items(300, 7)   # read again before the packer got to it: hot again
    gate.set()
    hot.wait_packed()
    assert packed_on.count("pack-own-bytes") == 1   # the first (the read pushed the newest out: packed here)
    assert first.is_packed() and first.is_expanded() and newest.items(hot) == _items(10, 2)


def test_a_written_set_is_counted_at_the_share_its_base_packed_to(hot):
    base = OwnBytes.packed(_items(1000, 5))
    items = _items(1100, 6)
    size = own_bytes.expanded_nbytes(items)
    written = OwnBytes.written(items, size, base, hot)
    share = base.nbytes() / base.expanded_nbytes()
    assert written.nbytes() == int(size * share)
    assert OwnBytes.written(items, size, written, hot).nbytes() == int(size * written.nbytes() / size)


def test_a_dropped_set_leaves_the_hot_ones(hot):
    before = hot.expanded_size()
    items = _items(400, 3)
    written = _written(items, hot)
    assert hot.expanded_size() == before + own_bytes.expanded_nbytes(items)
    del written
    assert hot.expanded_size() == before


def test_a_set_pickles_packed_and_reads_back_the_same(hot):
    items = _items(300, 4)
    written = _written(items, hot)
    copy = pickle.loads(pickle.dumps(written))
    assert copy.is_packed() and not copy.is_expanded()
    assert copy.items(hot) == items
    assert len(pickle.dumps(written)) * 4 < sum(map(len, items))


def test_readers_get_the_right_bytes_while_others_pack_and_expand_them(hot):
    """Eight threads read sets through every path while a budget of about one set packs them all the time."""
    sets = {seed: _items(CHUNK + 40, seed) for seed in range(6)}
    owns = {seed: OwnBytes.packed(items) if seed % 2 else _written(items, hot) for seed, items in sets.items()}
    hot.budget = own_bytes.expanded_nbytes(sets[0])
    wrong: list[str] = []

    def read(worker: int) -> None:
        rng = random.Random(worker)
        for _ in range(1000):
            seed = rng.randrange(6)
            own, items = owns[seed], sets[seed]
            indexes = [rng.randrange(len(items)) for _ in range(rng.choice((1, 3, CHUNK + 1)))]
            try:
                if own.pick(indexes, hot) != [items[i] for i in indexes] or own.items(hot) != items or \
                        len(own) != len(items):
                    wrong.append(f"set {seed}: other bytes")
            except Exception as error:   # a reader that found neither form
                wrong.append(f"set {seed}: {error!r}")

    threads = [threading.Thread(target=read, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    hot.wait_packed()
    assert wrong == []
    assert sum(own.is_expanded() for own in owns.values()) <= 2


def test_without_a_hot_set_a_read_leaves_a_block_packed_and_a_write_packs_at_once():
    """A set another process built (prewarm's workers) reads so until it is given the cache's (kept_in)."""
    items = _items(300, 5)
    own = OwnBytes.packed(items)
    assert own.items(None) == items and own.pick(list(range(0, 300, 2)), None) == list(items[0::2])
    assert not own.is_expanded()
    written = OwnBytes.written(items, own_bytes.expanded_nbytes(items), own, None)
    assert written.is_packed() and not written.is_expanded() and written.items(None) == items


def test_each_cache_keeps_its_hot_bytes_within_its_own_budget():
    small, large = HotOwnBytes(0), HotOwnBytes(64 << 20)
    first, second, third, fourth = (OwnBytes.packed(_items(200, seed)) for seed in range(4))
    first.items(small)
    second.items(small)   # the newest stays, however small the budget
    third.items(large)
    fourth.items(large)
    assert [own.is_expanded() for own in (first, second, third, fourth)] == [False, True, True, True]
    assert large.expanded_size() == third.expanded_nbytes() + fourth.expanded_nbytes()
    assert small.expanded_size() == second.expanded_nbytes()
