"""The Thrift socket server: accepts connections up to a cap and serves them.

Built here instead of thriftpy2's make_server because that one reads strictly (drops non-strict clients),
closes idle connections after 3 s (Spark keeps them idle for long), sets no TCP_NODELAY on accepted
sockets and starts unbounded threads. When all `max_connections` slots are taken, a new connection takes the
slot of the connection idle longest, if that one has been idle `evict_idle_after_s` or more (Hive's and Spark's
clients reconnect when their pooled connection was closed); otherwise it is accepted and closed at once. Either is
logged once per burst: a client sees a clean close instead of a hang, and idle sockets cannot keep new clients
out until the idle timeout.

The connection loop (connection_loop.py) accepts connections; plain ones wait for their requests in it, which
answers what the cache holds ready itself and hands every other request to a worker thread; TLS connections
have a thread each.
No client holds a connection slot for ever: a connection with no request for `idle_timeout_s` is closed,
and so is one whose request has not arrived whole `request_timeout_s` after its first byte (a slow
sender). Replies are written with the idle timeout as their bound.
"""
from __future__ import annotations

import logging
import queue
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from thriftpy2.transport import TTransportException

from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.ops.listening import binding
from hmsproxy.ops.metrics import Metrics
from hmsproxy.rpc import tiers
from hmsproxy.rpc.connection import (
    ClientTooSlow,
    Connection,
    IdleEvicted,
    MessageTooLarge,
    SocketReader,
    SocketWriter,
)
from hmsproxy.rpc.connection_loop import ConnectionLoop
from hmsproxy.rpc.dispatch import MetastoreProcessor
from hmsproxy.rpc.wire_check import MalformedRequest, MessageCheck

log = logging.getLogger(__name__)
REFUSAL_LOG_INTERVAL_S = 10.0


