"""get_partitions_by_filter answered by the connection loop from the cache (handler/ready.py,
CachedStore.ready_partitions_by_filter): the same partitions, on the same wire, as the ordinary way; and every
case the ordinary way must decide (a bad filter, the partition request limit, a transactional table, a large
answer, a filter the index does not answer alone or at once) still decided there. Hive's own generated client
(hmsclient) reads the replies, over a real socket."""
from __future__ import annotations

import multiprocessing
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import thriftpy2.rpc
from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore as HiveIdl
from hmsclient.genthrift.hive_metastore import ttypes as hive
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport
from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

from hmsproxy.idl import hms
from hmsproxy.store.cache import cached_store
from support.builders import placeholder_sd
from support.hmsproxy_server import start_hmsproxy
from support.polling import wait_for
from support.ports import free_port
from support.running import RunningServer

DB = "ready"
KEYS = [("ds", "string"), ("hr", "int")]
COLUMNS = [("a", "int")]


@dataclass
class Served:
    server: RunningServer
    metrics_port: int
    framed: bool

    def ready_answers(self) -> float:
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read().decode()
        match = re.search(r'^hmsproxy_ready_answers_total\{method="get_partitions_by_filter"\} ([0-9.e+-]+)$', body,
                          re.MULTILINE)
        return float(match.group(1)) if match else 0.0


def _partition(table: str, ds: str, hr: int) -> hive.Partition:
    return hive.Partition(values=[ds, str(hr)], dbName=DB, tableName=table, parameters={"n": f"{ds}/{hr}"},
                          sd=placeholder_sd(f"s3a://b/{table}/ds={ds}/hr={hr}", COLUMNS, T=hive))


def _table(name: str, parameters: dict[str, str]) -> hive.Table:
    return hive.Table(tableName=name, dbName=DB, sd=placeholder_sd(None, COLUMNS, T=hive), parameters=parameters,
                      partitionKeys=[hive.FieldSchema(name=k, type=t) for k, t in KEYS],
                      tableType="MANAGED_TABLE" if "transactional" in parameters else "EXTERNAL_TABLE")


class HiveClient:
    """hmsclient's generated code (Apache Thrift, Hive's own IDL): it would refuse bytes Hive's wire does not allow."""

    def __init__(self, server: RunningServer, framed: bool) -> None:
        sock = TSocket.TSocket(server.host, server.port)
        self.transport = TTransport.TFramedTransport(sock) if framed else TTransport.TBufferedTransport(sock)
        self.transport.open()
        self.call = HiveIdl.Client(TBinaryProtocol.TBinaryProtocol(self.transport))

    def close(self) -> None:
        self.transport.close()


