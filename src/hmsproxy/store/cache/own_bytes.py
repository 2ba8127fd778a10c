"""A block of cached partitions' own bytes, kept compressed while it is not being read.

Each partition's own bytes (partition_bytes: its values, parameters, times and location, ~180 bytes) are most
of what the cache holds for it, and the partitions of a table differ in a few characters: zlib packs them to
about a tenth. Listings send them without a Python step per partition, which needs them expanded (one bytes
object each), so the blocks read lately (partition_block.py: up to 1,024 partitions of a table each) keep them
expanded too, up to a byte budget (HotOwnBytes, least recently used first out: the cache's, which its partition
sets pass to every read and write of their blocks); the rest stay packed only. A
block that a write made starts expanded only, and is packed when it leaves the hot ones: on a thread of its own
(zlib works without the interpreter's lock), so that the read that pushed it out does not wait for it.

The cache's bound (--cache-max-bytes) counts own bytes packed, a written block's by the share its base packed to;
the expanded copies count against the hot budget (--cache-hot-bytes) instead.
"""
from __future__ import annotations

import functools
import itertools
import sys
import threading
import weakref
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

# Partitions per zlib stream: a read of a few partitions of a packed table decompresses only their chunks, and
# a chunk is long enough that the stream's own overhead (~10 bytes) and lost context cost under 1% (measured).
CHUNK = 128
LEVEL = 1   # zlib's fastest level packs these bytes within 3% of its best, four times as fast
FIRST_SHARE = 0.15   # what a block with no packed base is expected to pack to (partitions' own bytes: 0.09-0.12)
PACKS_QUEUED = 8     # written blocks left expanded while they wait to be packed; past it, the pushing thread packs


