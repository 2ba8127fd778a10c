"""The Thrift socket server: accepts connections, serves each on its own thread, up to a cap.

Built here instead of thriftpy2's make_server because that one reads strictly (drops non-strict clients),
closes idle connections after 3 s (Spark keeps them idle for long), sets no TCP_NODELAY on accepted
sockets and starts unbounded threads. Beyond `max_connections` a new connection is accepted and closed at
once, and that is logged once per burst: a client then sees a clean close instead of a hang.

No client holds a connection slot for ever: a connection with no request for `idle_timeout_s` is closed,
and so is one whose request has not arrived whole `request_timeout_s` after its first byte (a slow
sender). Replies are written with the idle timeout as their bound.
"""
from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

# The compiled classes from their own modules: these have no type stubs, so to mypy the classes are Any.
from thriftpy2.protocol.cybin.cybin import TCyBinaryProtocol
from thriftpy2.transport import TSocket, TTransportBase, TTransportException
from thriftpy2.transport.buffered.cybuffered import TCyBufferedTransport
from thriftpy2.transport.framed.cyframed import TCyFramedTransport
from thriftpy2.transport.memory.cymemory import TCyMemoryBuffer

from hmsproxy.burst_log import BurstLog
from hmsproxy.metrics import Metrics
from hmsproxy.wire_check import MalformedRequest, MessageCheck

log = logging.getLogger(__name__)
REFUSAL_LOG_INTERVAL_S = 10.0
# Requests holding more values than this are decoded and answered a few at a time (max_large_requests):
# decoding takes about 200 bytes per value, so the ones in flight together stay within a known ceiling.
LARGE_REQUEST_VALUES = 100_000


class MessageTooLarge(TTransportException):
    pass


class ClientTooSlow(TTransportException):
    """Idle past the idle timeout, or a request not complete within the request timeout."""


class MessageBudget:
    """The client socket as the Thrift transport reads it, counting the bytes of the current request.

    Past the maximum the connection is dropped: a hostile or broken client (a huge length prefix, an
    endless list) cannot make the server read and hold gigabytes. The transport may reserve address
    space for a declared length, but only what is actually received is ever touched."""

    def __init__(self, sock: socket.socket, max_bytes: int, idle_timeout_s: float, request_timeout_s: float) -> None:
        self._raw = sock
        self._sock: TTransportBase = TSocket(sock=sock)  # type: ignore[no-untyped-call]  # unannotated in thriftpy2
        self._max_bytes = max_bytes
        self._idle_timeout_s = idle_timeout_s
        self._request_timeout_s = request_timeout_s
        self._request_deadline: float | None = None   # set by the first byte of a request
        self.received = 0

    def new_message(self) -> None:
        self.received = 0
        self._request_deadline = None

    def read(self, size: int) -> bytes:
        if self._request_deadline is None:
            self._raw.settimeout(self._idle_timeout_s)
        else:
            self._raw.settimeout(max(0.001, self._request_deadline - time.monotonic()))
        try:
            data = self._sock.read(size)
        except TimeoutError:
            raise ClientTooSlow(message=f"no request for {self._idle_timeout_s:g} s" if self._request_deadline is None
                                else f"request not complete within {self._request_timeout_s:g} s") from None
        if self._request_deadline is None:
            self._request_deadline = time.monotonic() + self._request_timeout_s
        self.received += len(data)
        if self.received > self._max_bytes:
            raise MessageTooLarge(message=f"request larger than {self._max_bytes} bytes")
        return data

    def write(self, data: bytes) -> None:
        self._raw.settimeout(self._idle_timeout_s)
        self._sock.write(data)

    def flush(self) -> None:
        self._sock.flush()

    def is_open(self) -> bool:
        return self._sock.is_open()

    def open(self) -> None:
        self._sock.open()

    def close(self) -> None:
        self._sock.close()


class ThriftServer:
    def __init__(self, processor_factory: Callable[[str], Any], host: str, port: int, *, framed: bool,
                 max_connections: int, max_message_bytes: int, metrics: Metrics, idle_timeout_s: float = 600.0,
                 request_timeout_s: float = 30.0, max_depth: int = 64, max_objects: int = 1_000_000,
                 max_large_requests: int = 4, tls: ssl.SSLContext | None = None) -> None:
        self._processor_factory = processor_factory
        self._tls = tls
        self._tls_failures = BurstLog("closing connection from %s: TLS handshake failed: %s", REFUSAL_LOG_INTERVAL_S,
                                      log)
        self._framed = framed
        self._max_message_bytes = max_message_bytes
        self._idle_timeout_s = idle_timeout_s
        self._request_timeout_s = request_timeout_s
        self._refusals = BurstLog("refusing a connection: %d connections already open", REFUSAL_LOG_INTERVAL_S, log)
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
        self._listener = socket.create_server((host, port), backlog=128, reuse_port=False)
        self._listener.settimeout(0.2)  # lets the accept loop notice stop()
        self.host, self.port = self._listener.getsockname()[:2]
        self._thread = threading.Thread(target=self._accept_loop, name="thrift-accept", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops accepting, closes every client connection and waits for the accept loop to end."""
        self._stopping.set()
        self._thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, address = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                log.exception("accept failed")
                continue
            if not self._slots.acquire(blocking=False):
                self._metrics.refused.inc()
                self._refusals.happened(self._max_connections)
                client.close()
                continue
            client.settimeout(None)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            with self._lock:
                self._clients.add(client)
            threading.Thread(target=self._serve, args=(client, address), name=f"thrift-{address[1]}",
                             daemon=True).start()

    def _serve(self, client: socket.socket, address: Any) -> None:
        self._metrics.connections.inc()
        if self._tls is not None:
            secured = self._handshake(client, address)
            if secured is None:
                self._metrics.connections.dec()
                self._slots.release()
                return
            client = secured
        transport_class = TCyFramedTransport if self._framed else TCyBufferedTransport
        budget = MessageBudget(client, self._max_message_bytes, self._idle_timeout_s, self._request_timeout_s)
        transport = transport_class(budget)
        protocol = TCyBinaryProtocol(transport, strict_read=False, strict_write=True)
        processor = self._processor_factory(str(address[0]))   # one per connection, knowing its peer
        try:
            while not self._stopping.is_set():
                budget.new_message()
                request, values = self._message_check.read_message(transport.read)   # checked before decoding
                with self._large_requests if values > LARGE_REQUEST_VALUES else contextlib.nullcontext():
                    processor.process(TCyBinaryProtocol(TCyMemoryBuffer(request), strict_read=False), protocol)
        except MalformedRequest as exc:
            self._metrics.refused_messages.inc()
            self._malformed.happened(address, exc)
        except MessageTooLarge as exc:
            self._metrics.refused_messages.inc()
            log.warning("closing connection from %s: %s", address, exc.message)
        except ClientTooSlow as exc:
            self._metrics.slow_clients.inc()
            log.info("closing connection from %s: %s", address, exc.message)
        except TTransportException:
            pass  # the client closed the connection
        except Exception as exc:  # a malformed request: drop this connection, keep serving the others
            log.warning("closing connection from %s after an unreadable request: %s", address, exc)
        finally:
            with self._lock:
                self._clients.discard(client)
            try:
                transport.close()
            except Exception:
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
