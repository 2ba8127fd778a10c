"""hmsproxy against the limit: a minimal server that answers the same clients with hmsproxy's own reply bytes.

    python bench/limit_bench.py [--clients 8] [--seconds 5] [--rounds 3] [--partitions 10000]

The limit server (`LimitServer`, one thread, epoll) reads each request just far enough to find its end and
its method, and answers with the bytes hmsproxy answered that method with, recorded once: no decoding of
arguments, no lookup, no encoding. What hmsproxy spends beyond it is its own cost per call.

Rows measured for hmsproxy and the limit in alternating rounds of one run (medians):
- get_table of cached tables from N client processes (thriftpy2 clients, decoding the reply): calls per second
  and server CPU per call, each client asking for one table over and over, or for 64 tables in turn. hmsproxy
  answers a repeat of a request from the reply before (repeated_requests.py); beside it ("no repeats") a second
  hmsproxy with --remembered-requests 0 decodes and looks up every call;
- get_partitions of a cached table of P partitions, received raw by one client (the reply's bytes, not
  decoded): seconds per listing, server and transfer together.
Prints a table, writes JSON and a PNG plot under bench/results/.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import median
from typing import Any

from cache_bench import _sd, client, hms, paired_bars, partition_values
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.transport import TMemoryBuffer

from support.ports import free_port  # on the path: cache_bench puts tests/ there

TABLES_IN_TURN = tuple(f"small_{i:04d}" for i in range(64))

# ---- the limit server ----------------------------------------------------------------------------------

_FIXED_SIZES = {2: 1, 3: 1, 4: 8, 6: 2, 8: 4, 10: 8}   # bool, byte, double, i16, i32, i64


def _skip(data: bytes | memoryview, pos: int, ttype: int) -> int:
    """The position after one value of `ttype` at `pos`; IndexError/struct.error when the data ends first."""
    if ttype in _FIXED_SIZES:
        if pos + _FIXED_SIZES[ttype] > len(data):
            raise IndexError
        return pos + _FIXED_SIZES[ttype]
    if ttype == 11:   # string
        (size,) = struct.unpack_from("!i", data, pos)
        if pos + 4 + size > len(data):
            raise IndexError
        return pos + 4 + size
    if ttype == 12:   # struct: fields until STOP
        while True:
            field_type = data[pos]
            pos += 1
            if field_type == 0:
                return pos
            pos = _skip(data, pos + 2, field_type)
    if ttype in (14, 15):   # set, list
        element, count = struct.unpack_from("!bi", data, pos)
        pos += 5
        for _ in range(count):
            pos = _skip(data, pos, element)
        return pos
    if ttype == 13:   # map
        key, value, count = struct.unpack_from("!bbi", data, pos)
        pos += 6
        for _ in range(count):
            pos = _skip(data, _skip(data, pos, key), value)
        return pos
    raise ValueError(f"type {ttype}")


def _message_end(data: bytearray) -> tuple[int, str, bytes] | None:
    """(end, method, seqid bytes) of the first whole strict-binary message in `data`, or None."""
    try:
        (name_size,) = struct.unpack_from("!i", data, 4)
        name = bytes(data[8:8 + name_size]).decode()
        seqid = bytes(data[8 + name_size:12 + name_size])
        if len(seqid) < 4:
            return None
        return _skip(data, 12 + name_size, 12), name, seqid
    except (IndexError, struct.error):
        return None


def _serve_limit(listener: socket.socket, replies: dict[str, bytes]) -> None:
    """The limit server's loop: for every whole request, the recorded reply with the request's seqid."""
    templates = {name: (reply[:8 + len(name)], reply[12 + len(name):]) for name, reply in replies.items()}
    selector = selectors.DefaultSelector()
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ)
    pending: dict[socket.socket, bytearray] = {}
    while True:
        for key, _ in selector.select():
            sock = key.fileobj
            if sock is listener:
                conn, _ = listener.accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                pending[conn] = bytearray()
                selector.register(conn, selectors.EVENT_READ)
                continue
            assert isinstance(sock, socket.socket)
            chunk = sock.recv(65536)
            if not chunk:
                selector.unregister(sock)
                del pending[sock]
                sock.close()
                continue
            data = pending[sock]
            data += chunk
            out = []
            while (found := _message_end(data)) is not None:
                end, name, seqid = found
                head, tail = templates[name]
                out += [head, seqid, tail]
                del data[:end]
            if out:
                sock.setblocking(True)
                sock.sendall(b"".join(out))
                sock.setblocking(False)


class LimitServer:
    """The limit server in a process of its own (so that its CPU time can be read like hmsproxy's)."""

    def __init__(self, replies: dict[str, bytes]) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]
        self.process = multiprocessing.get_context("fork").Process(target=_serve_limit, args=(listener, replies),
                                                                  daemon=True)
        self.process.start()
        listener.close()

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.kill()
        self.process.join()


