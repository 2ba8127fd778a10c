"""No client holds a connection slot for ever (issue 11): idle connections and slow senders are closed
after their timeouts, the slots come back, and refusals at the cap are logged once per burst. Raw
sockets against a server process with short timeouts."""
from __future__ import annotations

import socket
import time
from typing import Iterator

import pytest
import thriftpy2.rpc
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TMemoryBuffer

from hmsproxy.idl import hms
from support.hmsproxy_server import start_hmsproxy_process
from support.running import RunningServer

CAP = 4


@pytest.fixture
def server(tmp_path) -> Iterator[RunningServer]:
    running = start_hmsproxy_process(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", "--client-idle-timeout-s", "1",
                                     "--request-timeout-s", "1", "--max-connections", str(CAP))
    try:
        yield running
    finally:
        running.stop()


def _get_database_frame() -> bytes:
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocolFactory().get_protocol(buffer)
    protocol.write_message_begin("get_database", TMessageType.CALL, 1)
    protocol.write_struct(hms.ThriftHiveMetastore.get_database_args(name="default"))
    protocol.write_message_end()
    return buffer.getvalue()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True if the server closes the connection (recv gives b'' or a reset) within `seconds`."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _served(server: RunningServer) -> bool:
    client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=5000)
    try:
        return client.get_database("default").name == "default"
    except Exception:
        return False
    finally:
        client.close()


def test_an_idle_connection_is_closed_after_the_idle_timeout(server):
    idle = socket.create_connection((server.host, server.port))
    started = time.monotonic()
    assert _closed_within(idle, 10)
    assert 0.5 < time.monotonic() - started < 5


def test_a_request_sent_a_byte_at_a_time_is_cut_off(server):
    frame = _get_database_frame()
    slow = socket.create_connection((server.host, server.port))
    started = time.monotonic()
    for byte in frame[:-1]:   # one byte every 0.2 s: the whole frame would take several seconds
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            break
        if _closed_within(slow, 0.2):
            break
    assert time.monotonic() - started < 4, "the slow request was read to the end"
    assert _closed_within(slow, 5)


def test_slots_held_by_idle_sockets_come_back_and_refusals_are_logged_once_per_burst(server):
    holders = [socket.create_connection((server.host, server.port)) for _ in range(CAP)]
    time.sleep(0.2)  # lets the server accept the holders before the burst (ordering of the test, not a result)
    refused = []
    for _ in range(20):
        extra = socket.create_connection((server.host, server.port))
        refused.append(_closed_within(extra, 2))
        extra.close()
    assert all(refused), "a connection beyond the cap was not refused at once"
    deadline = time.monotonic() + 10
    while not _served(server):   # the idle holders are closed after 1 s, then a new client is served
        assert time.monotonic() < deadline, "the slots never came back"
        time.sleep(0.1)  # polling the server, bounded by the deadline
    for holder in holders:
        holder.close()
    log = next(server.workdir.glob("hmsproxy-*.log")).read_text()
    assert log.count("refusing a connection") == 1, log[-3000:]
