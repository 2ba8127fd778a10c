"""A table's partitions in a compact, immutable form.

Each partition is kept as Thrift bytes in two pieces: its own fields (values, parameters, times and the
start of its storage descriptor with the location) and a tail, which the partitions of a table almost always
share and which is therefore stored once: the rest of the storage descriptor, then the database, table and
catalog names. Thrift decoders accept fields in any order, so the two pieces concatenate to a valid Partition
struct. Partition values are interned so that every partition with ds=2024-01-01 shares one string, and kept
in one flat tuple (FlatValues). The own bytes rest packed while their table is not being read (OwnBytes).

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
from typing import Any

from hmsproxy.codec import EncodedList
from hmsproxy.names import make_partition_name
from hmsproxy.partition_bytes import EncodedPartitions, decode_partition, encode_partition
from hmsproxy.partition_filter import PartitionFilter
from hmsproxy.store.cache.own_bytes import OwnBytes, expanded_nbytes
from hmsproxy.store.cache.value_index import ValueIndex
from hmsproxy.store.domain import PartitionBatch, batch_scan, cut_batch


class FlatValues(Sequence[tuple[str, ...]]):
    """Each partition's values as a tuple, read from one flat tuple of them all: a pointer per value rather than a
    tuple object per partition (about 50 bytes less each)."""

    __slots__ = ("flat", "width")

    def __init__(self, flat: tuple[str, ...], width: int) -> None:
        self.flat = flat
        self.width = width

    def __len__(self) -> int:
        return len(self.flat) // self.width if self.width else 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.flat[index * self.width:(index + 1) * self.width]

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return zip(*[iter(self.flat)] * self.width) if self.width else iter(())

    def column(self, key: int) -> tuple[str, ...]:
        """Every partition's value of one key, in partition order."""
        return self.flat[key::self.width]


# Partitions up to which a drop changes a set in place of rebuilding it.
SMALL_CHANGE = 32

# A partition as a set keeps it: its values (interned), its own bytes, its tail, whether the tail needs the tolerant
# decoder (partition_bytes.encode_partition).
EncodedRow = tuple[tuple[str, ...], bytes, bytes, bool]


def encoded_rows(parts: Iterable[Any]) -> list[EncodedRow]:
    """The partitions as a set keeps them: what a write's cache update does per partition, which the write can have
    done ahead (while its commit runs)."""
    rows = []
    for part in parts:
        own, tail, needs_tolerant = encode_partition(part)
        rows.append((tuple(map(sys.intern, part.values)), own, tail, needs_tolerant))
    return rows


