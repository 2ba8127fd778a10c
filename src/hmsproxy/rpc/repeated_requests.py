"""Requests clients repeat: the same call with the same arguments, answered again from bytes held ready.

Spark asks for the same table several times while it plans one query, and every planner asks for the same
popular tables all day. Such a request differs from one answered before only in its sequence id (and nothing in
a get_table answer depends on who asks), so its reply is the one before with that id in place, as long as the
cache holds that answer still (its Held is current: the table's entry was not replaced, dropped or evicted since;
writes to other tables change nothing). The server remembers the latest such requests by their
bytes without the id; a repeat then skips the walk of its bytes (the same bytes passed it), their decoding and
the cache lookup.

The sequence id's place is found by the header rules the walk applies, so bytes that match a remembered request
are that request: the same header, so the id in the same place, and everything else equal.
"""
from __future__ import annotations

import struct
import threading
from typing import NamedTuple

from hmsproxy.store.ready import Held

MAX_REQUEST_BYTES = 1024   # longer requests are not remembered: get_table's take a few dozen bytes
MAX_ANSWER_BYTES = 262144  # nor longer answers (a filter's ~350 partitions)
# What the remembered answers hold at most, all together: the oldest are forgotten first to stay within it. A
# get_table answer is the cache's own bytes, a filter's a copy: either way at most this much beyond the cache's
# own bound, whatever the number of requests remembered.
MAX_ANSWERS_BYTES = 16 << 20


class Repeat(NamedTuple):
    """What a remembered request's repeats are answered with."""
    api: str
    arguments: dict[str, object] | None   # for the audit log, when there is one
    answer: bytes                      # the `success` value's bytes (the cache's own object, not a copy)
    held: Held                         # current while the store still answers with `answer`


def _seqid_at(data: bytes | bytearray, start: int) -> int | None:
    """Where the sequence id of the message starting at `start` begins; None unless the header is whole."""
    if len(data) < start + 8:
        return None
    first, second = struct.unpack_from("!ii", data, start)
    if first < 0:   # strict: version and type, the name's size, the name, the id
        at = start + 8 + second
        return at if second >= 0 and len(data) >= at + 4 else None
    at = start + 5 + first   # old style: the name's size, the name, the type, the id
    return at if len(data) >= at + 4 else None


class RepeatedRequests:
    """The remembered requests of all connections. Looked up without a lock (one dict read); changed under one."""

    def __init__(self, remembered: int) -> None:
        self._remembered = remembered   # the most requests kept; the oldest is forgotten first
        self._kept: dict[bytes, Repeat] = {}   # request bytes without the sequence id -> its answer
        self._answers_bytes = 0                # of the answers kept
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def find(self, data: bytes | bytearray, framed: bool) -> tuple[Repeat, bytes] | None:
        """The remembered answer when `data` holds exactly one request (in its frame when `framed`) and that request
        was remembered, and the request's sequence id; None otherwise."""
        start = 4 if framed else 0
        if not self._kept or len(data) > start + MAX_REQUEST_BYTES:
            return None
        if framed and (len(data) < 4 or struct.unpack_from("!i", data)[0] != len(data) - 4):
            return None
        at = _seqid_at(data, start)
        if at is None:
            return None
        repeat = self._kept.get(bytes(data[start:at]) + data[at + 4:])
        return None if repeat is None else (repeat, bytes(data[at:at + 4]))

    def remember(self, request: bytes, repeat: Repeat) -> None:
        """Remembers one whole request (one message, no frame) and its answer."""
        if not self._remembered or len(request) > MAX_REQUEST_BYTES or len(repeat.answer) > MAX_ANSWER_BYTES:
            return
        at = _seqid_at(request, 0)
        if at is None:
            return
        key = request[:at] + request[at + 4:]
        with self._lock:
            self._forget(key)
            while self._kept and (len(self._kept) >= self._remembered
                                  or self._answers_bytes + len(repeat.answer) > MAX_ANSWERS_BYTES):
                self._forget(next(iter(self._kept)))
            self._kept[key] = repeat
            self._answers_bytes += len(repeat.answer)

    def answers_bytes(self) -> int:
        return self._answers_bytes

    def _forget(self, key: bytes) -> None:
        forgotten = self._kept.pop(key, None)
        if forgotten is not None:
            self._answers_bytes -= len(forgotten.answer)
