"""The connection loop (connection_loop.py): get_table of a cached table is answered by the loop itself with the
bytes the cache holds; every other request goes to a worker thread and the connection comes back. Replies stay
in order, whole and current, on the buffered and the framed transport. Real clients and raw sockets against a
server on a real socket."""
from __future__ import annotations

import multiprocessing
import re
import socket
import struct
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import thriftpy2.rpc
from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore as HiveIdl
from hmsclient.genthrift.hive_metastore import ttypes as hive_types
from thrift.protocol import TBinaryProtocol as HiveBinaryProtocol
from thrift.transport import TSocket as HiveSocket
from thrift.transport import TTransport as HiveTransport
from thriftpy2.protocol.binary import TBinaryProtocol  # the pure-Python one: it reads from any object with read()
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory
from thriftpy2.transport.memory import TMemoryBuffer

from hmsproxy.idl import hms
from support.builders import placeholder_sd
from support.hmsproxy_server import start_hmsproxy
from support.ports import free_port
from support.running import RunningServer

DB = "loop"


@dataclass
class Served:
    server: RunningServer
    framed: bool
    metrics_port: int

    def client(self):
        return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, self.server.host, self.server.port, timeout=60000,
                                         trans_factory=_transport_factory(self.framed))

    def table_hits(self) -> float:
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read().decode()
        match = re.search(r'^hmsproxy_cache_lookups_total\{kind="table",method="get_table",result="hit"\} '
                          r'([0-9.e+-]+)$', body, re.MULTILINE)
        return float(match.group(1)) if match else 0.0

    def ready_answers(self) -> float:
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read().decode()
        match = re.search(r'^hmsproxy_ready_answers_total\{method="get_table"\} ([0-9.e+-]+)$', body, re.MULTILINE)
        return float(match.group(1)) if match else 0.0


def _transport_factory(framed: bool):
    return TFramedTransportFactory() if framed else TBufferedTransportFactory()


def _table(name: str, parameters: dict[str, str]):
    return hms.Table(tableName=name, dbName=DB, sd=placeholder_sd(columns=[("a", "int")]),
                     partitionKeys=[], parameters=parameters,
                     tableType="MANAGED_TABLE" if "transactional" in parameters else "EXTERNAL_TABLE")


@pytest.fixture(scope="module", params=["buffered", "framed"])
def served(request, tmp_path_factory) -> Iterator[Served]:
    metrics_port = free_port()
    server = start_hmsproxy(tmp_path_factory.mktemp(f"loop-{request.param}"), framed=request.param == "framed",
                            metrics_port=metrics_port)
    served = Served(server, request.param == "framed", metrics_port)
    client = served.client()
    client.create_database(hms.Database(name=DB, parameters={}))
    client.create_table(_table("plain", {"v": "0"}))
    client.create_table(_table("acid", {"transactional": "true", "transactional_properties": "insert_only"}))
    client.close()
    try:
        yield served
    finally:
        server.stop()


def _hive_client(served: Served):
    """hmsclient's generated code (Apache Thrift, Hive's own IDL): it would refuse bytes Hive's wire does not allow."""
    sock = HiveSocket.TSocket(served.server.host, served.server.port)
    transport = HiveTransport.TFramedTransport(sock) if served.framed else HiveTransport.TBufferedTransport(sock)
    transport.open()
    return HiveIdl.Client(HiveBinaryProtocol.TBinaryProtocol(transport)), transport


def test_a_cached_table_is_answered_ready_and_equal_to_the_ordinary_answer(served):
    hive, transport = _hive_client(served)
    try:
        before = served.ready_answers()
        ready = hive.get_table(DB, "plain")
        assert served.ready_answers() == before + 1
        ordinary = hive.get_table_req(hive_types.GetTableRequest(dbName=DB, tblName="plain")).table
        assert ready == ordinary
        assert ready.parameters["v"] == "0" and ready.sd.cols[0].name == "a"
    finally:
        transport.close()


