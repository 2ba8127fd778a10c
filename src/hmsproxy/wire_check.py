"""Reads one Thrift binary-protocol message off a transport and checks its shape before anything decodes it.

thriftpy2's C decoder trusts the bytes: a list header declaring two billion elements of type VOID makes it
loop without reading, and a few megabytes of empty structs become gigabytes of Python objects. Here the
message is walked once, without building objects, and refused (MalformedRequest) when:
- a type id is not one Thrift defines for values (VOID included);
- a container declares more elements than the message could hold at the smallest size of its element
  type, or a string more bytes than the message may have;
- structs and containers nest deeper than `max_depth`, or the message holds more than `max_objects`
  values in all (what bounds the memory its decoding takes).
The bytes read are returned whole, for the real decoder to read from memory. A message already in memory (what
the connection loop buffered) is walked in place: `message_in`.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

STOP, BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = 0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
FIXED_SIZES = {BOOL: 1, BYTE: 1, DOUBLE: 8, I16: 2, I32: 4, I64: 8}
SMALLEST = {**FIXED_SIZES, STRING: 4, STRUCT: 1, MAP: 6, SET: 5, LIST: 5}   # bytes of the emptiest value
VERSION_MASK, VERSION_1 = 0xFFFF0000, 0x80010000


class MalformedRequest(Exception):
    pass


class Incomplete(Exception):
    """The bytes in memory end before the message does."""


class _Reader:
    """Takes a message's bytes from a reading function (a socket), keeping them."""

    def __init__(self, read: Callable[[int], bytes], max_bytes: int) -> None:
        self._read = read
        self._max_bytes = max_bytes
        self.chunks: list[bytes] = []
        self.size = 0

    def take(self, count: int) -> bytes:
        if self.size + count > self._max_bytes:
            raise MalformedRequest(f"request larger than {self._max_bytes} bytes")
        data = b""
        while len(data) < count:
            data += self._read(count - len(data))
        self.chunks.append(data)
        self.size += count
        return data

    def room(self) -> int:
        return self._max_bytes - self.size


class _BufferReader:
    """Takes a message's bytes from memory: only positions move (the message is a prefix of the buffer)."""

    def __init__(self, data: bytes | bytearray, max_bytes: int) -> None:
        self._data = data
        self._end = min(len(data), max_bytes)
        self._max_bytes = max_bytes
        self.size = 0

    def take(self, count: int) -> bytes | bytearray:
        start, self.size = self.size, self.size + count
        if self.size > self._end:
            if self.size > self._max_bytes:
                raise MalformedRequest(f"request larger than {self._max_bytes} bytes")
            raise Incomplete
        return self._data[start:self.size]

    def room(self) -> int:
        return self._max_bytes - self.size


Source = _Reader | _BufferReader


class MessageCheck:
    def __init__(self, max_bytes: int, max_depth: int, max_objects: int) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_objects = max_objects

    def read_message(self, read: Callable[[int], bytes]) -> tuple[bytes, int]:
        """The next message's bytes, checked (see the module docstring), and how many values it holds;
        MalformedRequest if refused."""
        reader = _Reader(read, self.max_bytes)
        values = self._walk(reader)
        return b"".join(reader.chunks), values

    def message_in(self, data: bytes | bytearray) -> tuple[int, int]:
        """The length of the message `data` starts with, checked, and how many values it holds; Incomplete if the
        data ends first, MalformedRequest if refused."""
        reader = _BufferReader(data, self.max_bytes)
        values = self._walk(reader)
        return reader.size, values

    def _walk(self, reader: Source) -> int:
        first = struct.unpack("!i", reader.take(4))[0]
        if first < 0:   # strict: version and type, then the name
            if (first & 0xFFFFFFFF) & VERSION_MASK != VERSION_1:
                raise MalformedRequest("unknown protocol version")
            self._string(reader)
        else:           # old clients: the name first, then the type byte
            self._bytes(reader, first)
            reader.take(1)
        reader.take(4)  # sequence id
        budget = [self.max_objects]
        self._value(reader, STRUCT, 0, budget)
        return self.max_objects - budget[0]

    def _bytes(self, reader: Source, length: int) -> None:
        if length < 0 or length > reader.room():
            raise MalformedRequest(f"a string of {length} bytes does not fit in the request")
        reader.take(length)

    def _string(self, reader: Source) -> None:
        self._bytes(reader, struct.unpack("!i", reader.take(4))[0])

    def _count(self, reader: Source, count: int, element_types: tuple[int, ...], budget: list[int]) -> None:
        smallest = sum(SMALLEST[t] for t in element_types)
        if count < 0 or count * smallest > reader.room():
            raise MalformedRequest(f"a container of {count} elements does not fit in the request")
        budget[0] -= count
        if budget[0] < 0:
            raise MalformedRequest(f"more than {self.max_objects} values in one request")

    def _value(self, reader: Source, kind: int, depth: int, budget: list[int]) -> None:
        if kind in FIXED_SIZES:
            reader.take(FIXED_SIZES[kind])
        elif kind == STRING:
            self._string(reader)
        elif kind in (STRUCT, MAP, SET, LIST):
            if depth >= self.max_depth:
                raise MalformedRequest(f"values nested deeper than {self.max_depth}")
            if kind == STRUCT:
                self._struct(reader, depth + 1, budget)
            elif kind == MAP:
                key, value = reader.take(2)
                _check_type(key)
                _check_type(value)
                count = struct.unpack("!i", reader.take(4))[0]
                self._count(reader, count, (key, value), budget)
                for _ in range(count):
                    self._value(reader, key, depth + 1, budget)
                    self._value(reader, value, depth + 1, budget)
            else:
                element = reader.take(1)[0]
                _check_type(element)
                count = struct.unpack("!i", reader.take(4))[0]
                self._count(reader, count, (element,), budget)
                for _ in range(count):
                    self._value(reader, element, depth + 1, budget)
        else:
            raise MalformedRequest(f"type id {kind} is not a Thrift value type")

    def _struct(self, reader: Source, depth: int, budget: list[int]) -> None:
        while True:
            kind = reader.take(1)[0]
            if kind == STOP:
                return
            _check_type(kind)
            reader.take(2)   # field id
            budget[0] -= 1
            if budget[0] < 0:
                raise MalformedRequest(f"more than {self.max_objects} values in one request")
            self._value(reader, kind, depth, budget)


def _check_type(kind: int) -> None:
    if kind not in SMALLEST:
        raise MalformedRequest(f"type id {kind} is not a Thrift value type")