@dataclass(frozen=True)
class PartitionSet:
    keys: tuple[str, ...]
    names: tuple[str, ...] = ()                  # sorted
    own: OwnBytes = field(default_factory=lambda: OwnBytes(()))   # parallel to names
    tail_refs: array[int] = field(default_factory=lambda: array("I"))  # parallel: index into tails
    flat_values: tuple[str, ...] = ()            # each partition's values one after the other, interned strings
    tails: tuple[bytes, ...] = ()
    tolerant_tails: frozenset[bytes] = frozenset()  # tails holding list-keyed skew maps
    ids: array[int] | None = None                # parallel: PART_ID of each; None when not all are known
    index: ValueIndex = field(init=False, repr=False, compare=False)   # of `values`, built as filters ask
    known_size: int | None = field(default=None, repr=False, compare=False)   # size_bytes() but own, once counted

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", ValueIndex(self.values.column))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its arrays alone (prewarm's workers send sets): the index and the memos are built again
        where it is unpickled, and its values interned there."""
        return _unpickled, (self.keys, self.names, self.own, self.tail_refs, self.flat_values, self.tails,
                            self.tolerant_tails, self.ids, self.known_size)

    @functools.cached_property
    def values(self) -> FlatValues:
        """Each partition's values (parallel to names)."""
        return FlatValues(self.flat_values, len(self.keys))

    # ---- reads -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.names)

    @property
    def _values_bytes(self) -> int:
        """The slots of one partition's values in flat_values."""
        return 8 * len(self.keys)

    def index_of(self, name: str) -> int | None:
        i = bisect.bisect_left(self.names, name)
        return i if i < len(self.names) and self.names[i] == name else None

    def _decode(self, item: list[bytes]) -> Any:
        return decode_partition(item, self.tolerant_tails)

    def encoded(self, indexes: Sequence[int]) -> EncodedList:
        """The partitions at `indexes`, as their byte pieces: own bytes and shared tail, one after the other
        (gathered in C: no Python step per partition)."""
        return self._encoded(indexes, self.own.pick(indexes))

    def _encoded(self, indexes: Sequence[int], own: Sequence[bytes]) -> EncodedList:
        pieces = [b""] * (2 * len(indexes))
        pieces[0::2] = own
        pieces[1::2] = self._tails_of(indexes)
        return EncodedList(pieces, 2, self._decode)

    def _tails_of(self, indexes: Sequence[int]) -> Iterable[bytes]:
        if len(self.tails) == 1:   # the usual table: every partition shares one storage-descriptor tail
            return self.tails * len(indexes)
        return map(self.tails.__getitem__, map(self.tail_refs.__getitem__, indexes))

    def all(self, limit: int | None = None) -> EncodedList:
        count = len(self.names) if limit is None or limit < 0 else min(limit, len(self.names))
        pieces = [b""] * (2 * count)
        pieces[0::2] = self.own.items()[:count]
        pieces[1::2] = self._tails_of(range(count))
        return EncodedList(pieces, 2, self._decode, self.encoded_bytes if count == len(self.names) else None)

    @functools.cached_property
    def encoded_bytes(self) -> int:
        """The bytes of all its partitions as sent, counted once per set."""
        return self.own.total_length() + sum(map(len, map(self.tails.__getitem__, self.tail_refs)))

    def by_names(self, names: Sequence[str]) -> EncodedList:
        """The named partitions that exist, sorted by name (as the database answers)."""
        found = sorted({i for i in (self.index_of(n) for n in names) if i is not None})
        return self.encoded(found)

    def names_matching(self, partition_filter: PartitionFilter) -> list[str]:
        """The names of the partitions the filter matches, sorted."""
        return list(map(self.names.__getitem__, self.positions_matching(partition_filter)))

    def positions_matching(self, partition_filter: PartitionFilter) -> list[int]:
        """The positions of the partitions the filter matches, in order; the predicate tests only the candidates
        its plan selects from the index, and none where the plan selects exactly the matches."""
        candidates, exact = self.index.select(partition_filter.plan)
        matches, values = partition_filter.matches, self.values
        if candidates is None:
            return [i for i, partition_values in enumerate(values) if matches(partition_values)]
        return candidates if exact else [i for i in candidates if matches(values[i])]

    def matches_at_once(self, partition_filter: PartitionFilter, most: int) -> EncodedList | None:
        """The partitions the filter matches, when finding them costs no more than binary searches in the index,
        `most` steps, and reading a few chunks of packed bytes: the filter's plan selects exactly its matches from
        key values sorted already, among at most `most` candidates, and the set need not be expanded for them.
        None otherwise (positions_matching and encoded then find them)."""
        positions = self.index.selected_at_once(partition_filter.plan, most)
        own = None if positions is None else self.own.pick_without_expanding(positions)
        return None if positions is None or own is None else self._encoded(positions, own)

    def id_of(self, name: str) -> int | None:
        i = self.index_of(name)
        return None if i is None or self.ids is None else self.ids[i]

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
        if self.ids is None:
            return None
        ids = self.ids
        order, sorted_ids = self._id_order
        scan = batch_scan(size, predicate is not None)
        start = bisect.bisect_left(sorted_ids, from_id)
        end = len(order) if to_id < 0 else bisect.bisect_left(sorted_ids, to_id)
        keep = None if predicate is None else (lambda i: predicate(self.values[i]))
        chosen, next_id = cut_batch(order[start:min(end, start + scan + 1)], size, scan, keep, ids.__getitem__)
        items = [self.names[i] for i in chosen] if names_only else self.encoded(chosen)
        low, high = (sorted_ids[0], sorted_ids[-1]) if sorted_ids else (-1, -1)
        return PartitionBatch(items, next_id, low, high)

    def size_bytes(self) -> int:
        """Estimated memory: the bytes objects, the shared strings and the containers holding them, the own bytes
        packed (estimated for a set a write made, until it is packed). Counted once per set; a set changed
        in place carries its base's count, adjusted by the rows it changed."""
        return self._size_but_own() + self.own.nbytes()

    def _size_but_own(self) -> int:
        if self.known_size is None:
            rows = sum(map(_row_bytes, self.names)) + len(self.names) * self._values_bytes
            object.__setattr__(self, "known_size", rows + sum(sys.getsizeof(t) for t in self.tails))
        assert self.known_size is not None
        return self.known_size

    # ---- writes (each returns a new set) -----------------------------------------------------------

    def with_partitions(self, parts: Sequence[Any], new_ids: Mapping[str, int] | None = None) -> PartitionSet:
        """Adds or replaces partitions (matched by name). A replaced partition keeps its id; an added one takes
        its id from `new_ids` (by name), else the set's ids become unknown."""
        return self.with_encoded(encoded_rows(parts), new_ids)

    def with_encoded(self, encoded: Sequence[EncodedRow], new_ids: Mapping[str, int] | None = None) -> PartitionSet:
        """with_partitions of partitions already encoded (`encoded_rows`). The new rows are merged into the sorted
        arrays, which are copied a run at a time: a write costs Python work for the partitions it brings, and for
        the table only a copy of its arrays."""
        rows: dict[str, tuple[bytes, bytes, tuple[str, ...]]] = {}
        tolerant = set(self.tolerant_tails)
        for part_values, part_own, tail, needs_tolerant in encoded:   # a later one of a name wins, as a later write
            if needs_tolerant:
                tolerant.add(tail)
            rows[make_partition_name(self.keys, part_values)] = (part_own, tail, part_values)
        tail_index = {tail: i for i, tail in enumerate(self.tails)}
        names: list[str] = []
        own: list[bytes] = []
        refs = array("I")
        values: list[str] = []   # flat, as flat_values
        width = len(self.keys)
        ids: array[int] | None = array("q") if self.ids is not None else None
        size = self._size_but_own()
        base_own, own_size = self.own.items(), self.own.expanded_nbytes()
        done = 0   # rows of this set copied so far
        tail_left = False   # whether a replaced partition left a tail (which may now be unused)
        for name in sorted(rows):
            part_own, tail, part_values = rows[name]
            i = bisect.bisect_left(self.names, name, done)
            names += self.names[done:i]
            own += base_own[done:i]
            refs += self.tail_refs[done:i]
            values += self.flat_values[done * width:i * width]
            replaced = i < len(self.names) and self.names[i] == name
            if replaced:
                size -= _row_bytes(name) + self._values_bytes
                own_size -= expanded_nbytes((base_own[i],))
            part_id = self.ids[i] if replaced and self.ids is not None else (new_ids or {}).get(name)
            if ids is not None:
                ids += self.ids[done:i]   # type: ignore[index]   # not None when ids is not
                if part_id is None:
                    ids = None
                else:
                    ids.append(part_id)
            done = i + 1 if replaced else i
            if tail not in tail_index:
                tail_index[tail] = len(tail_index)
                size += sys.getsizeof(tail)
            tail_left = tail_left or (replaced and self.tail_refs[i] != tail_index[tail])
            names.append(name)
            own.append(part_own)
            refs.append(tail_index[tail])
            values += part_values
            size += _row_bytes(name) + self._values_bytes
            own_size += expanded_nbytes((part_own,))
        names += self.names[done:]
        own += base_own[done:]
        refs += self.tail_refs[done:]
        values += self.flat_values[done * width:]
        if ids is not None:
            ids += self.ids[done:]   # type: ignore[index]
        tails = tuple(tail_index)
        if tail_left:
            refs, tails, size = _drop_unused_tails(refs, tails, size)
        written = OwnBytes.written(tuple(own), own_size, self.own)
        return PartitionSet(self.keys, tuple(names), written, refs, tuple(values), tails,
                            frozenset(t for t in tails if t in tolerant), ids, known_size=size)

    def _rows(self) -> dict[str, Row]:
        ids: Iterable[int | None] = self.ids if self.ids is not None else [None] * len(self.names)
        return dict(zip(self.names, zip(self.own.items(), (self.tails[r] for r in self.tail_refs), self.values, ids)))

    def without(self, names: Iterable[str]) -> PartitionSet:
        drop = sorted({i for i in map(self.index_of, set(names)) if i is not None}, reverse=True)
        if len(drop) > SMALL_CHANGE:
            dropped = {self.names[i] for i in drop}
            rows = {n: row for n, row in self._rows().items() if n not in dropped}
            return _from_rows(self.keys, rows, set(self.tolerant_tails))
        kept_names, own, refs = list(self.names), list(self.own.items()), array("I", self.tail_refs)
        values = list(self.flat_values)
        width = len(self.keys)
        ids = array("q", self.ids) if self.ids is not None else None
        size, own_size = self._size_but_own(), self.own.expanded_nbytes()
        for i in drop:   # from the end, so that the positions still to drop stay where they were
            size -= _row_bytes(kept_names[i]) + self._values_bytes
            own_size -= expanded_nbytes((own[i],))
            del kept_names[i], own[i], refs[i], values[i * width:(i + 1) * width]
            if ids is not None:
                del ids[i]
        return PartitionSet(self.keys, tuple(kept_names), OwnBytes.written(tuple(own), own_size, self.own),
                            refs, tuple(values), self.tails, self.tolerant_tails, ids,
                            known_size=size)   # an unused tail stays until a rebuild


