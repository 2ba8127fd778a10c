"""Idle sockets cannot keep new clients out (issue 52): when every connection slot is taken, a new connection
closes the one idle longest (idle at least --evict-idle-after-s) and is served; a connection with a request in
progress (bytes of it received, or its handler running) is never closed for it. Raw sockets against a server
process with a small cap."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hmsproxy.idl import hms
from support.builders import connect_thrift
from support.hmsproxy_server import start_hmsproxy_process
from support.polling import wait_for
from support.raw_wire import call_frame, closed_within, serves
from support.running import RunningServer
from support.scrape import metric

CAP = 4
EVICTED = "hmsproxy_evicted_idle_connections_total"
OPEN = "hmsproxy_open_connections"


def _server(tmp_path: Path, evict_idle_after: str) -> Iterator[RunningServer]:
    running = start_hmsproxy_process(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", "--max-connections", str(CAP),
                                     "--evict-idle-after-s", evict_idle_after, "--check-lock-wait-s", "120s")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def server(tmp_path) -> Iterator[RunningServer]:
    """Any idle connection may be closed for a new one (no idle age needed: the tests need not wait)."""
    yield from _server(tmp_path, "0")


@pytest.fixture
def patient_server(tmp_path) -> Iterator[RunningServer]:
    yield from _server(tmp_path, "10m")


def _connected(server: RunningServer, first_bytes: bytes = b"") -> socket.socket:
    """A raw connection the server has accepted, having sent `first_bytes`."""
    accepted = metric(server, OPEN)
    sock = socket.create_connection((server.host, server.port))
    sock.sendall(first_bytes)
    wait_for(lambda: metric(server, OPEN) > accepted, "the server accepting the connection")
    return sock


def _half_a_request() -> bytes:
    frame = call_frame("get_database", hms.ThriftHiveMetastore.get_database_args(name="default"))
    return frame[:len(frame) // 2]


def _waiting_lock(server: RunningServer) -> int:
    """The id of a lock that waits behind another (an exclusive lock on default.t, held until its timeout): a
    check_lock of it is held by the server for --check-lock-wait-s."""
    client = connect_thrift(server)
    try:
        for kind, state in ((hms.LockType.EXCLUSIVE, hms.LockState.ACQUIRED),
                            (hms.LockType.SHARED_READ, hms.LockState.WAITING)):
            component = hms.LockComponent(type=kind, level=hms.LockLevel.TABLE, dbname="default", tablename="t")
            lock = client.lock(hms.LockRequest(component=[component], user="u", hostname="h"))
            assert lock.state == state
        return int(lock.lockid)
    finally:
        client.close()


def test_a_new_client_is_served_at_once_when_idle_sockets_hold_every_slot(server):
    holders = [_connected(server) for _ in range(CAP)]
    started = time.monotonic()
    assert serves(server), "a new client was refused while every slot was held by an idle socket"
    assert time.monotonic() - started < 1.0   # the bound: served within 1 s, not after the idle timeout
    assert metric(server, EVICTED) == 1
    assert closed_within(holders[0], 5), "the connection idle longest was not closed"
    assert not any(closed_within(holder, 0.2) for holder in holders[1:])
    for holder in holders:
        holder.close()


def test_new_connections_close_the_idle_ones_longest_idle_first_logged_once_per_burst(server):
    holders = [_connected(server) for _ in range(CAP)]
    newcomers = []
    for evicted, holder in enumerate(holders, 1):
        newcomers.append(socket.create_connection((server.host, server.port)))
        wait_for(lambda count=evicted: metric(server, EVICTED) == count, "a newcomer taking an idle slot")
        assert closed_within(holder, 5), f"holder {evicted} is not the one closed"
    assert not any(closed_within(newcomer, 0.2) for newcomer in newcomers)
    log = next(server.workdir.glob("hmsproxy-*.log")).read_text()
    assert log.count("for a new one") == 1, log[-3000:]
    for sock in (*holders, *newcomers):
        sock.close()


def test_a_connection_idle_for_less_than_the_minimum_age_is_not_closed_for_a_new_one(patient_server):
    holders = [_connected(patient_server) for _ in range(CAP)]
    newcomer = socket.create_connection((patient_server.host, patient_server.port))
    assert closed_within(newcomer, 5), "a connection beyond the cap was not refused"
    assert metric(patient_server, EVICTED) == 0
    assert not any(closed_within(holder, 0.2) for holder in holders)
    for sock in (newcomer, *holders):
        sock.close()


def test_a_connection_with_a_request_in_progress_is_never_closed_for_a_new_one(server):
    lock_id = _waiting_lock(server)
    wait_for(lambda: metric(server, OPEN) == 0, "the lock's client leaving")
    held_check = call_frame("check_lock", hms.ThriftHiveMetastore.check_lock_args(
        rqst=hms.CheckLockRequest(lockid=lock_id)))
    # the oldest first: a request half received, then one whose handler runs, then an idle connection
    half_sent = _connected(server, _half_a_request())
    in_handler = _connected(server, held_check)
    idle = _connected(server)
    later_half_sent = _connected(server, _half_a_request())
    assert serves(server), "a new client was refused while a slot was held by an idle socket"
    assert closed_within(idle, 5), "the idle connection was not closed for the new one"
    assert metric(server, EVICTED) == 1
    wait_for(lambda: metric(server, OPEN) == CAP - 1, "the new client's slot coming back")

    in_progress = [half_sent, in_handler, later_half_sent, _connected(server, _half_a_request())]
    newcomer = socket.create_connection((server.host, server.port))
    assert closed_within(newcomer, 5), "a connection beyond the cap was not refused"
    assert metric(server, EVICTED) == 1
    assert not any(closed_within(sock, 0.2) for sock in in_progress), "a request in progress was cut off"
    for sock in (newcomer, idle, *in_progress):
        sock.close()