def test_transactional_missing_and_catalog_named_tables_take_the_ordinary_way(served):
    hive, transport = _hive_client(served)
    try:
        before = served.ready_answers()
        assert hive.get_table(DB, "acid").parameters["transactional"] == "true"   # its snapshot rules decide
        with pytest.raises(hive_types.NoSuchObjectException):
            hive.get_table(DB, "missing")
        assert hive.get_table(f"@hive#{DB}", "PLAIN").tableName == "plain"
        assert served.ready_answers() == before
    finally:
        transport.close()


def test_an_altered_table_is_answered_new_at_once(served):
    client = served.client()
    try:
        for version in range(1, 6):
            table = client.get_table(DB, "plain")
            table.parameters["v"] = str(version)
            client.alter_table(DB, "plain", table)
            assert client.get_table(DB, "plain").parameters["v"] == str(version)
    finally:
        client.close()


def _call(api: str, seqid: int, framed: bool, strict: bool = True, **arguments) -> bytes:
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer, strict_write=strict)
    protocol.write_message_begin(api, TMessageType.CALL, seqid)
    protocol.write_struct(getattr(hms.ThriftHiveMetastore, api + "_args")(**arguments))
    protocol.write_message_end()
    message = buffer.getvalue()
    return struct.pack("!i", len(message)) + message if framed else message


class _Replies:
    """Reads reply messages off a raw socket, one after the other."""

    def __init__(self, sock: socket.socket, framed: bool) -> None:
        self._file = sock.makefile("rb")
        self._framed = framed

    def next(self, name: str) -> tuple[int, object]:
        if self._framed:
            (size,) = struct.unpack("!i", self._file.read(4))
            source = TMemoryBuffer(self._file.read(size))
        else:
            source = self._file
        protocol = TBinaryProtocol(_Reading(source))
        api, kind, seqid = protocol.read_message_begin()
        assert (api, kind) == (name, TMessageType.REPLY)
        result = getattr(hms.ThriftHiveMetastore, name + "_result")()
        protocol.read_struct(result)
        return seqid, result


class _Reading:
    def __init__(self, source) -> None:
        self._source = source

    def read(self, size: int) -> bytes:
        data = self._source.read(size)
        assert len(data) == size, "the server closed the connection"
        return data


def test_pipelined_calls_are_answered_in_order_whichever_thread_answers(served):
    calls = [("get_table", {"dbname": DB, "tbl_name": "plain"}),     # the loop
             ("get_database", {"name": DB}),                          # a worker
             ("get_table", {"dbname": DB, "tbl_name": "missing"}),   # a worker, an exception
             ("get_table", {"dbname": DB, "tbl_name": "plain"}),     # the loop again, after the hand-back
             ("get_table", {"dbname": DB, "tbl_name": "acid"})]      # a worker
    with socket.create_connection((served.server.host, served.server.port)) as sock:
        sock.sendall(b"".join(_call(name, seqid, served.framed, **args) for seqid, (name, args) in enumerate(calls)))
        replies = _Replies(sock, served.framed)
        answers = [replies.next(name) for name, _ in calls]
    assert [seqid for seqid, _ in answers] == list(range(len(calls)))
    assert answers[0][1].success.tableName == "plain"
    assert answers[1][1].success.name == DB
    assert answers[2][1].success is None and answers[2][1].o2 is not None
    assert answers[3][1].success.tableName == "plain"
    assert answers[4][1].success.tableName == "acid"