def _unpickled(keys: tuple[str, ...], names: tuple[str, ...], own: OwnBytes, refs: array[int],
               flat_values: tuple[str, ...], tails: tuple[bytes, ...], tolerant: frozenset[bytes],
               ids: array[int] | None, known_size: int | None) -> PartitionSet:
    return PartitionSet(keys, names, own, refs, tuple(map(sys.intern, flat_values)), tails, tolerant, ids,
                        known_size=known_size)


def _drop_unused_tails(refs: array[int], tails: tuple[bytes, ...], size: int
                       ) -> tuple[array[int], tuple[bytes, ...], int]:
    """(refs, tails, size) without the tails no row refers to (C-speed passes over the refs)."""
    used = sorted(set(refs))
    if len(used) == len(tails):
        return refs, tails, size
    renumbered = {old: new for new, old in enumerate(used)}
    size -= sum(sys.getsizeof(tails[i]) for i in set(range(len(tails))) - set(used))
    return array("I", map(renumbered.__getitem__, refs)), tuple(tails[i] for i in used), size


def _row_bytes(name: str) -> int:
    """One partition's share of a set's memory but its values' slots and its own bytes: its name, and its slots in
    the other arrays."""
    return sys.getsizeof(name) + ROW_SLOT_BYTES


ROW_SLOT_BYTES = 8 + 4 + 8   # a pointer in names, an entry of tail_refs and one of ids
Row = tuple[bytes, bytes, tuple[str, ...], int | None]   # own bytes, tail, values, id (None: not known)