def _ready(metrics_port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/readyz").status == 200
    except urllib.error.HTTPError:
        return False


def _start(workdir, **settings) -> Iterator[tuple[Served, HiveClient]]:
    metrics_port = free_port()
    server = start_hmsproxy(workdir, metrics_port=metrics_port, **settings)
    # prewarm done first: a load of the tables made below would put new entries, whose values are not sorted yet
    wait_for(lambda: _ready(metrics_port), "/readyz answering 200")
    client = HiveClient(server, settings.get("framed", False))
    try:
        client.call.create_database(hive.Database(name=DB, parameters={}))
        for name, parameters in (("plain", {}), ("acid", {"transactional": "true",
                                                          "transactional_properties": "insert_only"})):
            client.call.create_table(_table(name, parameters))
            client.call.add_partitions([_partition(name, f"2024-01-0{day}", hr) for day in range(1, 4)
                                        for hr in range(0, 30, 3)])
        # the first filter naming a key has its values sorted on a worker; the filters after it are answered at once
        assert len(client.call.get_partitions_by_filter(DB, "plain", 'ds >= "" and hr >= 0', 1)) == 1
        yield Served(server, metrics_port, settings.get("framed", False)), client
    finally:
        client.close()
        server.stop()


@pytest.fixture(params=["buffered", "framed"])
def served(request, tmp_path) -> Iterator[tuple[Served, HiveClient]]:
    yield from _start(tmp_path, framed=request.param == "framed")


def _names(partitions: list[hive.Partition]) -> list[str]:
    return [f"ds={p.values[0]}/hr={p.values[1]}" for p in partitions]


def test_a_filter_on_a_cached_table_is_answered_ready_with_what_the_ordinary_way_answers(served):
    served, client = served
    before = served.ready_answers()
    ready = client.call.get_partitions_by_filter(DB, "plain", 'ds = "2024-01-02" and hr > 10', -1)
    assert served.ready_answers() == before + 1
    assert _names(ready) == [f"ds=2024-01-02/hr={hr}" for hr in (12, 15, 18, 21, 24, 27)]
    assert ready == client.call.get_partitions_by_names(DB, "plain", _names(ready))   # the ordinary way's bytes
    assert ready[0].parameters["n"] == "2024-01-02/12" and ready[0].sd.location.endswith("ds=2024-01-02/hr=12")
    first_three = client.call.get_partitions_by_filter(DB, "plain", "hr >= 3", 3)
    assert _names(first_three) == ["ds=2024-01-01/hr=12", "ds=2024-01-01/hr=15", "ds=2024-01-01/hr=18"]
    assert client.call.get_partitions_by_filter(DB, "plain", 'ds = "2024-02-01"', -1) == []
    assert served.ready_answers() == before + 3


def test_bad_filters_get_the_ordinary_ways_declared_exception(served):
    served, client = served
    before = served.ready_answers()
    for text, message in (('ds = "2024', "Error parsing partition filter"), ("nokey = 1", "not a partition key"),
                          ("ds = 7", "Filtering is supported only on partition keys of type string")):
        with pytest.raises(hive.MetaException, match=message):
            client.call.get_partitions_by_filter(DB, "plain", text, -1)
    with pytest.raises(hive.NoSuchObjectException):
        client.call.get_partitions_by_filter(DB, "missing", "hr = 3", -1)
    assert served.ready_answers() == before


def test_a_transactional_table_a_large_answer_and_many_candidates_take_the_ordinary_way(served, monkeypatch):
    served, client = served
    before = served.ready_answers()
    assert _names(client.call.get_partitions_by_filter(DB, "acid", "hr = 3", -1)) == [
        f"ds=2024-01-0{day}/hr=3" for day in (1, 2, 3)]
    monkeypatch.setattr(cached_store, "READY_PARTITIONS_MAX", 2)
    assert len(client.call.get_partitions_by_filter(DB, "plain", "hr = 3", -1)) == 3
    assert served.ready_answers() == before
    assert len(client.call.get_partitions_by_filter(DB, "plain", "hr = 3", 2)) == 2
    assert served.ready_answers() == before + 1
    monkeypatch.setattr(cached_store, "READY_CANDIDATES_MAX", 5)
    assert len(client.call.get_partitions_by_filter(DB, "plain", "hr = 3 or hr = 6", 2)) == 2   # 6 candidates
    assert len(client.call.get_partitions_by_filter(DB, "plain", 'hr < 6 and ds = "2024-01-01"', -1)) == 2  # 6
    assert served.ready_answers() == before + 1


def test_filters_the_index_does_not_answer_alone_take_the_ordinary_way(served):
    """A LIKE's prefix and a != leave the predicate to test partitions: that is a worker's job, never the loop's."""
    served, client = served
    before = served.ready_answers()
    assert len(client.call.get_partitions_by_filter(DB, "plain", 'ds like "2024-01-0.*"', -1)) == 30
    assert len(client.call.get_partitions_by_filter(DB, "plain", 'ds = "2024-01-01" and hr != 3', -1)) == 9
    assert len(client.call.get_partitions_by_filter(DB, "plain", '', -1)) == 30
    assert served.ready_answers() == before


def test_the_partition_request_limit_refuses_as_the_ordinary_way_does(tmp_path):
    for served, client in _start(tmp_path, partition_request_limit=4):
        assert len(client.call.get_partitions_by_filter(DB, "plain", "hr = 3", -1)) == 3
        assert served.ready_answers() == 1
        with pytest.raises(hive.MetaException, match=r"Number of partitions scanned \(=6\).*exceeds limit \(=4\)"):
            client.call.get_partitions_by_filter(DB, "plain", "hr = 3 or hr = 6", -1)
        assert len(client.call.get_partitions_by_filter(DB, "plain", "hr = 3 or hr = 6", 4)) == 4
        assert served.ready_answers() == 2


def test_a_repeated_filter_is_answered_new_after_a_partition_it_matches_is_added(served):
    """The reply before is kept for repeats of the same request while the table's entry is current; adding a
    partition puts a new entry, so the repeat after it is answered from the new one."""
    served, client = served
    text = 'ds = "2024-01-03" and hr < 7'
    for _ in range(3):
        assert _names(client.call.get_partitions_by_filter(DB, "plain", text, -1)) == [
            "ds=2024-01-03/hr=0", "ds=2024-01-03/hr=3", "ds=2024-01-03/hr=6"]
    client.call.add_partition(_partition("plain", "2024-01-03", 5))
    assert _names(client.call.get_partitions_by_filter(DB, "plain", text, -1)) == [
        "ds=2024-01-03/hr=0", "ds=2024-01-03/hr=3", "ds=2024-01-03/hr=5", "ds=2024-01-03/hr=6"]
    client.call.drop_partition(DB, "plain", ["2024-01-03", "3"], True)
    assert _names(client.call.get_partitions_by_filter(DB, "plain", text, -1)) == [
        "ds=2024-01-03/hr=0", "ds=2024-01-03/hr=5", "ds=2024-01-03/hr=6"]


def _read_while_written(host: str, port: int, framed: bool, start, acknowledged, done, results) -> None:
    """Filters the growing table from the moment every reader and the writer pass `start` until the writer is
    done, then once more: (partitions acknowledged before the call, partitions answered) per call."""
    transport = TFramedTransportFactory() if framed else TBufferedTransportFactory()
    client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, host, port, timeout=60000, trans_factory=transport)
    start.wait(60)
    seen = []
    while True:
        last = done.is_set()
        before = acknowledged.value
        seen.append((before, len(client.get_partitions_by_filter(DB, "grow", 'ds = "x" and hr >= 0', -1))))
        if last:
            break
    client.close()
    results.put(seen)


