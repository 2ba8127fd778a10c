"""The cyclic collector stays out of ordinary writes: adding partitions in batches of 100 runs it at most once in
500 partitions (CPython's default threshold ran it five to six times per batch, with stalls of tens of ms once
the heap is large)."""
from __future__ import annotations

import gc

from hmsproxy.idl import hms
from support.builders import connect_thrift
from support.hmsproxy_server import start_hmsproxy


def _partitions(start: int) -> list[hms.Partition]:
    cols = [hms.FieldSchema(name=f"c{i}", type="string") for i in range(5)]
    return [hms.Partition(values=[f"2024-{i:05d}", str(i % 7)], dbName="db", tableName="t",
                          parameters={"numFiles": "1", "totalSize": str(i)},
                          sd=hms.StorageDescriptor(cols=cols, location=f"s3a://bucket/t/p{i}", inputFormat="in",
                                                   outputFormat="out", serdeInfo=hms.SerDeInfo(
                                                       serializationLib="lib", parameters={"a": "1"})))
            for i in range(start, start + 100)]


def test_adding_partitions_in_batches_hardly_runs_the_cyclic_collector(tmp_path):
    server = start_hmsproxy(tmp_path)
    client = connect_thrift(server)
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    try:
        client.create_database(hms.Database(name="db", parameters={}))
        client.create_table(hms.Table(
            tableName="t", dbName="db", tableType="EXTERNAL_TABLE", parameters={},
            partitionKeys=[hms.FieldSchema(name="ds", type="string"), hms.FieldSchema(name="hr", type="int")],
            sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name=f"c{i}", type="string") for i in range(5)],
                                     location="s3a://bucket/t", serdeInfo=hms.SerDeInfo(serializationLib="lib"))))
        batches = [_partitions(start) for start in range(0, 500, 100)]
        gc.collect()
        gc.callbacks.append(count)
        try:
            for parts in batches:
                client.add_partitions_req(hms.AddPartitionsRequest(dbName="db", tblName="t", parts=parts,
                                                                   ifNotExists=False, needResult=False))
        finally:
            gc.callbacks.remove(count)
        assert len(client.get_partition_names("db", "t", -1)) == 500
        assert len(collections) <= 1, collections
    finally:
        client.close()
        server.stop()
