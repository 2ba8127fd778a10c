"""Checks the shape of one Thrift binary-protocol message before anything decodes it.

thriftpy2's C decoder trusts the bytes: a list header declaring two billion elements of type VOID makes it
loop without reading, and a few megabytes of empty structs become gigabytes of Python objects. Here the
message is walked once, without building objects, and refused (MalformedRequest) when:
- a type id is not one Thrift defines for values (VOID included);
- a container declares more elements than the message could hold at the smallest size of its element
  type, or a string more bytes than the message may have;
- structs and containers nest deeper than `max_depth`, or the message holds more than `max_objects`
  values in all (what bounds the memory its decoding takes).
The walk goes over the bytes in memory as they arrive (what the connection loop buffered, or what a worker
receives), so the real decoder then reads the message from memory. A struct or container whose bytes are all
there is stepped over in one go by plain recursive functions (a request's 100 partitions in half the time of
the resumable walk); anything they cannot vouch for, or that is not all there yet, is walked the careful,
resumable way, which refuses it or waits for more.
"""
from __future__ import annotations

import struct

STOP, BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = 0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
FIXED_SIZES = {BOOL: 1, BYTE: 1, DOUBLE: 8, I16: 2, I32: 4, I64: 8}
SMALLEST = {**FIXED_SIZES, STRING: 4, STRUCT: 1, MAP: 6, SET: 5, LIST: 5}   # bytes of the emptiest value
VERSION_MASK, VERSION_1 = 0xFFFF0000, 0x80010000
_SIZE = struct.Struct("!i")
_LIST_HEAD = struct.Struct("!bi")
_MAP_HEAD = struct.Struct("!bbi")
NESTED = frozenset({STRUCT, MAP, SET, LIST})


class MalformedRequest(Exception):
    pass


class MessageCheck:
    def __init__(self, max_bytes: int, max_depth: int, max_objects: int) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_objects = max_objects

    def walk(self) -> MessageWalk:
        """The check of the next message, to be fed its bytes as they arrive."""
        return MessageWalk(self)