def test_a_request_sent_a_byte_at_a_time_is_answered(served):
    request = _call("get_table", 7, served.framed, dbname=DB, tbl_name="plain")
    with socket.create_connection((served.server.host, served.server.port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(request)):
            sock.send(request[i:i + 1])
        assert _Replies(sock, served.framed).next("get_table")[0] == 7


def test_a_request_larger_than_the_loop_buffers_is_read_whole_by_a_worker(served):
    names = ["plain", *(f"no_such_table_{i:06d}" for i in range(20_000))]   # about 500 KB
    request = _call("get_table_objects_by_name", 3, served.framed, dbname=DB, tbl_names=names)
    assert len(request) > 4 * 65536
    with socket.create_connection((served.server.host, served.server.port)) as sock:
        sock.sendall(request)
        seqid, result = _Replies(sock, served.framed).next("get_table_objects_by_name")
    assert seqid == 3 and [t.tableName for t in result.success] == ["plain"]


def test_replies_the_client_does_not_take_at_once_all_arrive_in_order(served):
    """Thousands of calls sent before any reply is read: the replies outgrow the socket buffers, so the loop cannot
    send them without waiting and hands the rest of a reply to a worker; none is lost, doubled or reordered."""
    count = 4000
    with socket.create_connection((served.server.host, served.server.port)) as sock:
        sock.sendall(b"".join(_call("get_table", seqid, served.framed, dbname=DB, tbl_name="plain")
                              for seqid in range(count)))
        replies = _Replies(sock, served.framed)
        seqids = [replies.next("get_table")[0] for _ in range(count)]
    assert seqids == list(range(count))


def _read_versions(host: str, port: int, framed: bool, start, done, results) -> None:
    """Reads the table's version from the moment every reader and the writer pass `start` until the writer is
    done, then once more."""
    client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, host, port, timeout=60000,
                                       trans_factory=_transport_factory(framed))
    start.wait(60)
    versions = []
    while True:
        last = done.is_set()
        versions.append(int(client.get_table(DB, "counted").parameters["v"]))
        if last:
            break
    client.close()
    results.put(versions)


def test_readers_in_other_processes_never_see_a_write_undone(served):
    """Four processes read one table through the loop while this one alters it 60 times: each reader's versions
    never go down, and the answer after the last alter is the last version. The readers and the writer start
    together and the readers read until the writer is done, and some reader must have seen a version between the
    first and the last: the reads overlapped the writes."""
    client = served.client()
    client.create_table(_table("counted", {"v": "0"}))
    context = multiprocessing.get_context("spawn")
    start, done, results = context.Barrier(5), context.Event(), context.Queue()
    readers = [context.Process(target=_read_versions, args=(served.server.host, served.server.port, served.framed,
                                                            start, done, results)) for _ in range(4)]
    for reader in readers:
        reader.start()
    try:
        start.wait(60)
        for version in range(1, 61):
            table = client.get_table(DB, "counted")
            table.parameters["v"] = str(version)
            client.alter_table(DB, "counted", table)
    finally:
        done.set()
    seen = [results.get(timeout=120) for _ in readers]
    for reader in readers:
        reader.join(60)
    assert int(client.get_table(DB, "counted").parameters["v"]) == 60
    client.close()
    for versions in seen:
        assert versions == sorted(versions) and versions[-1] == 60
    assert any(0 < version < 60 for versions in seen for version in versions), "no read overlapped the writes"


def test_list_keyed_skew_maps_are_read_by_the_tolerant_decoder_and_the_rest_by_the_compiled_one(served):
    """The compiled decoder cannot build a map keyed by lists; the request check says which requests hold one
    with entries, and only those take the slower decoder."""
    client = served.client()
    try:
        table = _table("skewed", {})
        table.sd.skewedInfo = hms.SkewedInfo(skewedColNames=["a"], skewedColValues=[["1"], ["2"]],
                                             skewedColValueLocationMaps={("1",): "file:/w/a=1", ("2",): "file:/w/a=2"})
        table.partitionKeys = [hms.FieldSchema(name="p", type="string")]
        client.create_table(table)
        part = hms.Partition(values=["x"], dbName=DB, tableName="skewed", parameters={}, sd=table.sd)
        plain = hms.Partition(values=["y"], dbName=DB, tableName="skewed", parameters={},
                              sd=hms.StorageDescriptor(cols=table.sd.cols, serdeInfo=table.sd.serdeInfo,
                                                       skewedInfo=hms.SkewedInfo(skewedColNames=[], skewedColValues=[],
                                                                                 skewedColValueLocationMaps={})))
        assert client.add_partitions([part, plain]) == 2
        read = client.get_table(DB, "skewed").sd.skewedInfo.skewedColValueLocationMaps
        assert read == {("1",): "file:/w/a=1", ("2",): "file:/w/a=2"}
        stored = {p.values[0]: p.sd.skewedInfo.skewedColValueLocationMaps
                  for p in client.get_partitions(DB, "skewed", -1)}
        assert stored == {"x": {("1",): "file:/w/a=1", ("2",): "file:/w/a=2"}, "y": {}}
    finally:
        client.close()


