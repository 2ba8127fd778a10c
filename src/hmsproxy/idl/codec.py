"""Thrift binary encoding of single objects, and lists of objects kept as bytes.

The cache keeps partitions as bytes (a fraction of the memory of object graphs, and invisible to the
garbage collector) and the server can send such a list without building objects: see EncodedList.
"""
from __future__ import annotations

import io
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, overload

from thriftpy2.protocol.binary import write_val

# From the compiled modules themselves: they have no type stubs, so to mypy these classes are Any.
from thriftpy2.protocol.cybin.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TPayload, TType
from thriftpy2.transport.memory.cymemory import TCyMemoryBuffer

from hmsproxy.idl import LEGACY_CONTAINER_KINDS

P = TypeVar("P", bound=TPayload)   # an IDL struct


def encode(obj: TPayload) -> bytes:
    buffer = TCyMemoryBuffer()
    TCyBinaryProtocol(buffer).write_struct(obj)
    data: bytes = buffer.getvalue()   # typed by annotation, not cast(): no call on this hot path
    return data


def has_legacy_kinds(obj: object) -> bool:
    """Whether `obj` is a struct with a field Hive 2.3 declared as another container kind (a set where ours has a
    list): encode_for_every_hive writes it."""
    return type(obj).__name__ in LEGACY_CONTAINER_KINDS


def encode_for_every_hive(obj: TPayload) -> bytes:
    """encode(obj), with each LEGACY_CONTAINER_KINDS field of it written a second time in Hive 2.3's kind: a Thrift
    reader skips a field whose type is not the one its IDL declares, so a Hive 2.3 reader keeps the set and a Hive
    3/4 one the list, and each finds its required field."""
    copies = io.BytesIO()
    for fid, kind in LEGACY_CONTAINER_KINDS[type(obj).__name__].items():
        _, name, spec, _ = obj.thrift_spec[fid]
        value = getattr(obj, name)
        if value is not None:
            copies.write(struct.pack("!bh", kind, fid))
            write_val(copies, kind, value, spec)
    return encode(obj)[:-1] + copies.getvalue() + b"\x00"


def decode(cls: type[P], data: bytes, tolerant: bool = False) -> P:
    """Decodes one struct. `tolerant` takes the slower path that can read list-keyed maps (see idl.py)."""
    protocol = TCyBinaryProtocol(TCyMemoryBuffer(data))
    obj = cls()
    if tolerant:
        obj.read(protocol)
    else:
        protocol.read_struct(obj)
    return obj


Item = TypeVar("Item")   # what an EncodedList's items decode to


class EncodedList(Sequence[Item]):
    """A list of structs held as encoded bytes: `pieces`, of which each `width` consecutive ones concatenate to one
    struct; items decode on access.

    The Thrift processor sends the pieces as they are when such a list is the answer of a call, so a 100k-partition
    listing costs the kernel's copy of the cache's own bytes objects instead of building and serializing 100k
    objects."""

    def __init__(self, pieces: list[bytes], width: int, decode_item: Callable[[list[bytes]], Item],
                 byte_size: int | None = None) -> None:
        self.pieces = pieces
        self.width = width
        self._decode_item = decode_item
        self._byte_size = byte_size   # given where the producer knows it without adding up the pieces

    def byte_size(self) -> int:
        """The bytes of all its pieces."""
        if self._byte_size is None:
            self._byte_size = sum(map(len, self.pieces))
        return self._byte_size

    def __len__(self) -> int:
        return len(self.pieces) // self.width

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> EncodedList[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | EncodedList[Item]:
        width = self.width
        if isinstance(index, slice):
            positions = range(len(self))[index]
            if positions.step == 1:
                return EncodedList(self.pieces[positions.start * width:positions.stop * width], width,
                                   self._decode_item)
            return EncodedList([piece for i in positions for piece in self.pieces[i * width:(i + 1) * width]], width,
                               self._decode_item)
        position = range(len(self))[index]   # IndexError past the end, as a list
        return self._decode_item(self.pieces[position * width:(position + 1) * width])

    def list_bytes(self) -> bytes:
        """The whole list as a Thrift list of structs (its element type and count, then the structs): a small one
        sent as one value."""
        return b"".join((struct.pack("!bi", TType.STRUCT, len(self)), *self.pieces))

    def __iter__(self) -> Iterator[Item]:
        width = self.width
        return (self._decode_item(self.pieces[start:start + width]) for start in range(0, len(self.pieces), width))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __deepcopy__(self, memo: dict[int, object]) -> list[Item]:
        return list(self)
