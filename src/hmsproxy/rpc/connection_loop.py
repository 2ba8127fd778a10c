"""One thread that accepts connections, waits for requests on every idle one and answers those held ready as bytes.

With a thread per connection, every request wakes its own thread, which must take the interpreter lock from the
others: with eight busy clients the server spent more time handing the lock over than answering. Here one
thread reads whatever arrived on any connection and answers the requests the cache holds ready (a cached
get_table) right away, a batch per wakeup; a request that repeats one it answered so is answered from the reply
before (repeated_requests.py). Any other request - a database read, a write, a large request - is
handed with its connection to a worker thread (`Owner.hand_off`), which reads and answers it as before and gives
the connection back.

The loop enforces the same limits as the workers: the idle timeout, the request timeout from a request's first
byte, the request size and shape (read_request), and the size up to which it buffers a request itself. It knows
which connections are idle (waiting in it with no byte of a request received), so it is the one that picks a
connection to close for a new one when every slot is taken (`evict_idlest`).

It comes round at least every SWEEP_INTERVAL_S, connections or none, and notes when (`stalled_for`): a loop that
has not come round for long is stuck (blocked in something it called), and no client is served while it is, so
/healthz reports it (the liveness probe). A long call on a worker thread does not hold it.
"""
from __future__ import annotations

import logging
import queue
import selectors
import socket
import threading
import time
from typing import Protocol

from hmsproxy.rpc import tiers
from hmsproxy.rpc.connection import (
    RECV_BYTES,
    ClientTooSlow,
    Connection,
    IdleEvicted,
    Incomplete,
    MessageTooLarge,
)
from hmsproxy.rpc.wire_check import MalformedRequest, MessageCheck

log = logging.getLogger(__name__)
LOOP_BUFFER_BYTES = 65536   # a request still incomplete past this is left to a worker, which reads it blocking
SWEEP_INTERVAL_S = 0.1      # how often idle and slow connections are looked for
_ACCEPT = "accept"          # the listener's mark in the selector
ACCEPTS_PER_WAKEUP = 8


class Owner(Protocol):
    def accepted(self, sock: socket.socket, address: object) -> Connection | None:
        """A connection just accepted, for the loop to serve (None: the owner closed it or serves it itself)."""

    def hand_off(self, connection: Connection) -> None:
        """Serve the connection's next request on a worker thread, then give the connection back (add)."""

    def close(self, connection: Connection, reason: Exception | None) -> None:
        """Close the connection: the client left (None), or `reason` (counted and logged)."""