class MessageWalk:
    """Walks one message over its bytes as they arrive: `advance(data)`, with `data` the message's bytes so far
    from its first, goes on from where the last call stopped and returns the message's length once it is whole
    (None until then). Only a value's whole bytes are stepped over, so a stop never falls inside one."""

    def __init__(self, check: MessageCheck) -> None:
        self._check = check
        self._pos = 0
        self._stack: list[list[int]] = []   # open structs and containers: [kind, depth of their values, ...]
        self._started = False
        self._budget = check.max_objects
        self.values = 0   # how many values the message holds, once whole
        self.container_keys = False   # whether it holds a map with list or set keys and entries (see idl.py)

    def advance(self, data: bytes | bytearray) -> int | None:
        if not self._started:
            body = self._header(data)
            if body is None:
                return None
            self._started = True
            self._stack.append([STRUCT, 1])   # the arguments
            self._pos = body
        stack, pos = self._stack, self._pos
        whole = min(len(data), self._check.max_bytes)   # what the steps taken here may reach
        while stack:
            frame = stack[-1]
            if frame[0] == STRUCT:
                pos, fields = _simple_fields_end(data, pos, whole)
                self._spend(fields)
                if self._fits(data, pos, 1) is None:   # (a STOP byte counts against the limit too)
                    break
                kind = data[pos]
                if kind == STOP:
                    stack.pop()
                    pos += 1
                    continue
                _check_type(kind)   # a struct or container, or a value not (all) there yet
                if self._fits(data, pos, 3) is None:
                    break
                stepped = _whole_value_end(data, pos + 3, kind, whole, frame[1], self._check.max_depth,
                                           self._budget - 1)
                if stepped is not None:
                    pos, values = stepped
                    self._spend(values + 1)
                    continue
                after = self._enter(data, kind, frame[1], pos + 3)   # past the type and the field id
                if after is None:
                    break
                self._spend(1)
                pos = after
            else:   # LIST/SET: [kind, depth, left, element]; MAP: [kind, depth, left (keys and values), key, value]
                if frame[2] == 0:
                    stack.pop()
                    continue
                kind = frame[3] if frame[0] != MAP or frame[2] % 2 == 0 else frame[4]
                if kind == STRING and (frame[0] != MAP or frame[3] == frame[4] == STRING):
                    pos = _strings_end(data, pos, frame, whole)   # the whole strings there, at once
                    if frame[2] == 0:
                        continue
                if kind in NESTED:   # (a request's partitions, each at once)
                    after = self._whole_values_end(data, pos, frame, whole)
                    if after != pos:   # a map's next one may be of the other kind
                        pos = after
                        continue
                if kind in FIXED_SIZES and frame[0] != MAP:   # a run of fixed-size elements, stepped at once
                    after = self._fits(data, pos, FIXED_SIZES[kind] * frame[2])
                    if after is None:
                        break
                    frame[2] = 0
                else:
                    after = self._enter(data, kind, frame[1], pos)
                    if after is None:
                        break
                    frame[2] -= 1
                pos = after
        self._pos = pos
        if stack:
            return None
        self.values = self._check.max_objects - self._budget
        return pos

    def _header(self, data: bytes | bytearray) -> int | None:
        """Where the message's argument struct starts, once its name and sequence id are there."""
        if len(data) < 4:
            return None
        (first,) = struct.unpack_from("!i", data)
        if first < 0:   # strict: version and type, then the name
            if (first & 0xFFFFFFFF) & VERSION_MASK != VERSION_1:
                raise MalformedRequest("unknown protocol version")
            if len(data) < 8:
                return None
            (name_size,) = struct.unpack_from("!i", data, 4)
            name_end = self._string_end(8, name_size)
        else:           # old clients: the name first, then the type byte
            name_end = self._string_end(4, first) + 1
        return self._fits(data, name_end, 4)   # the sequence id

    def _enter(self, data: bytes | bytearray, kind: int, depth: int, pos: int) -> int | None:
        """Steps over a value of `kind` at `pos` (a struct or container: over its header, its frame pushed)."""
        if kind in FIXED_SIZES:
            return self._fits(data, pos, FIXED_SIZES[kind])
        if kind == STRING:
            if self._fits(data, pos, 4) is None:
                return None
            (size,) = struct.unpack_from("!i", data, pos)
            end = self._string_end(pos + 4, size)
            return end if end <= len(data) else None
        if depth >= self._check.max_depth:   # (every kind was checked when its field or container header was read)
            raise MalformedRequest(f"values nested deeper than {self._check.max_depth}")
        if kind == STRUCT:
            self._stack.append([STRUCT, depth + 1])
            return pos
        if kind == MAP:
            after = self._fits(data, pos, 6)
            if after is None:
                return None
            key, value, count = struct.unpack_from("!bbi", data, pos)
            _check_type(key)
            _check_type(value)
            self.container_keys |= count > 0 and key in (LIST, SET)
            self._count(after, count, SMALLEST[key] + SMALLEST[value])
            self._stack.append([MAP, depth + 1, 2 * count, key, value])
            return after
        after = self._fits(data, pos, 5)
        if after is None:
            return None
        element, count = struct.unpack_from("!bi", data, pos)
        _check_type(element)
        self._count(after, count, SMALLEST[element])
        self._stack.append([kind, depth + 1, count, element])
        return after

    def _whole_values_end(self, data: bytes | bytearray, pos: int, frame: list[int], whole: int) -> int:
        """Steps over the structs or containers left in a container frame (frame[2] of its keys and values) that
        end by `whole`: where they end, counted off the frame. The first one that does not is left to the careful
        way."""
        left, max_depth = frame[2], self._check.max_depth
        while left:
            kind = frame[3] if frame[0] != MAP or left % 2 == 0 else frame[4]
            stepped = _whole_value_end(data, pos, kind, whole, frame[1], max_depth, self._budget)
            if stepped is None:
                break
            pos, values = stepped
            self._spend(values)
            left -= 1
        frame[2] = left
        return pos

    def _fits(self, data: bytes | bytearray, pos: int, size: int) -> int | None:
        """The position after `size` bytes at `pos`, or None when the data ends first."""
        end = pos + size
        if end > self._check.max_bytes:
            raise MalformedRequest(f"request larger than {self._check.max_bytes} bytes")
        return end if end <= len(data) else None

    def _string_end(self, start: int, size: int) -> int:
        if size < 0 or size > self._check.max_bytes - start:
            raise MalformedRequest(f"a string of {size} bytes does not fit in the request")
        return start + size

    def _count(self, start: int, count: int, smallest: int) -> None:
        if count < 0 or count * smallest > self._check.max_bytes - start:
            raise MalformedRequest(f"a container of {count} elements does not fit in the request")
        self._spend(count)

    def _spend(self, values: int) -> None:
        self._budget -= values
        if self._budget < 0:
            raise MalformedRequest(f"more than {self._check.max_objects} values in one request")


def _simple_fields_end(data: bytes | bytearray, pos: int, whole: int) -> tuple[int, int]:
    """Steps over the struct fields from `pos` on that are strings or fixed-size values ending by `whole` (most
    fields): where they end and how many they were. The walk takes any other field its careful way."""
    fields = 0
    while pos + 3 <= whole:
        kind = data[pos]
        if kind == STRING:
            string_end = _whole_string_end(data, pos + 3, whole)
            if string_end is None:
                break
            end = string_end
        elif kind in FIXED_SIZES:
            end = pos + 3 + FIXED_SIZES[kind]
            if end > whole:
                break
        else:
            break
        pos = end
        fields += 1
    return pos, fields


