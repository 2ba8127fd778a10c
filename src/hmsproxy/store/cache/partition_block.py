"""A run of a table's cached partitions, consecutive in name order: the part of a set that a write copies.

A PartitionSet (partitions.py) holds its partitions in blocks of about BLOCK each. A write builds new blocks for
the partitions it changes and keeps every other block as it is, so its cost does not grow with the table: a write
to one partition of a 100,000-partition table copies one block's arrays and the set's tuple of blocks (a pointer
per block), not 100,000 rows.

A block keeps, parallel to its sorted names: each partition's own bytes (OwnBytes, packed while not read), an
index into the block's storage-descriptor tails (most blocks have one), its values in one flat tuple, and its id
in the database (None when not all are known). A block never changes.
"""
from __future__ import annotations

import bisect
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from hmsproxy.store.cache.own_bytes import HotOwnBytes, OwnBytes, expanded_nbytes

# Partitions per block as a load builds them. A write splits a block that grows past twice this. Small enough that
# copying a block is tens of microseconds, large enough that a table's tuple of blocks stays short (100 for
# 100,000 partitions) and a block's own bytes pack into several zlib chunks (own_bytes.CHUNK).
BLOCK = 1024

# A partition as a write brings it: name, own bytes, tail, values (interned), id (None: not known).
NewRow = tuple[str, bytes, bytes, tuple[str, ...], int | None]

ROW_SLOT_BYTES = 8 + 4 + 8   # a pointer in names, an entry of tail_refs and one of ids


