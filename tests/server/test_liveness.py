"""/healthz follows the Thrift connection loop: 200 while it comes round (an idle server, a long call on a worker
thread), 503 while it is stuck, 200 again once it is free. The loop is stuck for real: the audit log is a named
pipe that the test fills, so the loop blocks writing the audit line of a get_table it answers itself (the cache
holds the table's bytes ready), as it would on an audit log whose disk or reader stalls. A real server on real
sockets, real clients."""
from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import thriftpy2.rpc

from hmsproxy.idl import hms
from support.builders import placeholder_sd
from support.hmsproxy_server import start_hmsproxy
from support.polling import wait_for
from support.ports import free_port

STALL_S = 1.0   # --liveness-stall-s of the server under test


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _stays_live(health: str, seconds: float) -> None:
    """/healthz answers 200 every time it is asked over `seconds` (more than the stall threshold)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        assert _get(health) == (200, "ok\n")
        time.sleep(0.1)   # spacing the asks over the window, not waiting for a state


class Pipe:
    """The read end of the audit log's named pipe, and a way to fill it so that the next write blocks."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # before the server opens it: its open does not wait

    def drain(self) -> bytes:
        data = b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return data
            if not chunk:
                return data
            data += chunk

    def fill(self) -> None:
        """Writes until not one more byte fits: the server's next audit line waits for a read."""
        writer = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            for size in (65536, 1):
                while True:
                    try:
                        os.write(writer, b"x" * size)
                    except BlockingIOError:
                        break
        finally:
            os.close(writer)

    def close(self) -> None:
        os.close(self.fd)


class Call(threading.Thread):
    """One client call on a connection of its own, on a thread (it may wait for as long as the server is stuck)."""

    def __init__(self, port: int, call: Callable[[object], object]) -> None:
        super().__init__(daemon=True)
        self.client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=60000)
        self.call = call
        self.result: object = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.call(self.client)
        except BaseException as exc:   # reported by the test, not lost with the thread
            self.error = exc
        finally:
            self.client.close()

    def outcome(self) -> object:
        self.join(timeout=60)
        assert not self.is_alive(), "the call never returned"
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[object, Pipe, str]]:
    pipe = Pipe(tmp_path / "audit.pipe")
    metrics_port = free_port()
    server = start_hmsproxy(tmp_path / "server", metrics_port=metrics_port, audit_log=str(pipe.path),
                            liveness_stall_s=STALL_S)
    try:
        yield server, pipe, f"http://127.0.0.1:{metrics_port}"
    finally:
        pipe.drain()   # room for a call still blocked on the pipe (a failed test's), which would hold up the stop
        server.stop()
        pipe.close()


def test_liveness_follows_the_serving_loop(served):
    server, pipe, base = served
    health = base + "/healthz"
    _stays_live(health, 3 * STALL_S)   # idle: no connection at all
    setup = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", server.port, timeout=60000)
    setup.create_database(hms.Database(name="live", parameters={}))
    setup.create_table(hms.Table(tableName="t", dbName="live", sd=placeholder_sd(columns=[("a", "int")]),
                                 partitionKeys=[], parameters={}, tableType="EXTERNAL_TABLE"))
    setup.close()
    wait_for(lambda: _get(base + "/readyz")[0] == 200, "prewarm done: get_table answered from the cache")
    assert b"cmd=create_table" in pipe.drain()

    pipe.fill()
    # An ordinary call waits on a worker thread (its audit line cannot be written): the loop goes on.
    ordinary = Call(server.port, lambda client: client.get_all_databases())
    ordinary.start()
    _stays_live(health, 3 * STALL_S)
    assert ordinary.is_alive(), "the ordinary call was answered: nothing held its worker"

    # get_table of a cached table is answered by the loop itself, which now waits on the pipe.
    ready = Call(server.port, lambda client: client.get_table("live", "t"))
    ready.start()
    body = wait_for(lambda: (answer := _get(health))[0] == 503 and answer[1], "/healthz answering 503")
    assert body.startswith("not live: the Thrift connection loop has not come round for"), body
    assert ready.is_alive() and ordinary.is_alive()

    released = pipe.drain()   # the reader reads: both audit lines are written, both calls answered
    assert ready.outcome().tableName == "t"
    assert "live" in ordinary.outcome()
    wait_for(lambda: _get(health) == (200, "ok\n"), "/healthz answering 200 again")
    released += pipe.drain()
    assert b"cmd=get_table" in released and b"cmd=get_all_databases" in released
