"""A bounded, thread-safe pool of Thrift connections to one or more upstream Hive Metastores, with failover.

    pool = UpstreamPool("thrift://hms1:9083,thrift://hms2:9083")
    pool.call("get_table", "sales", "events")                  # a read: retried on the next upstream if need be
    pool.call("create_database", database, idempotent=False)   # a write: never sent twice

Why each rule:

* A thriftpy2 client is not thread-safe, and one whose socket failed mid-message is out of step with the server
  for good: a connection serves one call at a time and is thrown away after any failure that is not an answer.
* Declared IDL exceptions (MetaException, NoSuchObjectException, ...) and TApplicationException are answers: the
  reply was read whole, so the connection goes back to the pool and the exception reaches the caller unchanged.
* A failure before the request was sent whole (no connection, a failed write) left nothing applied upstream, so
  the call moves on to the next upstream. Once the reply has begun to be read, the request was sent whole and may
  have been applied: only an idempotent call is sent again; any other raises UpstreamUnavailable at once.
* A call tries each upstream at most once, starting at the preferred one, and never runs past `call_timeout_s`
  (waiting for a free connection included). Failing fast keeps the server's request threads from piling up
  behind a dead upstream; the clients have their own retries (Hive's RetryingMetaStoreClient).
* An upstream that failed is "down" for `backoff_s`: new connections and failover go to the others first, and it
  is tried again after that (or even before, when nothing else is left). Nothing is blacklisted for good and
  connections are made lazily, so calls work again as soon as an upstream is back.
* A pooled connection the upstream has closed (a restart, an idle timeout) is noticed before it is used (the
  socket is readable while idle), so a write is not refused just because its connection went stale.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from thriftpy2.protocol import TCyBinaryProtocol
from thriftpy2.protocol.exc import TProtocolException
from thriftpy2.thrift import TApplicationException, TClient
from thriftpy2.transport import TCyBufferedTransport, TCyFramedTransport, TTransportException

from hmsproxy.idl import hms

__all__ = ["Observer", "UpstreamPool", "UpstreamUnavailable"]

log = logging.getLogger(__name__)

#: observe(method_name, seconds, outcome), once per attempt: "ok"; "declared_error" (an IDL exception or a
#: TApplicationException came back); "transport_error" (no answer: connection dropped, upstream marked down).
Observer = Callable[[str, float, str], None]

#: Replies that are answers: the whole reply was read, the connection stays in step.
_ANSWERS: tuple[type[BaseException], ...] = (TApplicationException, *hms.__thrift_meta__["exceptions"])
#: Failures of the connection itself: the upstream may be down or unreachable.
_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (OSError, TTransportException, TProtocolException)
#: A connection whose last reply was bigger is closed rather than pooled: thriftpy2's transport buffers grow to the
#: largest read (a framed one to the largest reply) and never shrink.
KEEP_AFTER_REPLY_BYTES = 8 << 20
#: The probe: answered from the HMS's configuration (no database access, no audit log line) since Hive 0.14.
PROBE_CALL = ("getMetaConf", "hive.metastore.client.socket.timeout")


class UpstreamUnavailable(Exception):
    """No upstream answered the call. `maybe_applied`: a request was sent whole without an answer, so a write
    may have been applied upstream (it was not sent again)."""

    def __init__(self, message: str, *, uris: Sequence[str], maybe_applied: bool) -> None:
        super().__init__(message)
        self.uris = tuple(uris)
        self.maybe_applied = maybe_applied


@dataclass(frozen=True)
class _Upstream:
    uri: str
    host: str
    port: int


def _parse_uri(uri: str) -> _Upstream:
    """thrift://host:port, as hive.metastore.uris names a metastore."""
    text = uri.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad upstream metastore URI {uri!r}: {exc}") from None
    if parts.scheme != "thrift" or not parts.hostname or port is None or port == 0:
        raise ValueError(f"bad upstream metastore URI {uri!r}: expected thrift://host:port")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"bad upstream metastore URI {uri!r}: expected thrift://host:port and nothing more")
    return _Upstream(f"thrift://{parts.netloc}", parts.hostname, port)