def test_readers_in_other_processes_see_every_acknowledged_add_and_never_one_undone(served):
    """Four processes filter a table through the loop (ready answers and repeats of them) while this one adds 60
    partitions to it: no answer misses a partition whose add was acknowledged before the call began, no reader's
    count goes down, and each reader's last answer has all 60. They start together, and some answer must hold a
    count between the first and the last: the reads overlapped the adds."""
    served, client = served
    client.call.create_table(_table("grow", {}))
    client.call.add_partition(_partition("grow", "x", 0))
    context = multiprocessing.get_context("spawn")
    start, acknowledged, done, results = context.Barrier(5), context.Value("i", 1), context.Event(), context.Queue()
    readers = [context.Process(target=_read_while_written, args=(
        served.server.host, served.server.port, served.framed, start, acknowledged, done, results)) for _ in range(4)]
    before = served.ready_answers()
    for reader in readers:
        reader.start()
    try:
        start.wait(60)
        for hr in range(1, 60):
            client.call.add_partition(_partition("grow", "x", hr))
            acknowledged.value = hr + 1
    finally:
        done.set()
    seen = [results.get(timeout=120) for _ in readers]
    for reader in readers:
        reader.join(60)
    assert any(1 < count < 60 for answers in seen for _, count in answers), "no read overlapped the adds"
    for answers in seen:
        assert all(count >= acked for acked, count in answers), "an acknowledged add missing from an answer"
        counts = [count for _, count in answers]
        assert counts == sorted(counts) and counts[-1] == 60
    assert served.ready_answers() > before, "the loop answered some of them"
