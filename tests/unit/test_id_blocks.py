"""Id blocks: every id handed out once, blocks that grow under a stream of writes and shrink after a quiet spell.

The database's part (reservations by several processes at once) is in tests/store/test_bulk_writes.py."""
from __future__ import annotations

from hmsproxy.store.sql.id_blocks import ID_BLOCK, MAX_ID_BLOCK, SUSTAINED_S, IdBlocks


class Counter:
    """SEQUENCE_TABLE's row for one model, and the reservations asked of it."""

    def __init__(self) -> None:
        self.next_val = 1
        self.reserved: list[int] = []

    def reserve(self, count: int) -> int:
        first, self.next_val = self.next_val, self.next_val + count
        self.reserved.append(count)
        return first


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_stream_of_writes_reserves_ever_larger_blocks_up_to_the_cap():
    counter, clock = Counter(), Clock()
    blocks = IdBlocks(clock)
    firsts = []
    for _ in range(2000):   # 200,000 ids, 100 at a time, a millisecond apart
        firsts.append(blocks.take("MPartition", 100, counter.reserve))
        clock.now += 0.001
    assert firsts == list(range(1, 200_001, 100))   # consecutive, none handed out twice
    spares = [total - 100 for total in counter.reserved]
    assert spares[:4] == [ID_BLOCK, 2 * ID_BLOCK, 4 * ID_BLOCK, 8 * ID_BLOCK]
    assert max(spares) == MAX_ID_BLOCK and spares[-1] == MAX_ID_BLOCK
    assert len(counter.reserved) < 2000 * 100 // ID_BLOCK // 10   # a fixed block: one reservation per 10 writes


def test_after_a_quiet_spell_blocks_are_small_again():
    counter, clock = Counter(), Clock()
    blocks = IdBlocks(clock)
    for _ in range(40):
        blocks.take("MPartition", 100, counter.reserve)
    assert counter.reserved[-1] > 100 + ID_BLOCK
    clock.now += SUSTAINED_S
    blocks.take("MPartition", 3 * MAX_ID_BLOCK, counter.reserve)   # more than any block holds: a reservation
    assert counter.reserved[-1] == 3 * MAX_ID_BLOCK + ID_BLOCK


def test_models_have_blocks_of_their_own():
    counter, clock = Counter(), Clock()
    blocks = IdBlocks(clock)
    partition, descriptor = blocks.take("MPartition", 10, counter.reserve), blocks.take("MSD", 10, counter.reserve)
    assert counter.reserved == [10 + ID_BLOCK, 10 + ID_BLOCK]
    assert blocks.take("MPartition", 10, counter.reserve) == partition + 10
    assert blocks.take("MSD", 10, counter.reserve) == descriptor + 10
