"""Peer wake-ups: after committing a write that logged events, an instance sends each other instance on its
database a UDP datagram, whose poller then reads the notification log at once instead of at its next round.

Without them another instance sees a change only at its next poll, and polling often enough for a lag of a few
milliseconds would cost every idle instance tens of queries a second. The instances find each other through the
database (a small table of their own: store/sql/wake_peers.py), which each one refreshes every REFRESH_S.

A datagram carries nothing to trust: its content only has to be MAGIC to wake a round, which reads the log as a
timed round would. Anything else is ignored, and wake-ups are at most one per MIN_WAKE_GAP_S, so that a flood
costs the database at most one round per gap, three indexed reads when nothing is new (and a reread of the
directory per LOOKUP_GAP_S, when the flood comes from addresses that are no peers). A lost datagram delays a
change to the next timed round.

An instance sends its first wake-up to every peer it finds when it starts: they reread the directory on a
wake-up from an unknown address, and so learn of it at once rather than at their next refresh.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from hmsproxy.ops.background import BackgroundLoop, Outage

log = logging.getLogger(__name__)
MAGIC = b"hmsproxy-wake/1"
MIN_WAKE_GAP_S = 0.01    # a flood of datagrams wakes the poller at most 100 times a second
REFRESH_S = 10.0         # how often an instance renews its entry and rereads its peers
LOOKUP_GAP_S = 1.0       # a wake-up from an address not known as a peer rereads the directory, at most this often
RECEIVE_BYTES = 64       # longer datagrams are cut here, and then are not MAGIC


class PeerDirectory(Protocol):
    """Where the instances on one database list their wake addresses (`host:port`)."""

    def register(self, address: str) -> None: ...

    def peers(self, address: str) -> list[str]: ...

    def leave(self, address: str) -> None: ...


def advertised_host(bind_host: str, wake_host: str) -> str:
    """The host peers send to: `wake_host` if given, else the bind host, else (a wildcard bind) this machine's
    address as its name resolves."""
    if wake_host:
        return wake_host
    if bind_host not in ("", "0.0.0.0", "::"):
        return bind_host
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _parse(address: str) -> tuple[str, int] | None:
    host, _, port = address.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return None


class PeerWake:
    """Receives wake-ups for `wake` on a UDP port of `bind_host` and sends them to the peers `directory` lists."""

    def __init__(self, directory: PeerDirectory, wake: Callable[[], None], *, bind_host: str, port: int,
                 wake_host: str) -> None:
        self._directory = directory
        self._wake = wake
        family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._socket.bind((bind_host or "0.0.0.0", port))
        self.address = _address(advertised_host(bind_host, wake_host), self._socket.getsockname()[1])
        self._peers: list[tuple[str, int]] = []
        self._last_lookup = 0.0
        self._stopping = threading.Event()
        self._receiver = threading.Thread(target=self._receive, name="peer-wake", daemon=True)
        self._outage = Outage(log, "cannot list this instance's wake address in the database (%s); other "
                                   "instances see its changes at their next poll", "wake address listed again%s")
        self._refresher = BackgroundLoop("peer-wake-directory", self._refresh)

    def start(self) -> None:
        self._receiver.start()
        self._refresher.start()

    def stop(self) -> None:
        self._stopping.set()
        self._refresher.stop()
        try:   # ends the receiver's wait (closing the socket would not)
            self._socket.sendto(b"", socket.MSG_DONTWAIT, self._socket.getsockname())
        except OSError:
            pass   # a full buffer: the receiver wakes at a datagram already there
        self._receiver.join(timeout=5)
        self._socket.close()
        try:
            self._directory.leave(self.address)
        except Exception as exc:  # the database is gone: peers drop the entry once it is stale
            log.info("could not remove this instance's wake address %s: %s", self.address, exc)

    def peers(self) -> list[tuple[str, int]]:
        return list(self._peers)

    # ---- the database's EventWatcher (store/sql/database.py): a commit of events is what peers are told of ----

    def sending(self, write: int) -> None:
        """Nothing to tell before the commit."""

    def abandoned(self, write: int) -> None:
        """Nothing to tell: nothing was committed."""

    def committed(self, write: int, events: Sequence[object]) -> None:
        """Tells every peer that this instance committed events; never blocks (a full buffer drops a datagram)."""
        self._send(self._peers)

    def _send(self, peers: list[tuple[str, int]]) -> None:
        """From the receiving socket, so that a peer sees where wake-ups to this instance go."""
        for peer in peers:
            try:
                self._socket.sendto(MAGIC, socket.MSG_DONTWAIT, peer)
            except OSError:
                pass   # unreachable, a full buffer, closed by stop(): that peer sees the change at its next poll

    def _refresh(self) -> float:
        try:
            self._directory.register(self.address)
            found = [parsed for peer in self._directory.peers(self.address) if (parsed := _parse(peer))]
        except Exception as exc:  # the database is down: keep the peers known, try again next time
            self._outage.failure(exc)
            return REFRESH_S
        self._outage.success("")
        self._send([peer for peer in found if peer not in self._peers])   # a newcomer says hello: see _receive
        self._peers = found
        return REFRESH_S

    def _receive(self) -> None:
        while not self._stopping.is_set():
            try:
                data, source = self._socket.recvfrom(RECEIVE_BYTES)
            except OSError as exc:   # not expected of a bound datagram socket: stop waking rather than spin
                log.warning("wake-ups from other instances stopped arriving (%s); they are seen at the next poll",
                            exc)
                return
            if data != MAGIC or self._stopping.is_set():
                continue
            self._wake()
            if source[:2] not in self._peers and time.monotonic() - self._last_lookup > LOOKUP_GAP_S:
                self._last_lookup = time.monotonic()   # an instance started since the last lookup: its writes
                self._refresher.wake()                 # wake this one's poller, and now this one's wake it
            time.sleep(MIN_WAKE_GAP_S)   # the rate limit: datagrams meanwhile wait in the socket's buffer
