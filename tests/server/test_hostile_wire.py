"""Decoding is bounded (issue 11): requests are checked before they are decoded (hmsproxy/rpc/wire_check.py).
A VOID-typed list, a container larger than the request could hold, nesting past the depth limit and more
values than the object limit close the connection at once and cost the server nothing; thousands of
truncated and mutated frames leave it serving. Raw frames through real sockets, against a server process."""
from __future__ import annotations

import random
import re
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import thriftpy2.rpc

from hmsproxy.idl import hms
from support.hmsproxy_server import start_hmsproxy_process
from support.raw_wire import call_frame, closed_within, serves
from support.running import RunningServer

MAX_OBJECTS = 100_000


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("wire")
    running = start_hmsproxy_process(workdir, f"sqlite:///{workdir / 'm.db'}", "--max-request-objects",
                                     str(MAX_OBJECTS), "--max-request-depth", "32")
    try:
        yield running
    finally:
        running.stop()


def _with_extra_field(frame: bytes, field: bytes) -> bytes:
    """The call with one more field, one the method does not have, before the struct's end."""
    assert frame.endswith(b"\x00")
    return frame[:-1] + field + b"\x00"


def _rss_mib(pid: int) -> float:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1)) / 1024


def _closed_at_once(server: RunningServer, payload: bytes, within_s: float = 5.0) -> bool:
    with socket.create_connection((server.host, server.port)) as sock:
        try:
            sock.sendall(payload)
        except OSError:
            return True
        return closed_within(sock, within_s)


GET_DATABASE = call_frame("get_database", hms.ThriftHiveMetastore.get_database_args(name="default"))
# get_table of a cached table is answered by the connection loop itself: the same checks must hold there.
GET_TABLE = call_frame("get_table", hms.ThriftHiveMetastore.get_table_args(dbname="default", tbl_name="t"))


@pytest.fixture(scope="module")
def cached_table(server) -> str:
    client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=10000)
    client.create_table(hms.Table(tableName="t", dbName="default", tableType="EXTERNAL_TABLE", parameters={},
                                  partitionKeys=[], sd=hms.StorageDescriptor(cols=[], serdeInfo=hms.SerDeInfo())))
    client.close()
    return "t"


@pytest.mark.parametrize("what, field", [
    ("a list of VOID in a skipped field", struct.pack("!bhbi", 15, 99, 1, 2**31 - 1)),
    ("a map of VOID keys", struct.pack("!bhbbi", 13, 99, 1, 8, 1000)),
    ("an unknown type id", struct.pack("!bh", 17, 99) + b"\x00" * 8),
    ("a list longer than the request could hold", struct.pack("!bhbi", 15, 99, 12, 2**31 - 1)),
    ("a string longer than the request could hold", struct.pack("!bhi", 11, 99, 2**31 - 1)),
    ("a negative length", struct.pack("!bhi", 11, 99, -5)),
    ("lists nested past the depth limit", b"".join(struct.pack("!bhbi", 15, 99, 15, 1) if i == 0 else
                                                   struct.pack("!bi", 15, 1) for i in range(40))
                                          + struct.pack("!bi", 8, 0)),
])
@pytest.mark.parametrize("call", ["get_database", "get_table"])
def test_a_malformed_request_closes_its_connection_at_once(server, cached_table, what, field, call):
    assert _closed_at_once(server, _with_extra_field(GET_TABLE if call == "get_table" else GET_DATABASE, field)), what
    assert serves(server)


def test_many_nearly_empty_structs_are_refused_before_they_take_memory(server):
    before = _rss_mib(server.pid)
    empty_partitions = struct.pack("!bhbi", 15, 1, 12, 4 * MAX_OBJECTS) + b"\x00" * (4 * MAX_OBJECTS)  # 400 KB
    frame = call_frame("add_partitions", hms.ThriftHiveMetastore.add_partitions_args(new_parts=[]))
    # replace the empty list field with the big one: header of field 1 (list of struct, 0 elements) + stop
    frame = frame[:frame.index(struct.pack("!bhbi", 15, 1, 12, 0))] + empty_partitions + b"\x00"
    assert _closed_at_once(server, frame)
    assert _rss_mib(server.pid) - before < 50
    assert serves(server)


def test_thousands_of_truncated_and_mutated_frames_leave_the_server_serving(server, cached_table):
    frame = GET_TABLE
    rng = random.Random(20261124)
    before = _rss_mib(server.pid)
    started = time.monotonic()
    for i in range(3000):
        data = bytearray(frame)
        if rng.random() < 0.5:
            data = data[:rng.randrange(1, len(data))]
        else:
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        with socket.create_connection((server.host, server.port)) as sock:
            sock.sendall(bytes(data))
        if i % 500 == 499:
            assert serves(server), f"not serving after {i + 1} frames"
    assert serves(server)
    assert _rss_mib(server.pid) - before < 50
    assert time.monotonic() - started < 60
