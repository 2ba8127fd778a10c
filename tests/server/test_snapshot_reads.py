"""Snapshot-checked reads through the cache: a read that carries a validWriteIdList is answered from memory
only when the cached table is as fresh as that snapshot or newer, and never stale."""
from __future__ import annotations

import re
import urllib.request

import pytest

from hmsproxy.client import reader_snapshot
from hmsproxy.idl import hms
from support.builders import connect_thrift
from support.hmsproxy_server import start_hmsproxy
from support.ports import free_port


class Probe:
    """A client plus the server's counters, read from /metrics."""

    def __init__(self, server, metrics_port: int) -> None:
        self.client = connect_thrift(server, timeout_ms=30000)
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"

    def counter(self, name: str, **labels: str) -> float:
        body = urllib.request.urlopen(self.metrics_url).read().decode()
        total = 0.0
        for line in body.splitlines():
            match = re.match(rf"{name}\{{(.*)\}} ([0-9.e+-]+)$", line)
            if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
                total += float(match.group(2))
        return total

    def table_hits(self) -> float:
        return self.counter("hmsproxy_cache_lookups_total", method="get_table_req", kind="table", result="hit")


@pytest.fixture
def probe(tmp_path):
    metrics_port = free_port()
    server = start_hmsproxy(tmp_path, metrics_port=metrics_port)
    p = Probe(server, metrics_port)
    c = p.client
    c.create_database(hms.Database(name="acid_db", parameters={}))
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], inputFormat="i", outputFormat="o",
                               serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                               bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)
    c.create_table(hms.Table(tableName="t", dbName="acid_db", sd=sd, partitionKeys=[], tableType="MANAGED_TABLE",
                             parameters={"transactional": "true", "transactional_properties": "insert_only"}))
    yield p
    c.close()
    server.stop()


def _snapshot(client, txn=None) -> str:
    """The table's ValidWriteIdList as a reader (optionally inside transaction `txn`) would send it."""
    return str(reader_snapshot(client, "acid_db.t", txn))


def _get(client, snapshot: str | None, table_id: int = -1):
    return client.get_table_req(hms.GetTableRequest(dbName="acid_db", tblName="t", validWriteIdList=snapshot,
                                                    id=table_id)).table


def test_a_transaction_reads_its_own_write_then_everyone_reads_the_commit_from_memory(probe):
    c = probe.client
    before = _snapshot(c)
    hits = probe.table_hits()
    assert _get(c, before).parameters.get("marker") is None
    assert probe.table_hits() == hits + 1                          # fresh snapshot: served from memory

    [txn] = c.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
    [alloc] = c.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(
        dbName="acid_db", tableName="t", txnIds=[txn])).txnToWriteIds
    table = _get(c, None)
    table.parameters["marker"] = "written"
    c.alter_table_req(hms.AlterTableRequest(dbName="acid_db", tableName="t", table=table, writeId=alloc.writeId,
                                            validWriteIdList=_snapshot(c, txn)))

    stale_before = probe.counter("hmsproxy_cache_snapshot_fallbacks_total", reason="stale")
    own = _get(c, _snapshot(c, txn))                                # the writer sees its write id as valid
    assert own.parameters["marker"] == "written" and own.writeId == alloc.writeId
    assert probe.counter("hmsproxy_cache_snapshot_fallbacks_total", reason="stale") == stale_before + 1

    c.commit_txn(hms.CommitTxnRequest(txnid=txn))
    hits = probe.table_hits()
    after = _get(c, _snapshot(c))
    assert after.parameters["marker"] == "written"
    assert probe.table_hits() == hits + 1                          # the commit made the entry usable again


def test_another_table_of_the_same_name_is_never_served(probe):
    c = probe.client
    old = _get(c, None)
    c.drop_table("acid_db", "t", True)
    old.parameters["generation"] = "second"
    c.create_table(old)                                            # same name, new table id
    fallbacks = probe.counter("hmsproxy_cache_snapshot_fallbacks_total", reason="table_id")
    hits = probe.table_hits()
    answer = _get(c, _snapshot(c), table_id=old.id)
    assert answer.id != old.id and answer.parameters["generation"] == "second"
    assert probe.counter("hmsproxy_cache_snapshot_fallbacks_total", reason="table_id") == fallbacks + 1
    assert probe.table_hits() == hits                              # not answered from memory
    assert _get(c, _snapshot(c), table_id=answer.id).id == answer.id
    assert probe.table_hits() == hits + 1


def test_reads_without_a_snapshot_go_to_the_database(probe):
    c = probe.client
    fallbacks = probe.counter("hmsproxy_cache_snapshot_fallbacks_total", reason="no_snapshot")
    assert _get(c, None).tableName == "t"
    assert probe.counter("hmsproxy_cache_snapshot_fallbacks_total", reason="no_snapshot") == fallbacks + 1


def test_strict_mode_refuses_a_transactional_read_without_a_snapshot(tmp_path):
    server = start_hmsproxy(tmp_path, strict_snapshots=True)
    c = connect_thrift(server, timeout_ms=30000)
    try:
        c.create_database(hms.Database(name="acid_db", parameters={}))
        sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], inputFormat="i", outputFormat="o",
                                   serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                                   bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)
        c.create_table(hms.Table(tableName="t", dbName="acid_db", sd=sd, partitionKeys=[], parameters={
            "transactional": "true"}, tableType="MANAGED_TABLE"))
        with pytest.raises(hms.MetaException, match="strict snapshot mode"):
            c.get_table("acid_db", "t")
        assert _get(c, _snapshot(c)).tableName == "t"
    finally:
        c.close()
        server.stop()
