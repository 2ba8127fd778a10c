"""A client connection, and the reading of one request from it under the server's limits.

A request is read whole and checked before anything decodes it (wire_check.MessageCheck), either from what the
connection loop has buffered (`Connection.buffered_request`, Incomplete when more must arrive) or from the socket
itself, blocking (`SocketReader.read_request`, which enforces the idle and request timeouts). An unframed request's
walk is kept with the connection while its bytes arrive, and handed on with them to the worker that reads the rest,
so each byte is walked once.
"""
from __future__ import annotations

import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from thriftpy2.transport import TTransportException

from hmsproxy.rpc.wire_check import MalformedRequest, MessageCheck, MessageWalk

if TYPE_CHECKING:   # dispatch.py's processor, which the tiers answer with
    from hmsproxy.rpc.dispatch import MetastoreProcessor

RECV_BYTES = 65536   # the most one receive asks for: requests are read in pieces, never by their declared size
# Requests holding more values than this are decoded and answered a few at a time (max_large_requests), on
# worker threads: decoding takes about 200 bytes per value, so the ones in flight together stay within a known
# ceiling.
LARGE_REQUEST_VALUES = 100_000


class MessageTooLarge(TTransportException):
    pass


class ClientTooSlow(TTransportException):
    """Idle past the idle timeout, a request not complete within the request timeout, or a reply not taken."""

    @classmethod
    def idle(cls, idle_timeout_s: float) -> ClientTooSlow:
        return cls(message=f"no request for {idle_timeout_s:g} s")

    @classmethod
    def request(cls, request_timeout_s: float) -> ClientTooSlow:
        return cls(message=f"request not complete within {request_timeout_s:g} s")


class IdleEvicted(TTransportException):
    """Closed for a new connection while every slot was taken: it had been idle longest."""

    @classmethod
    def after(cls, idle_s: float) -> IdleEvicted:
        return cls(message=f"idle for {idle_s:.1f} s, and every connection slot taken")


class Incomplete(Exception):
    """The buffered bytes end before the request does."""


@dataclass(frozen=True)
class Request:
    """One request's bytes, checked, and what the check saw in them."""
    message: bytes
    values: int             # how many values it holds
    container_keys: bool    # whether it holds a list- or set-keyed map with entries: only idl.py's decoder reads it


def _framed_request_in(data: bytearray, check: MessageCheck) -> tuple[Request, int]:
    """The framed request `data` starts with, and how many bytes of `data` it takes; Incomplete if `data` ends
    before it does."""
    if len(data) < 4:
        raise Incomplete
    size = _frame_size(data[:4], check)
    if len(data) < 4 + size:
        raise Incomplete
    return _request_in_frame(bytes(data[4:4 + size]), check), 4 + size


def _frame_size(header: bytes | bytearray, check: MessageCheck) -> int:
    size: int   # unpack's items are untyped; the annotation costs nothing at run time
    (size,) = struct.unpack("!i", header)
    if size > check.max_bytes:
        raise MessageTooLarge(message=f"request larger than {check.max_bytes} bytes")
    if size < 0:
        raise MalformedRequest(f"a frame of {size} bytes")
    return size


def _request_in_frame(frame: bytes, check: MessageCheck) -> Request:
    walk = check.walk()
    length = walk.advance(frame)
    if length is None:
        raise MalformedRequest("a message longer than its frame")
    return _walked(walk, frame, length)


def _walked(walk: MessageWalk, data: bytes | bytearray, length: int) -> Request:
    """The request a finished walk found at the start of `data`."""
    return Request(bytes(data[:length]), walk.values, walk.container_keys)


class SocketReader:
    """Reads requests off a blocking socket, in pieces of at most RECV_BYTES, keeping what arrived beyond a request
    for the next one.

    A request is walked as its bytes arrive, so one larger than the maximum (a huge length prefix, an endless list)
    is refused before it is held whole. No request may take longer than the request timeout from its first byte,
    and no connection may wait longer than the idle timeout for one."""

    def __init__(self, sock: socket.socket, idle_timeout_s: float, request_timeout_s: float) -> None:
        self._sock = sock
        self._idle_timeout_s = idle_timeout_s
        self._request_timeout_s = request_timeout_s
        self._request_deadline: float | None = None   # set by the first byte of a request
        self._buffer = bytearray()
        self._walk: MessageWalk | None = None

    def new_message(self, pending: bytearray, first_byte_at: float | None, walk: MessageWalk | None) -> None:
        """Starts a request: `pending` holds its first bytes if some arrived already, at `first_byte_at`, and `walk`
        is how far the connection loop walked them (None: not at all)."""
        self._buffer = pending
        self._walk = walk
        self._request_deadline = None if first_byte_at is None else first_byte_at + self._request_timeout_s

    def rest(self) -> bytearray:
        """What arrived beyond the request read last (a client that sent its next one early)."""
        rest, self._buffer = self._buffer, bytearray()
        return rest

    def read_request(self, framed: bool, check: MessageCheck) -> Request:
        """The next request (one message, checked)."""
        if framed:
            return _request_in_frame(self._read(_frame_size(self._read(4), check)), check)
        walk, self._walk = self._walk or check.walk(), None
        length = walk.advance(self._buffer)
        while length is None:   # walked on as its bytes arrive
            self._receive()
            length = walk.advance(self._buffer)
        request = _walked(walk, self._buffer, length)
        del self._buffer[:length]
        return request

    def _read(self, count: int) -> bytes:
        """Exactly `count` bytes (a frame, whose size was checked)."""
        while len(self._buffer) < count:
            self._receive()
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _receive(self) -> None:
        if self._request_deadline is None:
            self._sock.settimeout(self._idle_timeout_s)
        else:
            self._sock.settimeout(max(0.001, self._request_deadline - time.monotonic()))
        try:
            chunk = self._sock.recv(RECV_BYTES)
        except TimeoutError:
            raise (ClientTooSlow.idle(self._idle_timeout_s) if self._request_deadline is None
                   else ClientTooSlow.request(self._request_timeout_s)) from None
        except OSError as exc:
            raise TTransportException(TTransportException.END_OF_FILE, str(exc)) from None
        if not chunk:
            raise TTransportException(TTransportException.END_OF_FILE, "the client closed the connection")
        if self._request_deadline is None:
            self._request_deadline = time.monotonic() + self._request_timeout_s
        self._buffer += chunk