@dataclass(frozen=True)
class Block:
    names: tuple[str, ...]                 # sorted, never empty
    own: OwnBytes                          # parallel to names
    tail_refs: array[int]                  # parallel: index into tails
    flat_values: tuple[str, ...]           # each partition's values one after the other, interned strings
    tails: tuple[bytes, ...]
    ids: array[int] | None                 # parallel: PART_ID of each; None when not all are known
    tolerant: frozenset[bytes] = frozenset()   # its tails holding list-keyed skew maps (the tolerant decoder's)
    # what its own bytes take, as the cache's bound counts them (OwnBytes.nbytes), taken when it is made: a set
    # adds up its blocks' once, and a write changes the sum by the blocks it replaced and made
    own_nbytes: int = field(default=-1, compare=False)

    def __post_init__(self) -> None:
        if self.own_nbytes < 0:
            object.__setattr__(self, "own_nbytes", self.own.nbytes())

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its arrays (prewarm's workers send sets); its values are interned again where unpickled."""
        return _unpickled, (self.names, self.own, self.tail_refs, self.flat_values, self.tails, self.ids,
                            self.tolerant, self.own_nbytes)

    def __len__(self) -> int:
        return len(self.names)

    def index_of(self, name: str) -> int | None:
        i = bisect.bisect_left(self.names, name)
        return i if i < len(self.names) and self.names[i] == name else None

    def values(self, width: int) -> Iterator[tuple[str, ...]]:
        """Each partition's values as a tuple, in name order (`width`: the table's number of keys)."""
        return zip(*[iter(self.flat_values)] * width) if width else iter([()] * len(self.names))

    def tails_of(self, indexes: Sequence[int]) -> Iterable[bytes]:
        if len(self.tails) == 1:   # the usual table: every partition shares one storage-descriptor tail
            return self.tails * len(indexes)
        return map(self.tails.__getitem__, map(self.tail_refs.__getitem__, indexes))

    def tails_bytes(self) -> int:
        """The bytes of its partitions' tails, as sent."""
        if len(self.tails) == 1:
            return len(self.tails[0]) * len(self.names)
        return sum(map(len, map(self.tails.__getitem__, self.tail_refs)))

    def size_bytes(self, width: int) -> int:
        """Estimated memory: names, slots in the arrays, values' slots, tails, own bytes (own_nbytes)."""
        return (sum(map(row_bytes, self.names)) + len(self.names) * 8 * width
                + sum(sys.getsizeof(t) for t in self.tails) + self.own_nbytes)

    def merged(self, new: Sequence[NewRow], width: int, tolerant: AbstractSet[bytes], hot: HotOwnBytes | None
               ) -> tuple[list[Block], int]:
        """This block with `new` (sorted by name, unique; `tolerant`: those of their tails that need the tolerant
        decoder) added, or replacing its partitions of the same names; split into several when it grows past
        2 * BLOCK. A replaced partition keeps its id; an added one takes
        its row's, and where that is None the block's ids become unknown. Returns the blocks and the change of
        size_bytes; the rows are copied a run at a time. The new blocks start hot in `hot` (the set's)."""
        tail_index = {tail: i for i, tail in enumerate(self.tails)}
        names: list[str] = []
        own: list[bytes] = []
        refs = array("I")
        values: list[str] = []   # flat, as flat_values
        ids: array[int] | None = array("q") if self.ids is not None else None
        size_change = 0
        base_own, own_size = self.own.items(hot), self.own.expanded_nbytes()
        done = 0   # rows of this block copied so far
        tail_left = False   # whether a replaced partition left a tail (which may now be unused)
        for name, part_own, tail, part_values, new_id in new:
            i = bisect.bisect_left(self.names, name, done)
            names += self.names[done:i]
            own += base_own[done:i]
            refs += self.tail_refs[done:i]
            values += self.flat_values[done * width:i * width]
            replaced = i < len(self.names) and self.names[i] == name
            if replaced:
                size_change -= row_bytes(name) + 8 * width
                own_size -= expanded_nbytes((base_own[i],))
            part_id = self.ids[i] if replaced and self.ids is not None else new_id
            if ids is not None:
                ids += self.ids[done:i]   # type: ignore[index]   # not None when ids is not
                if part_id is None:
                    ids = None
                else:
                    ids.append(part_id)
            done = i + 1 if replaced else i
            if tail not in tail_index:
                tail_index[tail] = len(tail_index)
                size_change += sys.getsizeof(tail)
            tail_left = tail_left or (replaced and self.tail_refs[i] != tail_index[tail])
            names.append(name)
            own.append(part_own)
            refs.append(tail_index[tail])
            values += part_values
            size_change += row_bytes(name) + 8 * width
            own_size += expanded_nbytes((part_own,))
        names += self.names[done:]
        own += base_own[done:]
        refs += self.tail_refs[done:]
        values += self.flat_values[done * width:]
        if ids is not None:
            ids += self.ids[done:]   # type: ignore[index]
        tails = tuple(tail_index)
        if tail_left:
            refs, tails, size_change = _without_unused_tails(refs, tails, size_change)
        size_change -= self.own_nbytes
        tolerant = self.tolerant | tolerant
        if len(names) <= 2 * BLOCK:
            block = Block(tuple(names), OwnBytes.written(tuple(own), own_size, self.own, hot), refs, tuple(values),
                          tails, ids, _among(tails, tolerant))
            return [block], size_change + block.own_nbytes
        return _split(names, own, refs, values, tails, ids, tolerant, self.own, hot, width, size_change)

    def without(self, drop: Iterable[int], width: int, hot: HotOwnBytes | None) -> tuple[Block | None, int]:
        """This block without the partitions at positions `drop`; None when none is left. Returns it with the change
        of size_bytes."""
        names, own, refs = list(self.names), list(self.own.items(hot)), array("I", self.tail_refs)
        values = list(self.flat_values)
        ids = array("q", self.ids) if self.ids is not None else None
        size_change, own_size = -self.own_nbytes, self.own.expanded_nbytes()
        for i in sorted(set(drop), reverse=True):   # from the end, so that the positions still to drop stay put
            size_change -= row_bytes(names[i]) + 8 * width
            own_size -= expanded_nbytes((own[i],))
            del names[i], own[i], refs[i], values[i * width:(i + 1) * width]
            if ids is not None:
                del ids[i]
        if not names:
            return None, size_change - sum(sys.getsizeof(t) for t in self.tails)
        refs, tails, size_change = _without_unused_tails(refs, self.tails, size_change)
        block = Block(tuple(names), OwnBytes.written(tuple(own), own_size, self.own, hot), refs, tuple(values), tails,
                      ids, _among(tails, self.tolerant))
        return block, size_change + block.own_nbytes


# what a write to a set of no partitions merges into
EMPTY_BLOCK = Block((), OwnBytes(()), array("I"), (), (), array("q"), frozenset(), 0)


def packed_block(rows: Sequence[tuple[str, bytes, bytes, tuple[str, ...], int | None]],
                 same_tail: dict[bytes, bytes], tolerant: AbstractSet[bytes]) -> Block:
    """A block of rows a load read (sorted by name), its own bytes packed at once. `same_tail` maps each tail to one
    object equal to it, shared by the set's blocks; `tolerant` holds the tails that need the tolerant decoder."""
    tail_index: dict[bytes, int] = {}
    refs = array("I")
    for row in rows:
        tail = same_tail.setdefault(row[2], row[2])
        refs.append(tail_index.setdefault(tail, len(tail_index)))
    ids = [row[4] for row in rows]
    tails = tuple(tail_index)
    return Block(tuple(row[0] for row in rows), OwnBytes.packed([row[1] for row in rows]), refs,
                 tuple(value for row in rows for value in row[3]), tails,
                 None if None in ids else array("q", ids), _among(tails, tolerant))   # type: ignore[arg-type]


def _split(names: list[str], own: list[bytes], refs: array[int], values: list[str], tails: tuple[bytes, ...],
           ids: array[int] | None, tolerant: AbstractSet[bytes], base: OwnBytes, hot: HotOwnBytes | None, width: int,
           size_change: int) -> tuple[list[Block], int]:
    """Rows too many for one block, as blocks of about BLOCK each, each with the tails it uses (found from its
    rows alone, so that a table whose every partition has a tail of its own splits in linear time)."""
    blocks = []
    size_change -= sum(map(sys.getsizeof, tails))
    for start in range(0, len(names), BLOCK):
        end = start + BLOCK
        items = tuple(own[start:end])
        piece_refs, piece_tails = _used_tails(refs[start:end], tails)
        size_change += sum(map(sys.getsizeof, piece_tails))
        blocks.append(Block(tuple(names[start:end]), OwnBytes.written(items, expanded_nbytes(items), base, hot),
                            piece_refs,
                            tuple(values[start * width:end * width]), piece_tails,
                            None if ids is None else ids[start:end], _among(piece_tails, tolerant)))
        size_change += blocks[-1].own_nbytes
    return blocks, size_change


def _among(tails: tuple[bytes, ...], tolerant: AbstractSet[bytes]) -> frozenset[bytes]:
    """Those of `tails` that are `tolerant`."""
    return frozenset(tail for tail in tails if tail in tolerant) if tolerant else frozenset()


def _without_unused_tails(refs: array[int], tails: tuple[bytes, ...], size_change: int
                          ) -> tuple[array[int], tuple[bytes, ...], int]:
    """(refs, tails, size_change) without the tails no row refers to."""
    used_refs, used = _used_tails(refs, tails)
    if len(used) != len(tails):
        size_change -= sum(map(sys.getsizeof, tails)) - sum(map(sys.getsizeof, used))
    return used_refs, used, size_change


def _used_tails(refs: array[int], tails: tuple[bytes, ...]) -> tuple[array[int], tuple[bytes, ...]]:
    """(refs, tails) with only the tails some ref names, renumbered: C-speed passes over the refs, and a step per
    tail used, not per tail held."""
    if len(tails) == 1:
        return refs, tails
    used = sorted(set(refs))
    if len(used) == len(tails):
        return refs, tails
    renumbered = {old: new for new, old in enumerate(used)}
    return array("I", map(renumbered.__getitem__, refs)), tuple(map(tails.__getitem__, used))


def row_bytes(name: str) -> int:
    """One partition's share of a block's memory but its values' slots and its own bytes: its name, and its slots
    in the other arrays."""
    return sys.getsizeof(name) + ROW_SLOT_BYTES


def _unpickled(names: tuple[str, ...], own: OwnBytes, refs: array[int], flat_values: tuple[str, ...],
               tails: tuple[bytes, ...], ids: array[int] | None, tolerant: frozenset[bytes], own_nbytes: int) -> Block:
    return Block(names, own, refs, tuple(map(sys.intern, flat_values)), tails, ids, tolerant, own_nbytes)
