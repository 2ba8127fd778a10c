"""A table's partitions in a compact, immutable form.

Each partition is kept as Thrift bytes in two pieces: its own fields (values, parameters, times and the
start of its storage descriptor with the location) and a tail, which the partitions of a table almost always
share and which is therefore stored once: the rest of the storage descriptor, then the database, table and
catalog names. Thrift decoders accept fields in any order, so the two pieces concatenate to a valid Partition
struct. Partition values are interned so that every partition with ds=2024-01-01 shares one string. The own
bytes rest packed while their table is not being read (OwnBytes).

The partitions are held in blocks of consecutive names (partition_block.py): a write builds new blocks for
what it changes and keeps the others, so it costs the same in a table of 100 partitions and of 100,000.
Positions (as the index and the readers use them) count across the blocks in name order.

Each partition's id in the database (PARTITIONS.PART_ID) is kept too, for the batch API, which pages through
a table in id order: loads read the ids, a local add learns them from its write; where one is not known
(partitions another instance added, applied from its events) the set's ids are None and batches come from the
database until the table is loaded again.

A PartitionSet never changes: writes build a new one, so readers need no lock.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from hmsproxy.hive.names import make_partition_name
from hmsproxy.hive.partition_filter import PartitionFilter
from hmsproxy.idl import hms
from hmsproxy.idl.codec import EncodedList
from hmsproxy.idl.fields import present
from hmsproxy.idl.partition_bytes import EncodedPartitions, decode_partition, encode_partition
from hmsproxy.store.cache.own_bytes import HotOwnBytes
from hmsproxy.store.cache.partition_block import BLOCK, EMPTY_BLOCK, Block, NewRow, packed_block
from hmsproxy.store.cache.value_index import ValueIndex
from hmsproxy.store.domain import PartitionBatch, batch_scan, cut_batch

# A partition as a set keeps it: its values (interned), its own bytes, its tail, whether the tail needs the tolerant
# decoder (partition_bytes.encode_partition).
EncodedRow = tuple[tuple[str, ...], bytes, bytes, bool]
Row = tuple[bytes, bytes, tuple[str, ...], int | None]   # own bytes, tail, values, id (None: not known)


def encoded_rows(parts: Iterable[hms.Partition]) -> list[EncodedRow]:
    """The partitions as a set keeps them: what a write's cache update does per partition, which the write can have
    done ahead (while its commit runs)."""
    rows = []
    for part in parts:
        own, tail, needs_tolerant = encode_partition(part)
        rows.append((tuple(map(sys.intern, present(part.values))), own, tail, needs_tolerant))
    return rows


class Values(Sequence[tuple[str, ...]]):
    """Each partition's values as a tuple, read from its block's flat tuple of them: a pointer per value rather than
    a tuple object per partition (about 50 bytes less each). Holds the blocks, not their set, so that a set is
    freed as soon as it is dropped."""

    def __init__(self, blocks: tuple[Block, ...], width: int) -> None:
        self._blocks = blocks
        self._width = width

    @functools.cached_property
    def starts(self) -> array[int]:
        """Each block's first position, then the count of partitions: built when a read first asks."""
        return array("q", itertools.accumulate(map(len, map(attrgetter("names"), self._blocks)), initial=0))

    def locate(self, position: int) -> tuple[Block, int]:
        """The block holding the partition at `position`, and its position there."""
        number = bisect.bisect_right(self.starts, position) - 1
        return self._blocks[number], position - self.starts[number]

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        block, i = self.locate(index)
        return block.flat_values[i * self._width:(i + 1) * self._width]

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return itertools.chain.from_iterable(block.values(self._width) for block in self._blocks)

    def column(self, key: int) -> tuple[str, ...]:
        """Every partition's value of one key, in partition order."""
        return tuple(itertools.chain.from_iterable(block.flat_values[key::self._width] for block in self._blocks))


