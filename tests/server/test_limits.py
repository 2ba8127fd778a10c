"""Bounded responses and requests: a listing over the partition limit is refused (never truncated), and
oversized or hostile messages are dropped without the server growing."""
from __future__ import annotations

import re
import socket
import struct
from pathlib import Path

import pytest
from thriftpy2.transport import TTransportException

from hmsproxy.idl import hms
from support.builders import connect_thrift, placeholder_sd
from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy, start_hmsproxy_process


def _partitioned(client, count):
    client.create_database(hms.Database(name="d", parameters={}))
    client.create_table(hms.Table(tableName="t", dbName="d", sd=placeholder_sd(), parameters={},
                                  tableType="EXTERNAL_TABLE", partitionKeys=[hms.FieldSchema(name="k", type="int")]))
    for start in range(0, count, 100):  # requests of 100 partitions stay under the message limits used here
        parts = [hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=placeholder_sd(f"file:/tmp/p/{i}"),
                               parameters={})
                 for i in range(start, min(start + 100, count))]
        client.add_partitions_req(hms.AddPartitionsRequest(dbName="d", tblName="t", parts=parts, ifNotExists=False,
                                                           needResult=False))


@pytest.mark.parametrize("cache", [True, False])
def test_listings_over_the_partition_limit_are_refused_not_truncated(tmp_path, cache):
    server = start_hmsproxy(tmp_path, partition_request_limit=100, cache=cache)
    client = connect_thrift(server)
    try:
        _partitioned(client, 150)
        for call in (lambda: client.get_partitions("d", "t", -1),
                     lambda: client.get_partitions_by_filter("d", "t", "k >= 0", -1),
                     lambda: client.get_partitions_ps("d", "t", [""], -1),
                     lambda: client.get_partitions_by_names("d", "t", [f"k={i}" for i in range(101)])):
            with pytest.raises(hms.MetaException) as refused:
                call()
            assert "d.t" in refused.value.message and "get_partitions_batch" in refused.value.message
            assert re.search(r"\(=1[05]\d\)", refused.value.message)
        assert len(client.get_partitions("d", "t", 100)) == 100               # within the limit: answered
        assert len(client.get_partitions_by_filter("d", "t", "k < 10", -1)) == 10
        assert len(client.get_partition_names("d", "t", -1)) == 150           # names are not limited
        batch = client.get_partitions_batch(hms.PartitionBatchRequest(dbName="d", tblName="t", batchSize=100))
        assert len(batch.partitions) == 100 and batch.nextPartitionId > 0
    finally:
        client.close()
        server.stop()


@pytest.mark.parametrize("cache", [True, False])
def test_a_reply_over_the_maximum_message_size_is_refused(tmp_path, cache):
    server = start_hmsproxy(tmp_path, max_message_bytes=256 * 1024, cache=cache)
    client = connect_thrift(server)
    try:
        _partitioned(client, 1500)   # 1,500 small partitions: a listing well over 256 KB
        with pytest.raises(hms.MetaException, match="maximum message size"):
            client.get_partitions("d", "t", -1)
        assert client.get_database("d").name == "d"                         # the connection is fine
        assert len(client.get_partitions_batch(hms.PartitionBatchRequest(
            dbName="d", tblName="t", batchSize=50)).partitions) == 50
    finally:
        client.close()
        server.stop()


def _rss(pid: int) -> int:
    return int(re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text()).group(1)) * 1024


def _hostile_create_database(declared_length: int, sent: int) -> bytes:
    """A strict binary create_database call whose database name claims `declared_length` bytes."""
    name = b"create_database"
    header = struct.pack("!iI", -2147418111, len(name)) + name + struct.pack("!i", 1)  # version|CALL, name, seqid
    field = struct.pack("!bh", 12, 1) + struct.pack("!bh", 11, 1) + struct.pack("!i", declared_length)
    return header + field + b"x" * sent


def test_oversized_and_hostile_requests_are_dropped_without_the_server_growing(tmp_path):
    with fresh_database("sqlite", tmp_path) as url:
        server = start_hmsproxy_process(tmp_path / "srv", url, "--max-message-bytes", "1mb")
        pid = int(next(p.name for p in Path("/proc").iterdir() if p.name.isdigit() and
                       f"--port\x00{server.port}\x00".encode() in (p / "cmdline").read_bytes()))
        try:
            before = _rss(pid)
            for declared, sent in ((2_000_000_000, 3 * 1024 * 1024), (1_500_000, 1_400_000)):
                with socket.create_connection((server.host, server.port)) as raw:
                    try:
                        raw.sendall(_hostile_create_database(declared, sent))
                    except OSError:
                        pass  # the server may close while we are still sending: that is the point
                    raw.settimeout(10)
                    try:
                        assert raw.recv(1) == b""   # closed, no reply
                    except ConnectionResetError:
                        pass
            client = connect_thrift(server)
            big = hms.Database(name="big", description="x" * (2 * 1024 * 1024), parameters={})
            with pytest.raises((TTransportException, ConnectionError)):
                client.create_database(big)            # a real client's oversized request, dropped too
            client.close()
            client = connect_thrift(server)
            assert client.get_all_databases() == ["default"]   # nothing half-written, still serving
            client.close()
            assert _rss(pid) - before < 64 * 1024 * 1024
        finally:
            server.stop()


def test_quick_stats_skip_a_data_directory_over_the_bound(tmp_path):
    """A table created over a tree with more entries than --quick-stats-max-files gets no numFiles/totalSize
    (the listing stops at the bound); one within it gets them."""
    small, large = tmp_path / "small", tmp_path / "large"
    for directory, count in ((small, 3), (large, 30)):
        directory.mkdir()
        for i in range(count):
            (directory / f"f{i}").write_text("x")
    server = start_hmsproxy_process(tmp_path / "server", f"sqlite:///{tmp_path / 'metastore.db'}",
                                    "--quick-stats-max-files", "10")
    client = connect_thrift(server)
    try:
        client.create_database(hms.Database(name="d", parameters={}))
        for name, directory in (("small", small), ("large", large)):
            client.create_table(hms.Table(tableName=name, dbName="d", sd=placeholder_sd(f"file:{directory}"),
                                          parameters={}, tableType="EXTERNAL_TABLE", partitionKeys=[]))
        assert {k: v for k, v in client.get_table("d", "small").parameters.items()
                if k in ("numFiles", "totalSize")} == {"numFiles": "3", "totalSize": "3"}
        assert not {"numFiles", "totalSize"} & set(client.get_table("d", "large").parameters)
    finally:
        client.close()
        server.stop()
