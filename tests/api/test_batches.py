"""Batched partition listings (get_partitions_batch / get_partition_names_batch) and the client iterator."""
from __future__ import annotations

import pytest

from hmsproxy.client import MetastoreClient
from hmsproxy.idl import hms
from support.builders import partition, table

COUNT = 1200


@pytest.fixture
def big(client, db):
    tbl = table(hms, db, "big", part_keys=[("ds", "string"), ("hr", "int")], table_type="EXTERNAL_TABLE")
    client.create_table(tbl)
    tbl = client.get_table(db, "big")
    parts = [partition(hms, tbl, [f"2024-01-{1 + i // 100:02d}", str(i % 100)], location=f"file:/tmp/x/{i}")
             for i in range(COUNT)]
    client.add_partitions_req(hms.AddPartitionsRequest(dbName=db, tblName="big", parts=parts, ifNotExists=False,
                                                       needResult=False))
    return db, tbl


def _names(parts):
    return sorted(f"ds={p.values[0]}/hr={p.values[1]}" for p in parts)


@pytest.mark.parametrize("connections", [1, 4])
def test_iterating_in_batches_equals_get_partitions(backend_server, client, big, connections):
    db, _ = big
    with MetastoreClient(backend_server.host, backend_server.port) as hmsc:
        batched = list(hmsc.iter_partitions(db, "big", batch_size=170, connections=connections))
        names = list(hmsc.iter_partition_names(db, "big", batch_size=170, connections=connections))
    everything = client.get_partitions(db, "big", -1)
    assert len(batched) == COUNT and len(set(_names(batched))) == COUNT
    assert sorted(batched, key=lambda p: p.values) == sorted(everything, key=lambda p: p.values)
    assert sorted(names) == client.get_partition_names(db, "big", -1)


def test_filtered_batches_equal_get_partitions_by_filter(backend_server, client, big):
    db, _ = big
    wanted = 'ds >= "2024-01-05" and hr < 7'
    with MetastoreClient(backend_server.host, backend_server.port) as hmsc:
        batched = list(hmsc.iter_partitions(db, "big", batch_size=10, filter=wanted, connections=3))
    assert _names(batched) == _names(client.get_partitions_by_filter(db, "big", wanted, -1))
    assert len(batched) == 8 * 7


def test_batches_follow_partition_ids_and_report_the_range(client, big):
    db, _ = big
    first = client.get_partition_names_batch(hms.PartitionBatchRequest(dbName=db, tblName="big", batchSize=500))
    assert len(first.names) == 500 and first.minPartitionId <= first.nextPartitionId <= first.maxPartitionId
    assert first.maxPartitionId - first.minPartitionId + 1 == COUNT     # ids of one request are consecutive
    last = client.get_partition_names_batch(hms.PartitionBatchRequest(
        dbName=db, tblName="big", fromPartitionId=first.maxPartitionId, batchSize=500))
    assert len(last.names) == 1 and last.nextPartitionId == -1
    window = client.get_partition_names_batch(hms.PartitionBatchRequest(
        dbName=db, tblName="big", fromPartitionId=first.minPartitionId, toPartitionId=first.minPartitionId + 10))
    assert window.names == first.names[:10] and window.nextPartitionId == -1
    with pytest.raises(hms.MetaException, match="batchSize"):
        client.get_partitions_batch(hms.PartitionBatchRequest(dbName=db, tblName="big", batchSize=0))
    with pytest.raises(hms.MetaException, match="filter"):
        client.get_partitions_batch(hms.PartitionBatchRequest(dbName=db, tblName="big", filter="ds = "))
    with pytest.raises(hms.NoSuchObjectException):
        client.get_partitions_batch(hms.PartitionBatchRequest(dbName=db, tblName="missing"))


def test_an_empty_table(client, db):
    client.create_table(table(hms, db, "empty", part_keys=[("k", "string")]))
    answer = client.get_partitions_batch(hms.PartitionBatchRequest(dbName=db, tblName="empty"))
    assert (answer.partitions, answer.nextPartitionId, answer.minPartitionId, answer.maxPartitionId) == ([], -1, -1, -1)


def test_changes_during_an_iteration(backend_server, client, big):
    """Partitions added meanwhile come at the end; removed ones not reached yet are simply not returned."""
    db, tbl = big
    seen = []
    with MetastoreClient(backend_server.host, backend_server.port) as hmsc:
        for n, name in enumerate(hmsc.iter_partition_names(db, "big", batch_size=100)):
            seen.append(name)
            if n == 150:
                client.add_partitions([partition(hms, tbl, ["2030-01-01", str(h)], location=f"file:/tmp/y/{h}")
                                       for h in range(3)])
                client.drop_partition_by_name(db, "big", "ds=2024-01-12/hr=99", False)   # not reached yet
                client.drop_partition_by_name(db, "big", "ds=2024-01-01/hr=0", False)    # already seen
    assert seen[-3:] == [f"ds=2030-01-01/hr={h}" for h in range(3)]
    assert "ds=2024-01-12/hr=99" not in seen and "ds=2024-01-01/hr=0" in seen
    assert len(seen) == COUNT + 3 - 1 and len(set(seen)) == len(seen)