class WorkerPool:
    """Daemon threads that serve one request of a connection each, started as needed and kept for the next: a
    task never waits for another to finish (there is a thread for every task given and not yet done)."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1   # that thread takes this task
        self._tasks.put(task)
        if start:
            threading.Thread(target=self._work, name="thrift-worker", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._tasks.get()()
            with self._lock:
                self._idle += 1


class ThriftServer:
    host: str   # the address and port it listens on, as its socket reports them (the port the OS chose for 0)
    port: int

    def __init__(self, processor_factory: Callable[[str], MetastoreProcessor], host: str, port: int, *, framed: bool,
                 max_connections: int, max_message_bytes: int, metrics: Metrics, idle_timeout_s: float = 600.0,
                 request_timeout_s: float = 30.0, evict_idle_after_s: float = 5.0, max_depth: int = 64,
                 max_objects: int = 1_000_000, max_large_requests: int = 4, tls: ssl.SSLContext | None = None) -> None:
        self._processor_factory = processor_factory
        self._tls = tls
        self._tls_failures = BurstLog("closing connection from %s: TLS handshake failed: %s", REFUSAL_LOG_INTERVAL_S,
                                      log)
        self._framed = framed
        self._idle_timeout_s = idle_timeout_s
        self._request_timeout_s = request_timeout_s
        self._refusals = BurstLog("refusing a connection: %d connections already open", REFUSAL_LOG_INTERVAL_S, log)
        self._evictions = BurstLog("closing connection from %s for a new one: %s", REFUSAL_LOG_INTERVAL_S, log)
        self._message_check = MessageCheck(max_message_bytes, max_depth, max_objects)
        self._large_requests = threading.BoundedSemaphore(max_large_requests)
        self._malformed = BurstLog("closing connection from %s after a malformed request: %s", REFUSAL_LOG_INTERVAL_S,
                                   log)
        self._metrics = metrics
        self._slots = threading.BoundedSemaphore(max_connections)
        self._max_connections = max_connections
        self._clients: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        with binding("the Thrift port", host, port):
            listener = socket.create_server((host, port), backlog=128, reuse_port=False)
        self.host, self.port = listener.getsockname()[:2]
        self._workers = WorkerPool()
        self._loop = ConnectionLoop(self, listener, self._message_check, framed, idle_timeout_s, request_timeout_s,
                                    evict_idle_after_s)

    def start(self) -> None:
        self._loop.start()

    def loop_stalled_for(self) -> float:
        """Seconds since the connection loop, which accepts every connection and serves the plain ones, last came
        round (connection_loop.py): what /healthz judges liveness by."""
        return self._loop.stalled_for()

    def stop(self) -> None:
        """Stops accepting, closes every client connection and waits for the connection loop to end."""
        self._stopping.set()
        self._loop.stop()
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def accepted(self, client: socket.socket, address: Any) -> Connection | None:
        """A new connection, to be served by the loop; None when it is closed at once (the cap is reached and no
        connection has been idle long enough to give up its slot) or served on a thread of its own (TLS)."""
        if not self._slots.acquire(blocking=False) and not self._slot_of_idlest():
            self._metrics.refused.inc()
            self._refusals.happened(self._max_connections)
            client.close()
            return None
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        self._metrics.connections.inc()
        with self._lock:
            self._clients.add(client)
        if self._tls is not None:   # an SSL socket's reads do not map one to one onto the socket's readiness
            client.setblocking(True)
            threading.Thread(target=self._serve_secured, args=(client, address), name=f"thrift-{address[1]}",
                             daemon=True).start()
            return None
        return self._connection(client, address)

    def _slot_of_idlest(self) -> bool:
        """Takes the slot of the connection idle longest, which the loop closes if it has been idle long enough.
        Slots are only taken on the loop's thread (it accepts), so the one freed cannot go to another."""
        return self._loop.evict_idlest() and self._slots.acquire(blocking=False)

    def _connection(self, sock: socket.socket, address: Any) -> Connection:
        return Connection(sock, address, self._processor_factory(str(address[0])),   # one processor per connection
                          SocketReader(sock, self._idle_timeout_s, self._request_timeout_s),
                          SocketWriter(sock, self._idle_timeout_s))

    # ---- serving a request (worker threads, TLS connection threads) -----------------------------------

    def hand_off(self, connection: Connection) -> None:
        self._workers.submit(lambda: self._serve_handed_off(connection))

    def _serve_handed_off(self, connection: Connection) -> None:
        """One request of a connection the loop handed over (or the end of a reply it could not send), then the
        connection goes back to the loop."""
        try:
            if connection.unsent:
                unsent, connection.unsent = connection.unsent, b""
                connection.writer.write([unsent], len(unsent))
            else:
                self._serve_request(connection)
        except Exception as exc:
            self.close(connection, exc)
            return
        self._loop.add(connection)

    def _serve_secured(self, client: socket.socket, address: Any) -> None:
        secured = self._handshake(client, address)
        if secured is None:
            self._metrics.connections.dec()
            self._slots.release()
            return
        connection = self._connection(secured, address)
        try:
            while not self._stopping.is_set():
                self._serve_request(connection)
        except Exception as exc:
            self.close(connection, exc)
            return
        self.close(connection, None)

    def _serve_request(self, connection: Connection) -> None:
        """Reads the connection's next request (what has arrived of it first) and answers it."""
        connection.reader.new_message(connection.pending, connection.first_byte_at, connection.walk)
        request = connection.reader.read_request(self._framed, self._message_check)
        connection.pending, connection.walk = connection.reader.rest(), None
        pieces, size = tiers.answer(connection.processor, request, self._framed, self._large_requests)
        if pieces:   # a one-way call has no reply
            connection.writer.write(pieces, size)
        connection.first_byte_at = time.monotonic() if connection.pending else None
        connection.idle_since = time.monotonic()

    def close(self, connection: Connection, reason: Exception | None) -> None:
        """Closes a connection and frees its slot; `reason` says why, if not because the client closed it."""
        address = connection.address
        if isinstance(reason, MalformedRequest):
            self._metrics.refused_messages.inc()
            self._malformed.happened(address, reason)
        elif isinstance(reason, MessageTooLarge):
            self._metrics.refused_messages.inc()
            log.warning("closing connection from %s: %s", address, reason.message)
        elif isinstance(reason, IdleEvicted):
            self._metrics.evicted.inc()
            self._evictions.happened(address, reason.message)
        elif isinstance(reason, ClientTooSlow):
            self._metrics.slow_clients.inc()
            log.info("closing connection from %s: %s", address, reason.message)
        elif reason is not None and not isinstance(reason, TTransportException):   # not the client closing
            log.warning("closing connection from %s after an unreadable request: %s", address, reason)
        with self._lock:
            self._clients.discard(connection.sock)
        try:
            connection.sock.close()
        except OSError:
            pass
        self._metrics.connections.dec()
        self._slots.release()

    def _handshake(self, client: socket.socket, address: Any) -> ssl.SSLSocket | None:
        """The connection with TLS set up, in its own thread so that a slow handshake holds up nobody else; a
        failed one, or one not done within the request timeout, closes it (None)."""
        assert self._tls is not None
        with self._lock:
            self._clients.discard(client)
        secured: ssl.SSLSocket | None = None
        try:
            secured = self._tls.wrap_socket(client, server_side=True, do_handshake_on_connect=False)
            secured.settimeout(self._request_timeout_s)
            secured.do_handshake()
        except (OSError, ssl.SSLError) as exc:   # TimeoutError is an OSError
            self._metrics.tls_failures.inc()
            self._tls_failures.happened(address, exc)
            for sock in (secured, client):
                if sock is not None:
                    sock.close()
            return None
        with self._lock:
            self._clients.add(secured)
        return secured