class SocketWriter:
    """The write side of a blocking connection: a reply must be taken within the idle timeout."""

    def __init__(self, sock: socket.socket, idle_timeout_s: float) -> None:
        self._sock = sock
        self._idle_timeout_s = idle_timeout_s

    def write(self, pieces: list[bytes], size: int) -> None:
        """Sends the pieces (`size` bytes together) in order, without joining them all (a listing is thousands of
        cached bytes objects)."""
        self._sock.settimeout(self._idle_timeout_s)
        try:
            if isinstance(self._sock, ssl.SSLSocket):   # no scatter-gather through TLS
                self._sock.sendall(b"".join(pieces))
            else:
                _send_pieces(self._sock, pieces, size)
        except TimeoutError:
            raise ClientTooSlow(message=f"reply not taken within {self._idle_timeout_s:g} s") from None
        except OSError as exc:
            raise TTransportException(TTransportException.END_OF_FILE, str(exc)) from None


# A cached listing is thousands of pieces of a few hundred bytes (a partition's own bytes, its table's shared
# tail). The kernel spends about 170 ns on each buffer of a scatter-gather send, more than copying a few hundred
# bytes costs, so small pieces are joined in groups, each sent while its copy is still in the CPU's cache: a
# 10,000-partition listing (20,000 pieces, 7.2 MB) then costs what sending one buffer costs, not twice that.
# Measuring a group (its pieces' sizes added up) costs twice what joining it does, so the groups of a reply whose
# pieces average under SMALL_PIECE_BYTES (a listing: a few hundred bytes) are joined unmeasured; a rare large piece
# among them is then copied once, which costs about what sending it does.
GROUP_PIECES = 512        # pieces joined into one buffer (about 180 KB of a listing)
JOINED_BYTES_MAX = 1 << 20   # a measured group holding more is sent as it is: copying large pieces saves nothing
SMALL_PIECE_BYTES = JOINED_BYTES_MAX // GROUP_PIECES


def _send_pieces(sock: socket.socket, pieces: list[bytes], size: int) -> None:
    measured = size > SMALL_PIECE_BYTES * len(pieces)
    for first in range(0, len(pieces), GROUP_PIECES):
        group = pieces[first:first + GROUP_PIECES]
        if len(group) > 1 and (not measured or sum(map(len, group)) <= JOINED_BYTES_MAX):
            sock.sendall(b"".join(group))
        else:
            _send_buffers(sock, group)


def _send_buffers(sock: socket.socket, group: list[bytes]) -> None:
    """Sends up to GROUP_PIECES buffers (under Linux's IOV_MAX of 1,024) by scatter-gather."""
    buffers: list[bytes | memoryview] = list(group)
    first = 0
    while first < len(buffers):
        sent = sock.sendmsg(buffers[first:])
        while first < len(buffers) and sent >= len(buffers[first]):   # past the buffers sent whole
            sent -= len(buffers[first])
            first += 1
        if sent:   # into the one sent in part
            buffers[first] = memoryview(buffers[first])[sent:]


@dataclass(eq=False)
class Connection:
    """A client connection: its socket, its processor, how it reads and writes, and its next request's bytes so
    far, wherever it is being served (the connection loop, or a worker thread)."""
    sock: socket.socket
    address: Any
    processor: MetastoreProcessor
    reader: SocketReader
    writer: SocketWriter
    pending: bytearray = field(default_factory=bytearray)   # received bytes of requests not answered yet
    first_byte_at: float | None = None      # when the first of them arrived
    idle_since: float = field(default_factory=time.monotonic)
    unsent: bytes = b""                     # the end of a reply the loop could not send without waiting
    walk: MessageWalk | None = None         # how far the unframed request `pending` starts with was walked

    def buffered_request(self, framed: bool, check: MessageCheck) -> tuple[Request, int]:
        """The request `pending` starts with, and how many of its bytes it takes; Incomplete if they end before it
        does. An unframed request's walk goes on from where the last call left it."""
        if framed:
            return _framed_request_in(self.pending, check)
        if self.walk is None:
            self.walk = check.walk()
        length = self.walk.advance(self.pending)
        if length is None:
            raise Incomplete
        return _walked(self.walk, self.pending, length), length

    def answered(self, consumed: int) -> None:
        """Drops the bytes of the request just answered; the next request's walk starts afresh."""
        del self.pending[:consumed]
        self.walk = None