class _DeadlineSocket:
    """The socket as the Thrift transport uses it. Every read and write waits at most `timeout_s` and never past
    the call's deadline. `reading` tells whether the reply has begun to be read: the client reads only after the
    request was flushed whole, so from then on the upstream may have acted on it. `received`: bytes of the reply."""

    def __init__(self, sock: socket.socket, timeout_s: float) -> None:
        self._sock = sock
        self._timeout_s = timeout_s
        self._deadline = 0.0
        self.reading = False
        self.received = 0

    def begin_call(self, deadline: float) -> None:
        self._deadline = deadline
        self.reading = False
        self.received = 0

    def _bound(self) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the call's time bound ran out")
        timeout = min(self._timeout_s, remaining)
        self._sock.settimeout(timeout)
        return timeout

    def read(self, size: int) -> bytes:
        self.reading = True
        timeout = self._bound()
        try:
            data = self._sock.recv(size)
        except TimeoutError:
            raise TimeoutError(f"no answer within {timeout:.3g} s") from None
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "the upstream closed the connection")
        self.received += len(data)
        return data

    def write(self, data: bytes) -> None:
        self._bound()
        self._sock.sendall(data)

    def flush(self) -> None:
        """Writes go straight to the socket; nothing is held here."""

    def is_open(self) -> bool:
        return self._sock.fileno() >= 0

    def dropped(self) -> bool:
        """Whether an idle connection is unusable: closed by the upstream (or holding bytes nobody asked for)."""
        try:
            self._sock.settimeout(0.0)
            self._sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            return False
        except OSError:
            return True
        return True

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class _Connection:
    def __init__(self, index: int, sock: _DeadlineSocket, client: TClient) -> None:
        self.index = index   # which upstream it leads to
        self.sock = sock
        self.client = client


class _ConnectFailed(Exception):
    def __init__(self, index: int, error: BaseException, seconds: float) -> None:
        super().__init__(str(error))
        self.index, self.error, self.seconds = index, error, seconds