@dataclass(frozen=True)
class Packed:
    """Own bytes as zlib streams of CHUNK partitions each, with each partition's length."""

    chunks: tuple[bytes, ...]
    lengths: array[int]

    @staticmethod
    def of(items: Sequence[bytes]) -> Packed:
        chunks = tuple(zlib.compress(b"".join(items[i:i + CHUNK]), LEVEL) for i in range(0, len(items), CHUNK))
        return Packed(chunks, array("I", map(len, items)))

    def expand(self) -> tuple[bytes, ...]:
        return tuple(itertools.chain.from_iterable(map(self._chunk, range(len(self.chunks)))))

    def pick(self, indexes: Sequence[int]) -> list[bytes]:
        """The items at `indexes`, decompressing only the chunks that hold them."""
        chunks = {number: self._chunk(number) for number in {i // CHUNK for i in indexes}}
        return [chunks[i // CHUNK][i % CHUNK] for i in indexes]

    def _chunk(self, number: int) -> list[bytes]:
        data = zlib.decompress(self.chunks[number])
        ends = list(itertools.accumulate(self.lengths[number * CHUNK:(number + 1) * CHUNK]))
        return list(map(data.__getitem__, map(slice, [0, *ends[:-1]], ends)))

    def nbytes(self) -> int:
        return sum(map(sys.getsizeof, self.chunks)) + sys.getsizeof(self.chunks) + sys.getsizeof(self.lengths)


def expanded_nbytes(items: Sequence[bytes]) -> int:
    """Memory of items kept expanded: each bytes object and its pointer."""
    return sum(map(sys.getsizeof, items)) + 8 * len(items)


class OwnBytes:
    """One block's own bytes, expanded, packed, or both while hot. Never changes in content: only its form does,
    and readers that hold the expanded tuple keep it whatever happens to the form meanwhile."""

    __slots__ = ("__weakref__", "_chunks_read", "_expanded", "_expanded_nbytes", "_packed", "_packed_estimate")

    def __init__(self, expanded: tuple[bytes, ...] | None, packed: Packed | None = None,
                 expanded_size: int | None = None, packed_estimate: int | None = None) -> None:
        assert expanded is not None or packed is not None
        self._expanded = expanded
        self._packed = packed
        self._expanded_nbytes = expanded_size
        self._packed_estimate = packed_estimate
        self._chunks_read = 0   # chunks decompressed for reads since it was last expanded

    @staticmethod
    def packed(items: Sequence[bytes]) -> OwnBytes:
        """Own bytes a load read: packed at once, and expanded when a read first asks."""
        return OwnBytes(None, Packed.of(items))

    @staticmethod
    def written(items: tuple[bytes, ...], size: int, base: OwnBytes, hot: HotOwnBytes | None) -> OwnBytes:
        """Own bytes a write made from `base`'s (`size`: their expanded_nbytes, which the writer counted as it
        went): expanded and hot in `hot`, since the table was just used; packed at once without a hot set."""
        own = OwnBytes(items, expanded_size=size, packed_estimate=int(size * base._packed_share()))
        if hot is None:
            own.cool()
        else:
            hot.touch(own, size)
        return own

    def _packed_share(self) -> float:
        """What these pack to, as a share of their expanded size (known, estimated or expected)."""
        packed = self._packed.nbytes() if self._packed is not None else self._packed_estimate
        return FIRST_SHARE if packed is None or not len(self) else packed / self.expanded_nbytes()

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled packed (prewarm's workers send blocks this way): a tenth of the bytes to send."""
        return OwnBytes, (None, self._packed or Packed.of(self.items(None)))

    def items(self, hot: HotOwnBytes | None) -> tuple[bytes, ...]:
        """All of them expanded, which makes the block hot in `hot`; without a hot set a packed block stays packed
        only."""
        items = self._expanded
        if items is None:
            assert self._packed is not None
            items = self._packed.expand()
            if hot is None:
                return items
            self._expanded = items
        if hot is not None:
            hot.touch(self, self._size_of(items))
        return items

    def pick(self, indexes: Sequence[int], hot: HotOwnBytes | None) -> Sequence[bytes]:
        """The items at `indexes`; a few of a packed block are read from their chunks without expanding it. Once the
        reads since it was last expanded would have decompressed a quarter of its chunks (items spread over the
        table, as a filter on the second key picks; or the same few read again and again, as a repeated filter
        does), it is expanded: reading from the chunks costs at most a quarter more than expanding at once, and
        the reads after it decompress nothing."""
        picked = self.pick_without_expanding(indexes, hot)
        return picked if picked is not None else list(map(self.items(hot).__getitem__, indexes))

    def pick_without_expanding(self, indexes: Sequence[int], hot: HotOwnBytes | None) -> Sequence[bytes] | None:
        """As pick, but None where pick would expand a packed block (most of a millisecond for a full block)."""
        items = self._expanded
        if items is not None:
            if hot is not None:
                hot.touch(self, self._size_of(items))
            return list(map(items.__getitem__, indexes))
        packed = self._packed
        assert packed is not None
        self._chunks_read += len({i // CHUNK for i in indexes})
        if len(indexes) <= CHUNK and self._chunks_read <= max(2, len(packed.chunks) // 4):
            return packed.pick(indexes)
        return None

    def __len__(self) -> int:
        items = self._expanded
        if items is not None:
            return len(items)
        assert self._packed is not None
        return len(self._packed.lengths)

    def __eq__(self, other: object) -> bool:
        """The same bytes, whatever their forms."""
        if not isinstance(other, OwnBytes):
            return NotImplemented
        return self is other or (len(self) == len(other) and self.items(None) == other.items(None))

    def total_length(self) -> int:
        """The bytes of them all, as sent."""
        items = self._expanded
        if items is not None:
            return sum(map(len, items))
        assert self._packed is not None
        return sum(self._packed.lengths)

    def is_packed(self) -> bool:
        """Whether their packed form exists."""
        return self._packed is not None

    def is_expanded(self) -> bool:
        """Whether their expanded form exists (for the tests that follow the forms)."""
        return self._expanded is not None

    def expanded_nbytes(self) -> int:
        """What they take expanded; counted once."""
        return self._expanded_nbytes if self._expanded_nbytes is not None else self._size_of(self.items(None))

    def _size_of(self, items: tuple[bytes, ...]) -> int:
        if self._expanded_nbytes is None:
            self._expanded_nbytes = expanded_nbytes(items)
        return self._expanded_nbytes

    def nbytes(self) -> int:
        """What they take packed (the cache's bound counts this): known once packed, estimated till then."""
        if self._packed is not None:
            return self._packed.nbytes()
        return self._packed_estimate if self._packed_estimate is not None else self.expanded_nbytes()

    def pack(self) -> None:
        """Makes their packed form, if a write made them."""
        items = self._expanded
        if self._packed is None and items is not None:
            self._packed = Packed.of(items)

    def cool(self) -> None:
        """Keeps them packed only (packing them first if a write made them)."""
        self.pack()
        self._expanded = None
        self._chunks_read = 0


class HotOwnBytes:
    """The own bytes kept expanded, up to `budget` bytes (--cache-hot-bytes), least recently read out first. Keeps
    no block alive: entries are weak, and leave when their block is dropped."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[int, tuple[weakref.ref[OwnBytes], int]] = OrderedDict()
        self._lock = threading.RLock()   # a dropped block's weak callback may run wherever the lock is held
        self._expanded_bytes = 0
        self._packer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pack-own-bytes")
        self._queued = 0
        self._last_pack: Future[None] | None = None

    def touch(self, own: OwnBytes, size: int) -> None:
        """Marks `own` (expanded, `size` bytes so) as read now, and packs the least recently read beyond the
        budget."""
        key = id(own)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                if entry[0]() is own:
                    self._entries.move_to_end(key)
                    return
                self._expanded_bytes -= entry[1]   # a dropped block's, whose id `own` now has
            self._entries[key] = (weakref.ref(own, functools.partial(self._forget, key)), size)
            self._expanded_bytes += size
            victims = self._over_budget()
        for victim in victims:
            self._cool(victim)

    def _cool(self, victim: OwnBytes) -> None:
        """Keeps a block that left the hot ones packed only; a written one is packed on the packer thread, unless
        PACKS_QUEUED wait there already."""
        if victim.is_packed():
            victim.cool()
            return
        with self._lock:
            queued = self._queued < PACKS_QUEUED
            if queued:
                self._queued += 1
                self._last_pack = self._packer.submit(self._pack_queued, victim)
        if not queued:
            victim.cool()   # outside the lock: packing a block takes most of a millisecond

    def _pack_queued(self, victim: OwnBytes) -> None:
        """Packs a written block, then drops its expanded form unless a read made it hot again meanwhile."""
        try:
            victim.pack()
            with self._lock:
                entry = self._entries.get(id(victim))
                if entry is None or entry[0]() is not victim:
                    victim.cool()
        finally:
            with self._lock:
                self._queued -= 1

    def wait_packed(self) -> None:
        """Returns once the blocks handed to the packer so far are packed."""
        with self._lock:
            last = self._last_pack
        if last is not None:
            last.result()

    def _over_budget(self) -> list[OwnBytes]:
        victims = []
        while self._expanded_bytes > self.budget and len(self._entries) > 1:
            _, (ref, size) = self._entries.popitem(last=False)
            self._expanded_bytes -= size
            victim = ref()
            if victim is not None:
                victims.append(victim)
        return victims

    def _forget(self, key: int, ref: weakref.ref[OwnBytes]) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is ref:
                del self._entries[key]
                self._expanded_bytes -= entry[1]

    def expanded_size(self) -> int:
        """The bytes kept expanded now (the hmsproxy_cache_hot_bytes gauge)."""
        return self._expanded_bytes