# ---- hmsproxy ------------------------------------------------------------------------------------------

def _cpu_seconds(pid: int | None) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Hmsproxy:
    """`hmsproxy serve` on a SQLite file, cache on, populated and prewarmed before it is measured."""

    def __init__(self, workdir: Path, *flags: str) -> None:
        self.port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "hmsproxy.cli", "serve", "--port", str(self.port), "--metrics-port", "0",
                "--db", f"sqlite:///{workdir / 'metastore.db'}", "--warehouse", str(workdir / "warehouse"),
                "--log-level", "WARNING", "--max-message-bytes", "1gb", *flags]
        self.process = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if "listening on" in line:
                break
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def cpu_seconds(self) -> float:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def populate(port: int, partitions: int) -> None:
    c = client(port)
    c.create_database(hms.Database(name="bench", parameters={}))
    for name in TABLES_IN_TURN:
        c.create_table(hms.Table(tableName=name, dbName="bench", sd=_sd(None), parameters={}, partitionKeys=[],
                                 tableType="EXTERNAL_TABLE"))
    keys = [hms.FieldSchema(name="ds", type="string"), hms.FieldSchema(name="hr", type="int"),
            hms.FieldSchema(name="shard", type="string")]
    c.create_table(hms.Table(tableName="parts", dbName="bench", sd=_sd(None), partitionKeys=keys, parameters={},
                             tableType="EXTERNAL_TABLE"))
    for start in range(0, partitions, 5000):
        parts = [hms.Partition(values=partition_values(i), dbName="bench", tableName="parts", parameters={
            "numFiles": "1", "totalSize": str(1000 + i)}, sd=_sd(f"file:/data/parts/p{i}"))
            for i in range(start, min(partitions, start + 5000))]
        c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName="parts", parts=parts,
                                                      ifNotExists=False, needResult=False))
    c.close()


# ---- requests and replies as bytes ---------------------------------------------------------------------

def request_bytes(api: str, **arguments: Any) -> bytes:
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer)
    args = getattr(hms.ThriftHiveMetastore, api + "_args")(**arguments)
    protocol.write_message_begin(api, 1, 1)
    args.write(protocol)
    protocol.write_message_end()
    return buffer.getvalue()


def recorded_reply(port: int, api: str, **arguments: Any) -> bytes:
    """hmsproxy's reply to one call, exactly as it sent it."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request_bytes(api, **arguments))
        reply = bytearray()
        while (found := _message_end(reply)) is None:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"{api}: the server closed the connection")
            reply += chunk
    success = reply[3] == 2 and struct.unpack_from("!h", reply, 13 + len(api))[0] == 0   # a REPLY, field 0
    assert found[0] == len(reply) and success, f"{api} failed"
    return bytes(reply)


# ---- measurements --------------------------------------------------------------------------------------

def _get_table_loop(port: int, seconds: float, tables: tuple[str, ...], queue: Any) -> None:
    c = client(port)
    for name in tables:
        c.get_table("bench", name)
    calls, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        c.get_table("bench", tables[calls % len(tables)])
        calls += 1
    queue.put(calls)
    c.close()


def throughput(server: Any, clients: int, seconds: float, tables: tuple[str, ...] = ("small_0001",)
               ) -> dict[str, float]:
    """get_table calls per second of `clients` processes for `seconds`, each asking for `tables` in turn, and the
    server's CPU per call."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_get_table_loop, args=(server.port, seconds, tables, queue))
               for _ in range(clients)]
    cpu_before, started = server.cpu_seconds(), time.perf_counter()
    for worker in workers:
        worker.start()
    calls = sum(queue.get() for _ in workers)
    elapsed, cpu = time.perf_counter() - started, server.cpu_seconds() - cpu_before
    for worker in workers:
        worker.join()
    return {"calls_per_s": calls / elapsed, "cpu_us_per_call": cpu / calls * 1e6}


