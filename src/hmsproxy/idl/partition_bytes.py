"""A partition as Thrift bytes in two pieces: its own fields, and a tail that the partitions of a table share.

The own piece holds the partition's values, parameters, times and write id, and the start of its storage
descriptor with the location; the tail holds the rest of the storage descriptor, then the partition's
database, table and catalog names. Thrift decoders accept fields in any order, so the two concatenate to a
valid Partition struct. The cache stores partitions so (one tail per table, mostly), and the database store
reads them so for the cache without building a descriptor per partition (EncodedPartitions).
"""
from __future__ import annotations

import functools
import struct
from collections.abc import Container, Sequence

from hmsproxy.idl import hms
from hmsproxy.idl.codec import EncodedList, decode, encode
from hmsproxy.idl.fields import present

_SD_FIELD = b"\x0c\x00\x06"         # struct, field 6 (Partition.sd)
_LOCATION_FIELD = b"\x0b\x00\x02"   # string, field 2 (StorageDescriptor.location)


def encode_partition(part: hms.Partition) -> tuple[bytes, bytes, bool]:
    """(own bytes, shared tail, needs the tolerant decoder) of a canonical Partition the caller owns.

    The object is changed during encoding and restored before returning (cheaper than copies)."""
    sd, db_name, table_name, cat_name = part.sd, part.dbName, part.tableName, part.catName
    part.sd = part.dbName = part.tableName = part.catName = None
    try:
        own = encode(part)[:-1]  # drop the struct's STOP byte
    finally:
        part.sd, part.dbName, part.tableName, part.catName = sd, db_name, table_name, cat_name
    if sd is None:
        return own, descriptor_tail(None, db_name, table_name, cat_name), False
    location = sd.location
    sd.location = None
    try:
        tail = descriptor_tail(sd, db_name, table_name, cat_name)
    finally:
        sd.location = location
    return own + location_field(location), tail, needs_tolerant(sd)


def location_field(location: str | None) -> bytes:
    """The start of the storage descriptor, with its location if it has one."""
    if location is None:
        return _SD_FIELD
    data = location.encode("utf-8")
    return _SD_FIELD + _LOCATION_FIELD + struct.pack("!i", len(data)) + data


def descriptor_tail(sd: hms.StorageDescriptor | None, db_name: str | None, table_name: str | None,
                    cat_name: str | None) -> bytes:
    """The tail of a partition whose storage descriptor (its location left out) is `sd`, or that has none."""
    names = shared_names(db_name, table_name, cat_name) + b"\x00"   # then the end of the partition
    return names if sd is None else encode(sd)[:-1] + b"\x00" + names


def decode_partition(pieces: Sequence[bytes], tolerant_tails: Container[bytes]) -> hms.Partition:
    """The Partition of its own bytes and tail; a tail among `tolerant_tails` takes the tolerant decoder."""
    return decode(hms.Partition, b"".join(pieces), tolerant=pieces[1] in tolerant_tails)


def needs_tolerant(sd: hms.StorageDescriptor) -> bool:
    """Whether the descriptor holds a list-keyed skew map, which only the tolerant decoder reads (idl.py)."""
    return bool(sd.skewedInfo and sd.skewedInfo.skewedColValueLocationMaps)


@functools.lru_cache(maxsize=4096)
def shared_names(db_name: str | None, table_name: str | None, cat_name: str | None) -> bytes:
    """The fields dbName, tableName and catName of a Partition, encoded (without the struct's end); writeId is
    left out, which the IDL's default would otherwise set."""
    return encode(hms.Partition(dbName=db_name, tableName=table_name, catName=cat_name, writeId=None))[:-1]


class EncodedPartitions(EncodedList[hms.Partition]):
    """Partitions as (own, tail) byte pieces with their values, as the database store reads them for the cache;
    items decode to Partition objects on access, like any EncodedList."""

    def __init__(self, pieces: list[bytes], values: list[Sequence[str]], tolerant: set[bytes],
                 names: list[str] | None = None) -> None:
        super().__init__(pieces, 2, self._decode_pair)
        self.values = values
        self.tolerant = tolerant   # the tails that need the tolerant decoder
        self.names = names if names is not None else []   # the names the database gives them, where read

    def _decode_pair(self, item: list[bytes]) -> hms.Partition:
        return decode_partition(item, self.tolerant)

    @classmethod
    def of(cls, parts: Sequence[hms.Partition]) -> EncodedPartitions:
        """Partition objects (canonical, the caller's), encoded."""
        encoded = cls.none()
        for part in parts:
            own, tail, tolerant = encode_partition(part)
            encoded.pieces += (own, tail)
            encoded.values.append(present(part.values))
            if tolerant:
                encoded.tolerant.add(tail)
        return encoded

    @classmethod
    def joined(cls, parts: Sequence[EncodedPartitions]) -> EncodedPartitions:
        return cls([p for part in parts for p in part.pieces], [v for part in parts for v in part.values],
                   set().union(*(part.tolerant for part in parts)), [n for part in parts for n in part.names])

    def listing(self) -> EncodedList[hms.Partition]:
        """The partitions in the order of their names, as a listing answers: a plain EncodedList, which the
        dispatcher sends as the bytes it holds."""
        order = sorted(range(len(self.names)), key=self.names.__getitem__)
        pieces = [b""] * len(self.pieces)
        pieces[0::2] = map(self.pieces[0::2].__getitem__, order)
        pieces[1::2] = map(self.pieces[1::2].__getitem__, order)
        return EncodedList(pieces, 2, self._decode_pair)

    @classmethod
    def none(cls) -> EncodedPartitions:
        return cls([], [], set())