@dataclass(frozen=True)
class PartitionSet:
    keys: tuple[str, ...]
    blocks: tuple[Block, ...] = ()               # in name order, none empty
    known_size: int | None = field(default=None, repr=False, compare=False)   # size_bytes(), once counted
    firsts: tuple[str, ...] = field(default=(), repr=False, compare=False)   # each block's first name
    # where the blocks' own bytes are kept expanded while read (the cache's); None: a packed block stays packed
    hot: HotOwnBytes | None = field(default=None, repr=False, compare=False)
    index: ValueIndex = field(init=False, repr=False, compare=False)   # of `values`, built as filters ask

    def __post_init__(self) -> None:
        if len(self.firsts) != len(self.blocks):   # a write passes them, changed where it changed blocks
            object.__setattr__(self, "firsts", tuple(map(itemgetter(0), map(attrgetter("names"), self.blocks))))
        object.__setattr__(self, "index", ValueIndex(self.values.column))

    @property
    def starts(self) -> array[int]:
        """Each block's first position, then the count of partitions."""
        return self.values.starts

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its blocks alone (prewarm's workers send sets): the index and the memos are built again
        where it is unpickled, and the hot set given there (kept_in)."""
        return PartitionSet, (self.keys, self.blocks, self.known_size)

    def kept_in(self, hot: HotOwnBytes) -> PartitionSet:
        """The same partitions, their own bytes kept expanded in `hot` while read (a set another process built)."""
        return PartitionSet(self.keys, self.blocks, self.known_size, self.firsts, hot)

    @staticmethod
    def of_values(keys: tuple[str, ...], rows: Iterable[tuple[str, tuple[str, ...]]]) -> PartitionSet:
        """A set of partitions known by name and values alone, with empty bytes (for what reads only the values:
        the index's tests and bench)."""
        return _from_rows(keys, {name: (b"", b"", values, None) for name, values in rows}, set(), None)

    @functools.cached_property
    def tolerant_tails(self) -> frozenset[bytes]:
        """The tails holding list-keyed skew maps, which decode only with the tolerant decoder: built when a
        partition is first decoded in process (a listing sends the bytes as they are)."""
        return frozenset().union(*(block.tolerant for block in self.blocks))

    @functools.cached_property
    def values(self) -> Values:
        """Each partition's values (parallel to names)."""
        return Values(self.blocks, len(self.keys))

    # ---- reads -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.starts[-1]

    @property
    def names(self) -> tuple[str, ...]:
        """Every partition's name, sorted."""
        if len(self.blocks) == 1:
            return self.blocks[0].names
        return tuple(itertools.chain.from_iterable(block.names for block in self.blocks))

    @functools.cached_property
    def ids(self) -> array[int] | None:
        """Every partition's id (parallel to names); None when not all are known."""
        if any(block.ids is None for block in self.blocks):
            return None
        return array("q", itertools.chain.from_iterable(block.ids for block in self.blocks))  # type: ignore[misc]

    def name_at(self, position: int) -> str:
        block, i = self.values.locate(position)
        return block.names[i]

    def _block_index_of(self, name: str) -> tuple[int, int | None]:
        """(the block where `name` is or would be, its position there or None)."""
        number = max(0, bisect.bisect_right(self.firsts, name) - 1)
        return number, self.blocks[number].index_of(name) if self.blocks else None

    def index_of(self, name: str) -> int | None:
        number, i = self._block_index_of(name)
        return None if i is None else self.starts[number] + i

    def _decode(self, item: list[bytes]) -> hms.Partition:
        return decode_partition(item, self.tolerant_tails)

    def encoded(self, indexes: Sequence[int]) -> EncodedList[hms.Partition]:
        """The partitions at `indexes`, as their byte pieces: own bytes and shared tail, one after the other
        (gathered in C a block at a time: no Python step per partition)."""
        pieces = self._pieces(indexes, expand=True)
        assert pieces is not None
        return EncodedList(pieces, 2, self._decode)

    def _pieces(self, indexes: Sequence[int], expand: bool) -> list[bytes] | None:
        """Own bytes and tail of each partition at `indexes`, in that order; None where a block would expand its
        own bytes and `expand` is false (OwnBytes.pick_without_expanding)."""
        ordered = indexes if len(self.blocks) == 1 else sorted(indexes)
        pieces = [b""] * (2 * len(ordered))
        done = 0
        while done < len(ordered):
            number = bisect.bisect_right(self.starts, ordered[done]) - 1
            block, start = self.blocks[number], self.starts[number]
            end = len(ordered) if len(self.blocks) == 1 else bisect.bisect_left(ordered, self.starts[number + 1], done)
            local = ordered[done:end] if start == 0 else [i - start for i in ordered[done:end]]
            own = block.own.pick(local, self.hot) if expand else block.own.pick_without_expanding(local, self.hot)
            if own is None:
                return None
            pieces[2 * done:2 * end:2] = own
            pieces[2 * done + 1:2 * end:2] = block.tails_of(local)
            done = end
        if ordered is indexes or ordered == list(indexes):
            return pieces
        slot = dict(zip(ordered, range(len(ordered))))   # the batch API asks in id order, not name order
        in_order = [b""] * len(pieces)
        in_order[0::2] = [pieces[2 * slot[i]] for i in indexes]
        in_order[1::2] = [pieces[2 * slot[i] + 1] for i in indexes]
        return in_order

    def all(self, limit: int | None = None) -> EncodedList[hms.Partition]:
        count = len(self) if limit is None or limit < 0 else min(limit, len(self))
        pieces = [b""] * (2 * count)
        for block, start in zip(self.blocks, self.starts):
            if start >= count:
                break
            end = min(count, start + len(block))
            own = block.own.items(self.hot)
            pieces[2 * start:2 * end:2] = own if end - start == len(own) else own[:end - start]
            pieces[2 * start + 1:2 * end:2] = block.tails_of(range(end - start))
        return EncodedList(pieces, 2, self._decode, self.encoded_bytes if count == len(self) else None)

    @functools.cached_property
    def encoded_bytes(self) -> int:
        """The bytes of all its partitions as sent, counted once per set."""
        return sum(block.own.total_length() + block.tails_bytes() for block in self.blocks)

    def by_names(self, names: Sequence[str]) -> EncodedList[hms.Partition]:
        """The named partitions that exist, sorted by name (as the database answers)."""
        found = sorted({i for i in (self.index_of(n) for n in names) if i is not None})
        return self.encoded(found)

    def names_matching(self, partition_filter: PartitionFilter) -> list[str]:
        """The names of the partitions the filter matches, sorted."""
        return list(map(self.name_at, self.positions_matching(partition_filter)))

    def positions_matching(self, partition_filter: PartitionFilter) -> list[int]:
        """The positions of the partitions the filter matches, in order; the predicate tests only the candidates
        its plan selects from the index, and none where the plan selects exactly the matches."""
        candidates, exact = self.index.select(partition_filter.plan)
        matches, values = partition_filter.matches, self.values
        if candidates is None:
            return [i for i, partition_values in enumerate(values) if matches(partition_values)]
        return candidates if exact else [i for i in candidates if matches(values[i])]

    def matches_at_once(self, partition_filter: PartitionFilter, most: int) -> EncodedList[hms.Partition] | None:
        """The partitions the filter matches, when finding them costs no more than binary searches in the index,
        `most` steps, and reading a few chunks of packed bytes: the filter's plan selects exactly its matches from
        key values sorted already, among at most `most` candidates, and no block need be expanded for them.
        None otherwise (positions_matching and encoded then find them)."""
        positions = self.index.selected_at_once(partition_filter.plan, most)
        pieces = None if positions is None else self._pieces(positions, expand=False)
        return None if pieces is None else EncodedList(pieces, 2, self._decode)

    def id_of(self, name: str) -> int | None:
        number, i = self._block_index_of(name)
        ids = self.blocks[number].ids if i is not None else None
        return None if ids is None or i is None else ids[i]

    @functools.cached_property
    def _id_order(self) -> tuple[list[int], list[int]]:
        """(positions sorted by id, the ids in that order), built once per set when a batch first asks."""
        assert self.ids is not None
        order = sorted(range(len(self.ids)), key=self.ids.__getitem__)
        return order, [self.ids[i] for i in order]

    def batch(self, from_id: int, to_id: int, size: int, predicate: Callable[[Sequence[str]], bool] | None,
              names_only: bool) -> PartitionBatch | None:
        """The batch API's answer from memory, by the rule of domain.cut_batch; None when the ids are not all
        known."""
        ids = self.ids
        if ids is None:
            return None
        order, sorted_ids = self._id_order
        scan = batch_scan(size, predicate is not None)
        start = bisect.bisect_left(sorted_ids, from_id)
        end = len(order) if to_id < 0 else bisect.bisect_left(sorted_ids, to_id)
        keep = None if predicate is None else (lambda i: predicate(self.values[i]))
        chosen, next_id = cut_batch(order[start:min(end, start + scan + 1)], size, scan, keep, ids.__getitem__)
        items = list(map(self.name_at, chosen)) if names_only else self.encoded(chosen)
        low, high = (sorted_ids[0], sorted_ids[-1]) if sorted_ids else (-1, -1)
        return PartitionBatch(items, next_id, low, high)

    def rows(self) -> dict[str, Row]:
        """Every partition by name: own bytes (expanded), tail, values, id."""
        rows: dict[str, Row] = {}
        width = len(self.keys)
        for block in self.blocks:
            ids: Iterable[int | None] = block.ids if block.ids is not None else [None] * len(block)
            rows.update(zip(block.names, zip(block.own.items(self.hot), block.tails_of(range(len(block))),
                                             block.values(width), ids)))
        return rows

    def size_bytes(self) -> int:
        """Estimated memory: the bytes objects, the shared strings and the containers holding them, the own bytes
        packed (estimated for a block a write made: Block.own_nbytes). Counted once per set; a set a write made
        carries its base's count, adjusted by the blocks it replaced and made."""
        if self.known_size is None:
            width = len(self.keys)
            object.__setattr__(self, "known_size", sum(block.size_bytes(width) for block in self.blocks))
        assert self.known_size is not None
        return self.known_size

    # ---- writes (each returns a new set, sharing the blocks it did not change) ---------------------

    def with_partitions(self, parts: Sequence[hms.Partition], new_ids: Mapping[str, int] | None = None) -> PartitionSet:
        """Adds or replaces partitions (matched by name). A replaced partition keeps its id; an added one takes
        its id from `new_ids` (by name), else the set's ids become unknown."""
        return self.with_encoded(encoded_rows(parts), new_ids)

    def with_encoded(self, encoded: Sequence[EncodedRow], new_ids: Mapping[str, int] | None = None) -> PartitionSet:
        """with_partitions of partitions already encoded (`encoded_rows`). Each block that gets some of them is
        merged with them; the others are kept."""
        rows: dict[str, tuple[bytes, bytes, tuple[str, ...]]] = {}
        tolerant: set[bytes] = set()
        for part_values, part_own, tail, needs_tolerant in encoded:   # a later one of a name wins, as a later write
            if needs_tolerant:
                tolerant.add(tail)
            rows[make_partition_name(self.keys, part_values)] = (part_own, tail, part_values)
        ids = new_ids or {}
        new: list[NewRow] = [(name, *rows[name], ids.get(name)) for name in sorted(rows)]
        if not new:
            return self
        base = self.blocks or (EMPTY_BLOCK,)
        blocks, firsts = list(base), list(self.firsts or ("",))
        size = self.size_bytes()
        for number, first, end in reversed(self._runs(new)):   # from the end: numbers before stay where they were
            merged, size_change = base[number].merged(new[first:end], len(self.keys), tolerant, self.hot)
            blocks[number:number + 1] = merged
            firsts[number:number + 1] = [block.names[0] for block in merged]
            size += size_change
        return PartitionSet(self.keys, tuple(blocks), known_size=size, firsts=tuple(firsts), hot=self.hot)

    def _runs(self, new: Sequence[NewRow]) -> list[tuple[int, int, int]]:
        """(block number, start, end) of each run of `new` (sorted by name) that belongs in one block: the last
        block whose first name is not after it (the first block for names before every block)."""
        runs: list[tuple[int, int, int]] = []
        start = 0
        while start < len(new):
            number = max(0, bisect.bisect_right(self.firsts, new[start][0]) - 1)
            end = len(new) if number + 1 >= len(self.blocks) else bisect.bisect_left(
                new, self.firsts[number + 1], start, key=lambda row: row[0])
            runs.append((number, start, end))
            start = end
        return runs

    def without(self, names: Iterable[str]) -> PartitionSet:
        drop: dict[int, list[int]] = {}
        for name in set(names):
            number, i = self._block_index_of(name)
            if i is not None:
                drop.setdefault(number, []).append(i)
        if not drop:
            return self
        blocks, firsts = list(self.blocks), list(self.firsts)
        size = self.size_bytes()
        for number in sorted(drop, reverse=True):   # from the end: numbers before stay where they were
            block, size_change = self.blocks[number].without(drop[number], len(self.keys), self.hot)
            blocks[number:number + 1] = [] if block is None else [block]
            firsts[number:number + 1] = [] if block is None else [block.names[0]]
            size += size_change
        return PartitionSet(self.keys, tuple(blocks), known_size=size, firsts=tuple(firsts), hot=self.hot)


class PartitionSetBuilder:
    """Adds partitions to a set chunk by chunk, encoding each chunk as it comes, so that a table's partitions
    never all exist as objects at once (prewarm of a million-partition table)."""

    def __init__(self, base: PartitionSet) -> None:
        self.keys = base.keys
        self._hot = base.hot
        self._rows = base.rows()
        self._tolerant = set(base.tolerant_tails)

    def add(self, parts: Sequence[hms.Partition], ids: Sequence[int | None] | None = None) -> None:
        """Adds (or replaces) partitions; `ids` parallel to them, or None when the store gave none. Partitions the
        store read encoded (EncodedPartitions) are taken as they are."""
        encoded = parts if isinstance(parts, EncodedPartitions) else EncodedPartitions.of(parts)
        self._tolerant |= encoded.tolerant
        pieces = encoded.pieces
        for own, tail, values, part_id in zip(pieces[0::2], pieces[1::2], encoded.values,
                                              ids if ids is not None else [None] * len(encoded)):
            self._rows[make_partition_name(self.keys, values)] = (own, tail, tuple(map(sys.intern, values)), part_id)

    def build(self) -> PartitionSet:
        return _from_rows(self.keys, self._rows, self._tolerant, self._hot)


def _from_rows(keys: tuple[str, ...], rows: dict[str, Row], tolerant: set[bytes], hot: HotOwnBytes | None
               ) -> PartitionSet:
    """A set of `rows`, in blocks of BLOCK, packed."""
    names = sorted(rows)
    same_tail: dict[bytes, bytes] = {}
    blocks = tuple(packed_block([(name, *rows[name]) for name in names[start:start + BLOCK]], same_tail, tolerant)
                   for start in range(0, len(names), BLOCK))
    return PartitionSet(keys, blocks, hot=hot)