class PartitionSetBuilder:
    """Adds partitions to a set chunk by chunk, encoding each chunk as it comes, so that a table's partitions
    never all exist as objects at once (prewarm of a million-partition table)."""

    def __init__(self, base: PartitionSet) -> None:
        self.keys = base.keys
        self._rows = base._rows()
        self._tolerant = set(base.tolerant_tails)

    def add(self, parts: Sequence[Any], ids: Sequence[int | None] | None = None) -> None:
        """Adds (or replaces) partitions; `ids` parallel to them, or None when the store gave none. Partitions the
        store read encoded (EncodedPartitions) are taken as they are."""
        encoded = parts if isinstance(parts, EncodedPartitions) else EncodedPartitions.of(parts)
        self._tolerant |= encoded.tolerant
        pieces = encoded.pieces
        for own, tail, values, part_id in zip(pieces[0::2], pieces[1::2], encoded.values,
                                              ids if ids is not None else [None] * len(encoded)):
            self._rows[make_partition_name(self.keys, values)] = (own, tail, tuple(map(sys.intern, values)), part_id)

    def build(self) -> PartitionSet:
        return _from_rows(self.keys, self._rows, self._tolerant)


def _from_rows(keys: tuple[str, ...], rows: dict[str, Row], tolerant: set[bytes]) -> PartitionSet:
    names = sorted(rows)
    tail_index: dict[bytes, int] = {}
    refs = array("I")
    for name in names:
        refs.append(tail_index.setdefault(rows[name][1], len(tail_index)))
    tails = tuple(tail_index)
    ids = [rows[n][3] for n in names]
    return PartitionSet(
        keys=keys, names=tuple(names), own=OwnBytes.packed([rows[n][0] for n in names]), tail_refs=refs,
        flat_values=tuple(itertools.chain.from_iterable(rows[n][2] for n in names)), tails=tails,
        tolerant_tails=frozenset(t for t in tails if t in tolerant),
        ids=None if None in ids else array("q", ids),   # type: ignore[arg-type]   # no None left
    )