def _whole_value_end(data: bytes | bytearray, pos: int, kind: int, whole: int, depth: int, max_depth: int,
                     budget: int) -> tuple[int, int] | None:
    """Steps over a whole struct or container at `pos` (past its field header), entered at `depth`, in one go:
    where it ends and how many values it holds, as the careful way counts them. None when it does not end by
    `whole`, holds more than `budget` values, or holds anything the careful way must look at (a type id Thrift
    lacks, nesting past `max_depth`, a negative size or count, a list-keyed map): that way then walks it, and
    refuses it or waits for more. The budget bounds the work as it bounds the careful way's."""
    if depth >= max_depth:
        return None
    if kind == STRUCT:
        return _whole_fields_end(data, pos, whole, depth + 1, max_depth, budget)
    if kind in (LIST, SET):
        if pos + 5 > whole:
            return None
        element, count = _LIST_HEAD.unpack_from(data, pos)
        pos += 5
        if count < 0 or count > budget or element not in SMALLEST:
            return None
        if element == STRING:
            end = _strings_run_end(data, pos, count, whole)
            return None if end is None else (end, count)
        if element in FIXED_SIZES:
            end = pos + FIXED_SIZES[element] * count
            return (end, count) if end <= whole else None
        return _items_end(data, pos, (element,), count, whole, depth + 1, max_depth, budget)
    if kind == MAP:
        if pos + 6 > whole:
            return None
        key, item, count = _MAP_HEAD.unpack_from(data, pos)
        pos += 6
        if count < 0 or count > budget or key not in SMALLEST or item not in SMALLEST or key in (LIST, SET):
            return None
        if key == item == STRING:
            end = _strings_run_end(data, pos, 2 * count, whole)
            return None if end is None else (end, count)
        return _items_end(data, pos, (key, item), count, whole, depth + 1, max_depth, budget)
    return None


def _items_end(data: bytes | bytearray, pos: int, kinds: tuple[int, ...], count: int, whole: int, depth: int,
               max_depth: int, budget: int) -> tuple[int, int] | None:
    """_whole_value_end for a container's `count` elements (or entries: a key and a value of `kinds`)."""
    values = count
    for _ in range(count):   # at most `budget` turns
        for kind in kinds:
            stepped = _one_value_end(data, pos, kind, whole, depth, max_depth, budget - values)
            if stepped is None:
                return None
            pos, inner = stepped
            values += inner
    return pos, values


def _whole_fields_end(data: bytes | bytearray, pos: int, whole: int, depth: int, max_depth: int, budget: int
                      ) -> tuple[int, int] | None:
    """_whole_value_end for a struct's fields from `pos` to its STOP, their values at `depth`."""
    values = 0
    while pos < whole:
        kind = data[pos]
        if kind == STOP:
            return pos + 1, values
        if values >= budget:
            return None
        if kind == STRING:   # most fields: stepped here, without a call (past `whole`, the loop ends)
            if pos + 7 > whole or (size := _SIZE.unpack_from(data, pos + 3)[0]) < 0:
                return None
            pos, values = pos + 7 + size, values + 1
            continue
        if kind in FIXED_SIZES:
            pos, values = pos + 3 + FIXED_SIZES[kind], values + 1
            continue
        stepped = _whole_value_end(data, pos + 3, kind, whole, depth, max_depth, budget - values - 1)
        if stepped is None:
            return None
        pos, inner = stepped
        values += inner + 1
    return None


def _one_value_end(data: bytes | bytearray, pos: int, kind: int, whole: int, depth: int, max_depth: int,
                   budget: int) -> tuple[int, int] | None:
    """_whole_value_end for a value of any kind: where it ends by `whole` and the values inside it."""
    if kind == STRING:
        end = _whole_string_end(data, pos, whole)
        return None if end is None else (end, 0)
    if kind in FIXED_SIZES:
        end = pos + FIXED_SIZES[kind]
        return (end, 0) if end <= whole else None
    return _whole_value_end(data, pos, kind, whole, depth, max_depth, budget)


def _strings_run_end(data: bytes | bytearray, pos: int, count: int, whole: int) -> int | None:
    """The end of `count` strings in a row from `pos`, or None when they do not end by `whole` or one's length is
    negative."""
    for _ in range(count):
        end = _whole_string_end(data, pos, whole)
        if end is None:
            return None
        pos = end
    return pos


def _strings_end(data: bytes | bytearray, pos: int, frame: list[int], whole: int) -> int:
    """Steps over the strings left in a container frame (frame[2] of them) that end by `whole`: where they end,
    counted off the frame."""
    left = frame[2]
    while left:
        end = _whole_string_end(data, pos, whole)
        if end is None:
            break
        pos = end
        left -= 1
    frame[2] = left
    return pos


def _whole_string_end(data: bytes | bytearray, pos: int, whole: int) -> int | None:
    """The end of the string whose length is at `pos`, or None when it does not end by `whole` or its length is
    negative (both left to the careful way, which tells the two apart)."""
    if pos + 4 > whole:
        return None
    (size,) = _SIZE.unpack_from(data, pos)
    end = pos + 4 + size
    return end if size >= 0 and end <= whole else None


def _check_type(kind: int) -> None:
    if kind not in SMALLEST:
        raise MalformedRequest(f"type id {kind} is not a Thrift value type")
