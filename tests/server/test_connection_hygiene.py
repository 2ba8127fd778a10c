"""No client holds a connection slot for ever (issue 11): idle connections and slow senders are closed
after their timeouts, the slots come back, and refusals at the cap are logged once per burst. Raw
sockets against a server process with short timeouts."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from hmsproxy.idl import hms
from support.hmsproxy_server import start_hmsproxy_process
from support.polling import wait_for
from support.raw_wire import call_frame, closed_within, serves
from support.running import RunningServer
from support.scrape import metric

CAP = 4


@pytest.fixture
def server(tmp_path) -> Iterator[RunningServer]:
    running = start_hmsproxy_process(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", "--client-idle-timeout-s", "1",
                                     "--request-timeout-s", "1", "--max-connections", str(CAP))
    try:
        yield running
    finally:
        running.stop()


def test_an_idle_connection_is_closed_after_the_idle_timeout(server):
    idle = socket.create_connection((server.host, server.port))
    started = time.monotonic()
    assert closed_within(idle, 10)
    assert 0.5 < time.monotonic() - started < 5


def test_a_request_sent_a_byte_at_a_time_is_cut_off(server):
    frame = call_frame("get_database", hms.ThriftHiveMetastore.get_database_args(name="default"))
    slow = socket.create_connection((server.host, server.port))
    started = time.monotonic()
    for byte in frame[:-1]:   # one byte every 0.2 s: the whole frame would take several seconds
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            break
        if closed_within(slow, 0.2):
            break
    assert time.monotonic() - started < 4, "the slow request was read to the end"
    assert closed_within(slow, 5)


def test_slots_held_by_idle_sockets_come_back_and_refusals_are_logged_once_per_burst(server):
    holders = [socket.create_connection((server.host, server.port)) for _ in range(CAP)]
    wait_for(lambda: metric(server, "hmsproxy_open_connections") == CAP, "the server accepted the holders")
    refused = []
    for _ in range(20):
        extra = socket.create_connection((server.host, server.port))
        refused.append(closed_within(extra, 2))
        extra.close()
    assert all(refused), "a connection beyond the cap was not refused at once"
    # the idle holders are closed after 1 s, then a new client is served
    wait_for(lambda: serves(server), "the slots came back", timeout=10, interval=0.1)
    for holder in holders:
        holder.close()
    log = next(server.workdir.glob("hmsproxy-*.log")).read_text()
    assert log.count("refusing a connection") == 1, log[-3000:]
