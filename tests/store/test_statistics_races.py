"""Column statistics written while another instance drops their table or partitions: each write lands with its
owner or is refused as missing, and nothing is left behind pointing at a table or partition that is gone
(hmsproxy declares no foreign keys: only the order of the writes' locks keeps the rows consistent). Checked on
every backend with four processes on one database."""
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS
from support.processes import run_at_once
from support.sql_stores import add_table_t, fresh_store, table_t

VALUES = [str(v) for v in range(4)]


def _sd(where: str) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(cols=[hms.FieldSchema(name="id", type="int")], location=f"file:/w/d.db/{where}",
                                 inputFormat="in", outputFormat="out", parameters={},
                                 serdeInfo=hms.SerDeInfo(serializationLib="lib", parameters={}))


def _partitions() -> list[hms.Partition]:
    return [hms.Partition(values=[v], dbName="d", tableName="t", sd=_sd(f"t/k={v}"), parameters={}, createTime=1,
                          lastAccessTime=0) for v in VALUES]


def _statistics(table_level: bool, value: int) -> hms.ColumnStatistics:
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=table_level, dbName="d", tableName="t",
                                           partName=None if table_level else f"k={VALUES[value % len(VALUES)]}"),
        statsObj=[hms.ColumnStatisticsObj(colName="id", colType="int", statsData=hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=0, highValue=value, numNulls=0, numDVs=value + 1)))])


def _writing_or_dropping(url: str, role: str, count: int, start: Any, results: Any) -> None:
    """role "drop_table": drops d.t and creates it again with its partitions, `count` times; "drop_partitions":
    drops the first two partitions (the drop_table process brings them back); "table_stats" / "partition_stats":
    writes statistics (to each partition in turn). A step refused as missing is tried again (a partition's
    statistics on the next partition) until `count` steps landed. Puts (role, steps that landed, refusals)."""
    store = SqlStore(Database(url))
    landed = refused = 0
    start.wait()
    while landed < count:
        try:
            if role == "drop_table":
                store.drop_table("hive", "d", "t")
                store.create_table(table_t(_sd("t")))
                store.add_partitions("hive", "d", "t", _partitions())
            elif role == "drop_partitions":
                store.drop_partitions("hive", "d", "t", [f"k={v}" for v in VALUES[:2]], if_exists=True)
            elif role == "table_stats":
                store.update_table_column_statistics("hive", _statistics(True, landed))
            else:
                attempt = landed + refused
                store.update_partition_column_statistics("hive", _statistics(False, attempt),
                                                         [VALUES[attempt % len(VALUES)]])
            landed += 1
        except hms.NoSuchObjectException:
            refused += 1
    store.close()
    results.put((role, landed, refused))


def _orphans(store: SqlStore) -> dict[str, list[Any]]:
    """The statistics and parameter rows whose table or partition does not exist."""
    found = {}
    with store.db.transaction() as conn:
        for table, owner, owners in ((s.TAB_COL_STATS, "TBL_ID", s.TBLS), (s.TABLE_PARAMS, "TBL_ID", s.TBLS),
                                     (s.PART_COL_STATS, "PART_ID", s.PARTITIONS),
                                     (s.PARTITION_PARAMS, "PART_ID", s.PARTITIONS)):
            found[table.name] = list(conn.execute(select(table.c[owner]).where(
                table.c[owner].not_in(select(owners.c[owner])))).scalars())
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_statistics_written_while_their_table_and_partitions_are_dropped_leave_no_rows_behind(backend,
                                                                                              tmp_path: Path):
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd("t"))
        store.add_partitions("hive", "d", "t", _partitions())
        url = store.db.url
        outcomes = run_at_once(_writing_or_dropping, [
            (url, "drop_table", 15), (url, "drop_partitions", 15), (url, "table_stats", 80),
            (url, "partition_stats", 80)], timeout_s=240)
        assert sorted(landed for _, landed, _ in outcomes) == [15, 15, 80, 80]
        assert _orphans(store) == {"TAB_COL_STATS": [], "TABLE_PARAMS": [], "PART_COL_STATS": [],
                                   "PARTITION_PARAMS": []}