class UpstreamPool:
    """Calls the methods of upstream HMSs (`uris`: a list, or a comma-separated string as hive.metastore.uris).

    Defaults: `connect_timeout_s` 5 s, so a black-holed host fails over quickly (a connect on a LAN takes
    milliseconds); `timeout_s` 120 s of silence per read or write, since a working HMS can take that long on a
    big table (its own clients wait 600 s, hive.metastore.client.socket.timeout); `call_timeout_s` 300 s in all,
    well below the 600 s the proxy's own clients wait, so they get an error instead of timing out themselves.
    `framed` False: the binary protocol on a buffered transport, as Spark's Hive 2.3 client and HMS's default.
    `observe` is called after every attempt, from the calling thread, and must not raise.
    """

    def __init__(self, uris: str | Sequence[str], *, framed: bool = False, timeout_s: float = 120.0,
                 connect_timeout_s: float = 5.0, call_timeout_s: float = 300.0, max_connections: int = 16,
                 backoff_s: float = 1.0, observe: Observer | None = None) -> None:
        names = uris.split(",") if isinstance(uris, str) else list(uris)
        if not names or not all(name.strip() for name in names):
            raise ValueError(f"no upstream metastore URI in {uris!r}")
        self._upstreams = [_parse_uri(name) for name in names]
        for name, value in (("timeout_s", timeout_s), ("connect_timeout_s", connect_timeout_s),
                            ("call_timeout_s", call_timeout_s)):
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections!r}")
        self._framed = framed
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._call_timeout_s = call_timeout_s
        self._max_connections = max_connections
        self._backoff_s = backoff_s
        self._observe = observe
        self._methods = frozenset(hms.ThriftHiveMetastore.thrift_services)
        self._cond = threading.Condition()
        self._idle: list[_Connection] = []
        self._size = 0              # connections open or being opened, idle or in use
        self._opened = 0            # connections ever opened
        self._preferred = 0         # where new connections go: moves past an upstream that fails
        self._down_until = [0.0] * len(self._upstreams)
        self._healthy = False
        self._closed = False

    @property
    def uris(self) -> tuple[str, ...]:
        return tuple(upstream.uri for upstream in self._upstreams)

    @property
    def healthy(self) -> bool:
        """Whether the last exchange with an upstream got an answer (False until one did)."""
        return self._healthy

    @property
    def connections_opened(self) -> int:
        """How many connections the pool has opened so far (connection churn, for metrics and tests)."""
        return self._opened

    def call(self, method_name: str, *args: object, idempotent: bool = True) -> Any:
        """Calls ThriftHiveMetastore.`method_name`(*args) upstream and returns its result; a declared exception
        (or TApplicationException) of the upstream is raised as it came. Raises UpstreamUnavailable when no
        upstream answered. Pass idempotent=False for writes: they are then never sent a second time."""
        return self._call(method_name, args, idempotent, time.monotonic() + self._call_timeout_s)

    def probe(self, timeout_s: float = 5.0) -> bool:
        """Makes a cheap call (getMetaConf) for a readiness check and returns `healthy`. When every connection is
        busy until `timeout_s`, the last exchange decides."""
        deadline = time.monotonic() + min(timeout_s, self._call_timeout_s)
        try:
            self._call(PROBE_CALL[0], PROBE_CALL[1:], True, deadline)
        except _ANSWERS:
            pass  # an answer all the same
        except UpstreamUnavailable:
            pass  # `healthy` already says so, unless the pool was only busy
        return self._healthy

    def close(self) -> None:
        """Closes the idle connections now and the ones in use when their calls end; calls fail from now on."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._size -= len(idle)
            self._cond.notify_all()
        for connection in idle:
            connection.sock.close()

    def __enter__(self) -> UpstreamPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- one call ---------------------------------------------------------------------------------------------

    def _call(self, method_name: str, args: tuple[object, ...], idempotent: bool, deadline: float) -> Any:
        if method_name not in self._methods:
            raise ValueError(f"{method_name!r} is not a method of ThriftHiveMetastore")
        tried: set[int] = set()
        failures: list[str] = []
        maybe_applied = False
        while len(tried) < len(self._upstreams):
            try:
                connection = self._take(tried, deadline)
            except _ConnectFailed as failed:
                tried.add(failed.index)
                failures.append(f"{self._upstreams[failed.index].uri}: {_describe(failed.error)}")
                self._report(method_name, failed.seconds, "transport_error")
                continue
            if connection is None:
                failures.append(f"the call's {self._call_timeout_s:g} s ran out" + (
                    "" if failures else f" waiting for a free connection (all {self._max_connections} in use)"))
                break
            tried.add(connection.index)
            started = time.monotonic()
            try:
                connection.sock.begin_call(deadline)
                result = getattr(connection.client, method_name)(*args)
            except _ANSWERS:
                self._give_back(connection)
                self._report(method_name, time.monotonic() - started, "declared_error")
                raise
            except _TRANSPORT_ERRORS as exc:
                self._discard(connection.index, exc, connection)
                self._report(method_name, time.monotonic() - started, "transport_error")
                failures.append(f"{self._upstreams[connection.index].uri}: {_describe(exc)}")
                if connection.sock.reading:
                    maybe_applied = True
                    if not idempotent:
                        raise UpstreamUnavailable(
                            f"{method_name}: the upstream metastore did not answer after the request was sent; not "
                            f"sent again, as the call is not idempotent: it may or may not have been applied "
                            f"({'; '.join(failures)})", uris=self.uris, maybe_applied=True) from exc
                continue
            except BaseException:  # e.g. arguments that cannot be encoded: the write buffer holds half a message
                self._discard(connection.index, None, connection)
                raise
            self._give_back(connection)
            self._report(method_name, time.monotonic() - started, "ok")
            return result
        raise UpstreamUnavailable(f"{method_name}: no upstream metastore answered ({'; '.join(failures)}); "
                                  f"upstreams: {', '.join(self.uris)}", uris=self.uris, maybe_applied=maybe_applied)

    def _report(self, method_name: str, seconds: float, outcome: str) -> None:
        if self._observe is not None:
            self._observe(method_name, seconds, outcome)

    # ---- the pool ---------------------------------------------------------------------------------------------

    def _take(self, tried: set[int], deadline: float) -> _Connection | None:
        """An idle connection to an upstream not yet tried in this call, else a new one; None when none became
        free before the deadline. Raises _ConnectFailed when a new one cannot be opened."""
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("the upstream pool is closed")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                connection = self._pop_idle(tried)
                if connection is not None:
                    return connection
                if self._size < self._max_connections:
                    self._size += 1
                    index = self._next_upstream(tried)
                    break
                if self._idle:  # the idle ones all lead to upstreams this call has tried: make room
                    self._idle.pop(0).sock.close()
                    self._size -= 1
                    continue
                self._cond.wait(remaining)
        started = time.monotonic()
        try:
            connection = self._connect(index, deadline)
        except OSError as exc:
            self._discard(index, exc)
            raise _ConnectFailed(index, exc, time.monotonic() - started) from exc
        except BaseException:
            self._discard(index, None)
            raise
        with self._cond:
            self._opened += 1
        return connection

    def _pop_idle(self, tried: set[int]) -> _Connection | None:
        """The most recently used idle connection (its socket is the warmest) to an untried upstream."""
        position = len(self._idle)
        while position > 0:
            position -= 1
            connection = self._idle[position]
            if connection.index in tried:
                continue
            del self._idle[position]
            if not connection.sock.dropped():
                return connection
            connection.sock.close()
            self._size -= 1
        return None

    def _next_upstream(self, tried: set[int]) -> int:
        """Round robin from the preferred upstream, skipping those tried; those down come last, soonest back first."""
        count = len(self._upstreams)
        now = time.monotonic()
        order = [(self._preferred + step) % count for step in range(count)]
        return min((index for index in order if index not in tried),
                   key=lambda index: max(0.0, self._down_until[index] - now))

    def _connect(self, index: int, deadline: float) -> _Connection:
        upstream = self._upstreams[index]
        timeout = max(0.001, min(self._connect_timeout_s, deadline - time.monotonic()))
        sock = socket.create_connection((upstream.host, upstream.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)  # notice a vanished peer while idle
        raw = _DeadlineSocket(sock, self._timeout_s)
        transport = TCyFramedTransport(raw) if self._framed else TCyBufferedTransport(raw)
        protocol = TCyBinaryProtocol(transport)  # type: ignore[no-untyped-call]  # compiled: no annotations
        # thriftpy2 annotates the service as a module; it is the generated class
        return _Connection(index, raw, TClient(hms.ThriftHiveMetastore, protocol))  # type: ignore[arg-type]

    def _give_back(self, connection: _Connection) -> None:
        """After an answer: the connection is in step and the upstream is up."""
        with self._cond:
            drop = self._closed or connection.sock.received > KEEP_AFTER_REPLY_BYTES
            if drop:
                self._size -= 1
            else:
                self._idle.append(connection)
            if self._down_until[connection.index]:
                log.info("upstream metastore %s answers again", self._upstreams[connection.index].uri)
                self._down_until[connection.index] = 0.0
            self._healthy = True
            self._cond.notify()
        if drop:
            connection.sock.close()

    def _discard(self, index: int, error: BaseException | None, connection: _Connection | None = None) -> None:
        """Frees the slot of a connection to upstream `index` that failed (or could not be opened); `error` set: a
        transport failure, so that upstream is down for a while and its idle connections are closed."""
        stale: list[_Connection] = []
        with self._cond:
            self._size -= 1
            if error is not None:
                if not self._down_until[index]:
                    log.warning("upstream metastore %s failed: %s", self._upstreams[index].uri, _describe(error))
                self._down_until[index] = time.monotonic() + self._backoff_s
                if self._preferred == index:
                    self._preferred = (index + 1) % len(self._upstreams)
                stale = [c for c in self._idle if c.index == index]
                self._idle = [c for c in self._idle if c.index != index]
                self._size -= len(stale)
                self._healthy = False
            self._cond.notify(1 + len(stale))
        for dead in stale + ([connection] if connection is not None else []):
            dead.sock.close()


def _describe(error: BaseException) -> str:
    text = getattr(error, "message", None) or str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
