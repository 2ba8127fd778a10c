"""Column statistics: table and partition update/get/delete, the request forms, aggregation over
partitions, COLUMN_STATS_ACCURATE, unknown columns, and statistics surviving a rename."""
from __future__ import annotations

import json

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms
from support.builders import partition, table


def long_stats(T, db, tbl, col, low, high, nulls, dvs, part_name=None):
    desc = T.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=db, tableName=tbl, partName=part_name)
    data = T.ColumnStatisticsData(longStats=T.LongColumnStatsData(lowValue=low, highValue=high, numNulls=nulls,
                                                                  numDVs=dvs))
    return T.ColumnStatistics(statsDesc=desc, statsObj=[T.ColumnStatisticsObj(colName=col, colType="int",
                                                                              statsData=data)])


def string_stats(T, db, tbl, col, max_len, avg_len, nulls, dvs, part_name=None):
    desc = T.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=db, tableName=tbl, partName=part_name)
    data = T.ColumnStatisticsData(stringStats=T.StringColumnStatsData(maxColLen=max_len, avgColLen=avg_len,
                                                                      numNulls=nulls, numDVs=dvs))
    return T.ColumnStatistics(statsDesc=desc, statsObj=[T.ColumnStatisticsObj(colName=col, colType="string",
                                                                              statsData=data)])


def accurate_columns(params) -> dict:
    return json.loads(params["COLUMN_STATS_ACCURATE"]).get("COLUMN_STATS", {})


@pytest.fixture
def plain(client, db):
    client.create_table(table(hms, db, "t"))
    return db


@pytest.fixture
def parted(client, db):
    client.create_table(table(hms, db, "p", part_keys=[("ds", "string")]))
    tbl = client.get_table(db, "p")
    client.add_partitions([partition(hms, tbl, [v]) for v in ("a", "b", "c")])
    return db


def test_table_statistics_round_trip(client, hclient, plain):
    db = plain
    assert hclient.update_table_column_statistics(long_stats(A, db, "T", "ID", 1, 100, 2, 50))
    client.update_table_column_statistics(string_stats(hms, db, "t", "name", 12, 5.5, 0, 7))
    got = hclient.get_table_column_statistics(db, "t", "id")
    data = got.statsObj[0].statsData.longStats
    assert (data.lowValue, data.highValue, data.numNulls, data.numDVs) == (1, 100, 2, 50)
    result = client.get_table_statistics_req(hms.TableStatsRequest(dbName=db, tblName="t", colNames=["id", "name"],
                                                                   engine="hive"))
    assert [o.colName for o in result.tableStats] == ["id", "name"]
    assert result.tableStats[1].statsData.stringStats.avgColLen == 5.5
    result = hclient.get_table_statistics_req(A.TableStatsRequest(dbName=db, tblName="t", colNames=["name"]))
    assert result.tableStats[0].statsData.stringStats.maxColLen == 12
    assert accurate_columns(client.get_table(db, "t").parameters) == {"id": "true", "name": "true"}

    # an update replaces the column's row
    client.update_table_column_statistics(long_stats(hms, db, "t", "id", -5, 5, 0, 3))
    assert client.get_table_column_statistics(db, "t", "id").statsObj[0].statsData.longStats.lowValue == -5

    assert client.delete_table_column_statistics(db, "t", "id")
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_table_column_statistics(db, "t", "id")
    assert [o.colName for o in client.get_table_statistics_req(
        hms.TableStatsRequest(dbName=db, tblName="t", colNames=["id", "name"], engine="hive")).tableStats] == ["name"]
    with pytest.raises(hms.NoSuchObjectException):
        client.delete_table_column_statistics(db, "t", "id")


def test_unknown_column_or_table_is_refused(client, hclient, plain):
    db = plain
    with pytest.raises(A.MetaException):
        hclient.update_table_column_statistics(long_stats(A, db, "t", "nope", 1, 2, 0, 1))
    with pytest.raises(hms.NoSuchObjectException):
        client.update_table_column_statistics(long_stats(hms, db, "missing", "id", 1, 2, 0, 1))
    assert "COLUMN_STATS_ACCURATE" not in client.get_table(db, "t").parameters