def raw_listing_seconds(port: int, request: bytes, reply_size: int, repeats: int) -> list[float]:
    """Seconds from sending the request to holding the whole reply, received as bytes into one buffer."""
    buffer = bytearray(reply_size)
    view = memoryview(buffer)
    samples = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(repeats):
            started = time.perf_counter()
            sock.sendall(request)
            received = 0
            while received < reply_size:
                count = sock.recv_into(view[received:])
                if count == 0:
                    raise ConnectionError("server closed the connection")
                received += count
            samples.append(time.perf_counter() - started)
    return samples


CASES = {"one": ("small_0001",), "in_turn": TABLES_IN_TURN}   # the tables each client asks for, in turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--listing-repeats", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        servers = {"hmsproxy": Hmsproxy(Path(tmp) / "hmsproxy"),
                   "lookups": Hmsproxy(Path(tmp) / "lookups", "--remembered-requests", "0")}
        try:
            for server in servers.values():
                populate(server.port, args.partitions)
            port = servers["hmsproxy"].port
            replies = {"get_table": recorded_reply(port, "get_table", dbname="bench", tbl_name="small_0001"),
                       "get_partitions": recorded_reply(port, "get_partitions", db_name="bench", tbl_name="parts",
                                                        max_parts=-1)}
            limit = LimitServer(replies)
            listing_request = request_bytes("get_partitions", db_name="bench", tbl_name="parts", max_parts=-1)
            rows: dict[str, dict[str, list[float]]] = {"hmsproxy": {}, "lookups": {}, "limit": {}}
            for _ in range(args.rounds):
                for label, target in (*servers.items(), ("limit", limit)):
                    for case, tables in CASES.items():
                        for name, value in throughput(target, args.clients, args.seconds, tables).items():
                            rows[label].setdefault(f"{name}_{case}", []).append(value)
                    if label != "lookups":
                        rows[label].setdefault("listing_s", []).extend(raw_listing_seconds(
                            target.port, listing_request, len(replies["get_partitions"]), args.listing_repeats))
            limit.stop()
        finally:
            for server in servers.values():
                server.stop()
    report(rows, args, len(replies["get_partitions"]))


def report(rows: dict[str, dict[str, list[float]]], args: argparse.Namespace, listing_bytes: int) -> None:
    mid = {label: {name: median(values) for name, values in measured.items()} for label, measured in rows.items()}
    ours, lookups, limit = mid["hmsproxy"], mid["lookups"], mid["limit"]
    lines = [f"{'':50} {'hmsproxy':>10} {'no repeats':>10} {'limit':>10} {'ratios to the limit':>20}"]
    for case, title in (("one", "get_table of one table"), ("in_turn", f"get_table of {len(TABLES_IN_TURN)} tables")):
        for measure, unit, form in (("calls_per_s", f"{args.clients} clients, calls/s", "10.0f"),
                                    ("cpu_us_per_call", "server CPU per call, us", "10.1f")):
            key = f"{measure}_{case}"
            lines.append(f"{f'{title}, {unit}':50} {ours[key]:{form}} {lookups[key]:{form}} {limit[key]:{form}} "
                         f"{ours[key] / limit[key]:9.2f}x {lookups[key] / limit[key]:9.2f}x")
    lines.append(f"{f'get_partitions {args.partitions} ({listing_bytes / 1e6:.1f} MB) raw, ms':50} "
                 f"{ours['listing_s'] * 1e3:10.2f} {'':>10} {limit['listing_s'] * 1e3:10.2f} "
                 f"{ours['listing_s'] / limit['listing_s']:9.2f}x")
    print("\n".join(lines))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out / f"limit_bench-{stamp}.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "samples": rows, "medians": mid,
         "listing_bytes": listing_bytes}, indent=2))
    paired_bars(args.out / f"limit_bench-{stamp}.png", ["one table: calls/s / 1000", "one table: CPU us per call",
                                                        "no repeats: calls/s / 1000", "no repeats: CPU us per call",
                                                        "get_partitions ms"],
                ("hmsproxy", [ours["calls_per_s_one"] / 1e3, ours["cpu_us_per_call_one"],
                              lookups["calls_per_s_one"] / 1e3, lookups["cpu_us_per_call_one"],
                              ours["listing_s"] * 1e3]),
                ("limit", [limit["calls_per_s_one"] / 1e3, limit["cpu_us_per_call_one"],
                           limit["calls_per_s_one"] / 1e3, limit["cpu_us_per_call_one"], limit["listing_s"] * 1e3]),
                "medians (log scale)", "hmsproxy against the limit server: same clients, same reply bytes")


if __name__ == "__main__":
    main()