@pytest.mark.parametrize("strict", [True, False], ids=["strict-header", "old-header"])
def test_a_repeated_request_gets_its_own_sequence_id_and_counts_as_a_cache_hit(served, strict):
    """A connection asking for the same table again is answered from what it was answered before (the request's
    bytes but its sequence id are the same): each reply carries its own request's id and is counted as a ready
    answer and a cache hit, as the first was."""
    answers, hits = served.ready_answers(), served.table_hits()
    with socket.create_connection((served.server.host, served.server.port)) as sock:
        replies = _Replies(sock, served.framed)
        seen = []
        for seqid in [5, 6, 6, -1, 1 << 30, 0]:
            sock.sendall(_call("get_table", seqid, served.framed, strict=strict, dbname=DB, tbl_name="plain"))
            seen.append(replies.next("get_table"))
    assert [seqid for seqid, _ in seen] == [5, 6, 6, -1, 1 << 30, 0]
    assert all(result.success == seen[0][1].success and result.success.tableName == "plain" for _, result in seen)
    assert served.ready_answers() == answers + 6
    assert served.table_hits() == hits + 6


def test_a_repeated_request_is_answered_new_after_a_change_made_on_another_connection(served):
    """One connection asks for a table over and over while another alters it: each answer after an alter is the
    altered table, never the one the repeating connection was answered with before."""
    client = served.client()
    client.create_table(_table("repeated", {"v": "0"}))
    try:
        with socket.create_connection((served.server.host, served.server.port)) as sock:
            replies = _Replies(sock, served.framed)
            for version in range(6):
                if version:
                    table = client.get_table(DB, "repeated")
                    table.parameters["v"] = str(version)
                    client.alter_table(DB, "repeated", table)
                for seqid in range(3):
                    sock.sendall(_call("get_table", seqid, served.framed, dbname=DB, tbl_name="repeated"))
                    assert replies.next("get_table")[1].success.parameters["v"] == str(version)
    finally:
        client.close()


def test_a_repeated_request_is_answered_new_after_the_table_is_dropped(served):
    client = served.client()
    client.create_table(_table("dropped", {}))
    try:
        with socket.create_connection((served.server.host, served.server.port)) as sock:
            replies = _Replies(sock, served.framed)
            for _ in range(2):
                sock.sendall(_call("get_table", 1, served.framed, dbname=DB, tbl_name="dropped"))
                assert replies.next("get_table")[1].success.tableName == "dropped"
            client.drop_table(DB, "dropped", True)
            sock.sendall(_call("get_table", 2, served.framed, dbname=DB, tbl_name="dropped"))
            seqid, result = replies.next("get_table")
            assert seqid == 2 and result.success is None and result.o2 is not None   # NoSuchObjectException
    finally:
        client.close()


@pytest.mark.parametrize("remembered", [0, 2])
def test_no_more_requests_are_remembered_than_the_flag_allows(tmp_path, remembered):
    """--remembered-requests bounds the replies kept for repeats (0: none); past it the oldest is forgotten, and
    every call is answered right either way."""
    metrics_port = free_port()
    server = start_hmsproxy(tmp_path, metrics_port=metrics_port, remembered_requests=remembered)
    served = Served(server, False, metrics_port)
    try:
        client = served.client()
        client.create_database(hms.Database(name=DB, parameters={}))
        names = [f"kept_{i}" for i in range(3)]
        for name in names:
            client.create_table(_table(name, {"name": name}))
        client.close()
        with socket.create_connection((server.host, server.port)) as sock:
            replies = _Replies(sock, False)
            for seqid in range(3):
                for name in names:
                    sock.sendall(_call("get_table", seqid, False, dbname=DB, tbl_name=name))
                    assert replies.next("get_table")[1].success.parameters["name"] == name
        body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
        assert re.search(rf"^hmsproxy_remembered_requests {remembered}\.0$", body, re.MULTILINE)
        assert served.ready_answers() == 9
    finally:
        server.stop()