def test_partition_statistics_round_trip(client, hclient, parted):
    db = parted
    client.update_partition_column_statistics(long_stats(hms, db, "p", "id", 1, 10, 1, 5, "ds=a"))
    hclient.update_partition_column_statistics(long_stats(A, db, "p", "id", 5, 20, 2, 8, "ds=b"))
    client.update_partition_column_statistics(long_stats(hms, db, "p", "id", -3, 7, 0, 4, "ds=c"))
    client.update_partition_column_statistics(string_stats(hms, db, "p", "name", 9, 3.0, 1, 2, "ds=a"))
    got = hclient.get_partition_column_statistics(db, "p", "ds=b", "id")
    assert got.statsObj[0].statsData.longStats.highValue == 20
    assert accurate_columns(client.get_partition(db, "p", ["a"]).parameters) == {"id": "true", "name": "true"}
    assert accurate_columns(client.get_partition(db, "p", ["b"]).parameters) == {"id": "true"}

    result = hclient.get_partitions_statistics_req(A.PartitionsStatsRequest(
        dbName=db, tblName="p", colNames=["id", "name"], partNames=["ds=a", "ds=b"]))
    assert sorted(result.partStats) == ["ds=a", "ds=b"]
    assert [o.colName for o in result.partStats["ds=a"]] == ["id", "name"]
    assert [o.colName for o in result.partStats["ds=b"]] == ["id"]

    aggr = hclient.get_aggr_stats_for(A.PartitionsStatsRequest(
        dbName=db, tblName="p", colNames=["id"], partNames=["ds=a", "ds=b", "ds=c"]))
    assert aggr.partsFound == 3
    merged = aggr.colStats[0].statsData.longStats
    assert (merged.lowValue, merged.highValue, merged.numNulls) == (-3, 20, 3)
    assert merged.numDVs >= 8
    aggr = client.get_aggr_stats_for(hms.PartitionsStatsRequest(
        dbName=db, tblName="p", colNames=["id", "name"], partNames=["ds=a", "ds=b"], engine="hive"))
    assert aggr.partsFound == 1
    assert {o.colName for o in aggr.colStats} == {"id", "name"}

    assert client.delete_partition_column_statistics(db, "p", "ds=a", "name")
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_partition_column_statistics(db, "p", "ds=a", "name")
    assert client.delete_partition_column_statistics(db, "p", "ds=b", None)
    result = client.get_partitions_statistics_req(hms.PartitionsStatsRequest(
        dbName=db, tblName="p", colNames=["id"], partNames=["ds=a", "ds=b", "ds=c"], engine="hive"))
    assert sorted(result.partStats) == ["ds=a", "ds=c"]


def test_partition_statistics_errors(client, hclient, parted):
    db = parted
    with pytest.raises(A.NoSuchObjectException):
        hclient.update_partition_column_statistics(long_stats(A, db, "p", "id", 1, 2, 0, 1, "ds=missing"))
    with pytest.raises(hms.MetaException):
        client.update_partition_column_statistics(long_stats(hms, db, "p", "ds", 1, 2, 0, 1, "ds=a"))
    with pytest.raises(hms.InvalidInputException):
        client.update_partition_column_statistics(long_stats(hms, db, "p", "id", 1, 2, 0, 1))


def test_rename_keeps_statistics(client, parted):
    db = parted
    client.update_table_column_statistics(long_stats(hms, db, "p", "id", 1, 2, 0, 1))
    client.update_partition_column_statistics(long_stats(hms, db, "p", "id", 3, 4, 0, 1, "ds=a"))
    renamed = client.get_table(db, "p")
    renamed.tableName = "p2"
    client.alter_table(db, "p", renamed)
    assert client.get_table_column_statistics(db, "p2", "id").statsObj[0].statsData.longStats.highValue == 2
    got = client.get_partition_column_statistics(db, "p2", "ds=a", "id")
    assert got.statsObj[0].statsData.longStats.highValue == 4
    assert got.statsDesc.tableName == "p2"


def test_dropping_a_column_drops_its_statistics(client, plain):
    db = plain
    client.update_table_column_statistics(long_stats(hms, db, "t", "id", 1, 2, 0, 1))
    client.update_table_column_statistics(string_stats(hms, db, "t", "name", 1, 1.0, 0, 1))
    tbl = client.get_table(db, "t")
    tbl.sd.cols = [c for c in tbl.sd.cols if c.name != "id"]
    client.alter_table(db, "t", tbl)
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table_column_statistics(db, "t", "id")
    assert client.get_table_column_statistics(db, "t", "name").statsObj[0].colName == "name"


def _aggregate(client, db, names) -> tuple[int, tuple[int, int, int, int]]:
    aggr = client.get_aggr_stats_for(hms.PartitionsStatsRequest(dbName=db, tblName="e", colNames=["id"],
                                                                partNames=list(names), engine="hive"))
    stats = aggr.colStats[0].statsData.longStats
    return aggr.partsFound, (stats.lowValue, stats.highValue, stats.numNulls, stats.numDVs)


def test_an_aggregate_is_computed_at_each_call(client, db):
    """Issue 52's case: of 8 partitions asked, 3 hold statistics. hmsproxy extrapolates along the request as Hive
    computes it (low -8, high 800, 80 distinct values), also right after asking for the 3 alone (where Hive 2.3's
    aggregate cache answers their -3, 300, 30 again), and sees a statistics update at once (Hive 2.3's cache
    does not until its entry expires)."""
    client.create_table(table(hms, db, "e", part_keys=[("k", "string")]))
    tbl = client.get_table(db, "e")
    client.add_partitions([partition(hms, tbl, [str(i)]) for i in range(8)])
    names = [f"k={i}" for i in range(8)]
    for i in range(3):
        client.update_partition_column_statistics(
            long_stats(hms, db, "e", "id", -(i + 1), 100 * (i + 1), i + 1, 10 * (i + 1), names[i]))
    assert _aggregate(client, db, names[:3]) == (3, (-3, 300, 6, 30))
    assert _aggregate(client, db, names) == (3, (-8, 800, 16, 80))
    client.update_partition_column_statistics(long_stats(hms, db, "e", "id", -1, 150, 1, 10, names[0]))
    assert _aggregate(client, db, names) == (3, (-8, 150 + 150 * 7 // 2, 16, 80))   # high: 150 at k=0, 300 at k=2