class ConnectionLoop:
    def __init__(self, owner: Owner, listener: socket.socket, check: MessageCheck, framed: bool,
                 idle_timeout_s: float, request_timeout_s: float, evict_idle_after_s: float) -> None:
        self._owner = owner
        self._listener = listener
        self._check = check
        self._framed = framed
        self._idle_timeout_s = idle_timeout_s
        self._request_timeout_s = request_timeout_s
        self._evict_idle_after_s = evict_idle_after_s
        self._selector = selectors.DefaultSelector()
        self._incoming: queue.SimpleQueue[Connection] = queue.SimpleQueue()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        listener.setblocking(False)
        self._selector.register(listener, selectors.EVENT_READ, _ACCEPT)
        self._stopping = threading.Event()
        self._came_round = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="thrift-connections", daemon=True)

    def start(self) -> None:
        self._came_round = time.monotonic()
        self._thread.start()

    def stalled_for(self) -> float:
        """Seconds since the loop last came round (waiting for sockets, at most SWEEP_INTERVAL_S at a time, counts
        as coming round): more than that only while it is busy or stuck in one wakeup's work. From any thread."""
        return time.monotonic() - self._came_round

    def stop(self) -> None:
        self._stopping.set()
        self._wake()
        self._thread.join(timeout=5)

    def add(self, connection: Connection) -> None:
        """Watch the connection for its next request (from any thread)."""
        self._incoming.put(connection)
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_write.send(b"\0")
        except (BlockingIOError, OSError):
            pass   # a wake-up is pending already, or the loop has stopped

    def _run(self) -> None:
        next_sweep = time.monotonic() + SWEEP_INTERVAL_S
        while not self._stopping.is_set():
            self._came_round = time.monotonic()
            for key, _ in self._selector.select(SWEEP_INTERVAL_S):
                if key.data is None:
                    self._take_incoming()
                    continue
                if key.data is _ACCEPT:
                    self._accept()
                    continue
                try:
                    self._readable(key.data)
                except Exception as exc:   # as in _watch
                    self._release(key.data, exc)
            now = time.monotonic()
            if now >= next_sweep:
                self._sweep(now)
                next_sweep = now + SWEEP_INTERVAL_S
        for key in list(self._selector.get_map().values()):
            if isinstance(key.data, Connection):
                self._selector.unregister(key.fileobj)
                self._owner.close(key.data, None)
        self._selector.close()
        self._listener.close()
        self._wake_read.close()
        self._wake_write.close()

    def _take_incoming(self) -> None:
        try:
            while self._wake_read.recv(4096):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                connection = self._incoming.get_nowait()
            except queue.Empty:
                return
            self._watch(connection)

    def _accept(self) -> None:
        """Takes a few of the connections waiting to be accepted, and what their clients sent already. The rest
        wait in the listen backlog, holding no connection slot, until the connections taken have been served:
        a flood of new connections is taken at the pace the loop serves them."""
        for _ in range(ACCEPTS_PER_WAKEUP):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                log.exception("accept failed")
                return
            connection = self._owner.accepted(sock, address)
            if connection is not None:
                self._watch(connection)

    def _watch(self, connection: Connection) -> None:
        """Watches the connection for requests, serving any it holds or that have arrived already (a new
        connection's client sends at once: this spares it a wakeup of its own)."""
        connection.sock.setblocking(False)
        self._selector.register(connection.sock, selectors.EVENT_READ, connection)
        try:
            if connection.pending:
                self._answer(connection)
            else:
                self._readable(connection)
        except Exception as exc:   # what a request did to its own connection never stops the loop
            self._release(connection, exc)

    def _readable(self, connection: Connection) -> None:
        try:
            chunk = connection.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._release(connection, None)
            return
        if connection.first_byte_at is None:
            connection.first_byte_at = time.monotonic()
        connection.pending += chunk
        self._answer(connection)

    def _answer(self, connection: Connection) -> None:
        """Answers the whole requests buffered, while their answers are ready; hands the connection off at the
        first that is not (or when the reply cannot be sent without waiting)."""
        while connection.pending:
            reply = tiers.repeated(connection.processor, connection.pending, self._framed)
            if reply is not None:
                consumed = len(connection.pending)
            else:
                try:
                    request, consumed = connection.buffered_request(self._framed, self._check)
                except Incomplete:
                    if len(connection.pending) > LOOP_BUFFER_BYTES:
                        self._hand_off(connection)
                    return
                except (MalformedRequest, MessageTooLarge) as exc:
                    self._release(connection, exc)
                    return
                reply = tiers.ready(connection.processor, request, self._framed)
                if reply is None:
                    self._hand_off(connection)
                    return
            connection.answered(consumed)
            connection.first_byte_at = time.monotonic() if connection.pending else None
            try:
                sent = connection.sock.send(reply)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._release(connection, None)
                return
            if sent < len(reply):
                connection.unsent = reply[sent:]
                self._hand_off(connection)
                return
        connection.idle_since = time.monotonic()

    def _hand_off(self, connection: Connection) -> None:
        self._selector.unregister(connection.sock)
        connection.sock.setblocking(True)
        self._owner.hand_off(connection)

    def _release(self, connection: Connection, reason: Exception | None) -> None:
        if connection.sock in self._selector.get_map():
            self._selector.unregister(connection.sock)
        self._owner.close(connection, reason)

    def evict_idlest(self) -> bool:
        """Closes the connection idle longest, if it has been idle `evict_idle_after_s` or more, so that a new one
        can have its slot; True if it closed one. Only a connection waiting here with no byte of a request received
        (none buffered, none arrived unread) is idle: one whose request a worker is reading or answering is not
        here. On the loop's thread (it accepts)."""
        now = time.monotonic()
        watched = [key.data for key in self._selector.get_map().values() if isinstance(key.data, Connection)]
        idle = [connection for connection in watched
                if connection.first_byte_at is None and now - connection.idle_since >= self._evict_idle_after_s]
        for connection in sorted(idle, key=lambda connection: connection.idle_since):
            if _nothing_arrived(connection.sock):
                self._release(connection, IdleEvicted.after(now - connection.idle_since))
                return True
        return False

    def _sweep(self, now: float) -> None:
        for key in list(self._selector.get_map().values()):
            connection = key.data
            if not isinstance(connection, Connection):
                continue
            if connection.first_byte_at is not None and now - connection.first_byte_at > self._request_timeout_s:
                self._release(connection, ClientTooSlow.request(self._request_timeout_s))
            elif connection.first_byte_at is None and now - connection.idle_since > self._idle_timeout_s:
                self._release(connection, ClientTooSlow.idle(self._idle_timeout_s))


def _nothing_arrived(sock: socket.socket) -> bool:
    """Whether the client has sent nothing the loop has not read yet (its socket is not readable): a request that
    has begun, or a close, is in the socket for the loop's next wakeup. Peeks, reading nothing."""
    try:
        sock.recv(1, socket.MSG_PEEK)
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        pass
    return False
