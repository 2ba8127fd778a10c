"""Column statistics and partition alters written while another instance drops their table or partitions: each
write lands with its owner or is refused as missing, and nothing is left behind pointing at a table or partition
that is gone (hmsproxy declares no foreign keys: only the order of the writes' locks keeps the rows consistent).
Checked on every backend with five processes on one database."""
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
from support.sql_stores import add_table_t, fresh_store, partition_k, sd_at, table_t

VALUES = [str(v) for v in range(4)]
TABLE_AT = "file:/w/d.db/t"


def _partitions(values: list[str] = VALUES, parameters: dict[str, str] | None = None) -> list[hms.Partition]:
    return [partition_k(v, f"{TABLE_AT}/k={v}", parameters) for v in values]


def _statistics(table_level: bool, value: int) -> hms.ColumnStatistics:
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=table_level, dbName="d", tableName="t",
                                           partName=None if table_level else f"k={VALUES[value % len(VALUES)]}"),
        statsObj=[hms.ColumnStatisticsObj(colName="id", colType="int", statsData=hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=0, highValue=value, numNulls=0, numDVs=value + 1)))])


def _writing_or_dropping(url: str, role: str, count: int, start: Any, results: Any) -> None:
    """role "drop_table": drops d.t and creates it again with its partitions, `count` times; "drop_partitions":
    drops the first two partitions (the drop_table process brings them back); "table_stats" / "partition_stats":
    writes statistics (to each partition in turn); "alter": alters the partitions' parameters, or renames one (see
    _alter). A step refused as missing is tried again (a partition's statistics on the next partition) until
    `count` steps landed. Puts (role, steps that landed, refusals)."""
    store = SqlStore(Database(url))
    landed = refused = 0
    start.wait()
    while landed < count:
        try:
            if role == "drop_table":
                store.drop_table("hive", "d", "t")
                store.create_table(table_t(sd_at(TABLE_AT)))
                store.add_partitions("hive", "d", "t", _partitions())
            elif role == "drop_partitions":
                store.drop_partitions("hive", "d", "t", [f"k={v}" for v in VALUES[:2]], if_exists=True)
            elif role == "alter":
                _alter(store, landed + refused)
            elif role == "table_stats":
                store.update_table_column_statistics("hive", _statistics(True, landed))
            else:
                attempt = landed + refused
                store.update_partition_column_statistics("hive", _statistics(False, attempt),
                                                         [VALUES[attempt % len(VALUES)]])
            landed += 1
        except (hms.NoSuchObjectException, hms.InvalidOperationException):
            refused += 1
    store.close()
    results.put((role, landed, refused))


def _alter(store: SqlStore, attempt: int) -> None:
    """Alters the parameters of every partition there is; every third attempt instead renames k=3 to k=9, or back
    (the drop_partitions process leaves both alone, so one of them is there whenever the table is complete)."""
    values = [name.split("=")[1] for name in store.get_partition_names("hive", "d", "t")]
    if attempt % 3 < 2:
        store.alter_partitions("hive", "d", "t", _partitions(values, {"attempt": str(attempt)}))
        return
    old, new = ("9", "3") if "9" in values else ("3", "9")
    store.rename_partition("hive", "d", "t", [old], _partitions([new])[0])


def _orphans(store: SqlStore) -> dict[str, list[Any]]:
    """The statistics, parameter, key value and storage descriptor rows whose table or partition does not exist."""
    found = {}
    with store.db.transaction() as conn:
        for table, owner, owners in ((s.TAB_COL_STATS, "TBL_ID", s.TBLS), (s.TABLE_PARAMS, "TBL_ID", s.TBLS),
                                     (s.PART_COL_STATS, "PART_ID", s.PARTITIONS),
                                     (s.PARTITION_PARAMS, "PART_ID", s.PARTITIONS),
                                     (s.PARTITION_KEY_VALS, "PART_ID", s.PARTITIONS)):
            found[table.name] = list(conn.execute(select(table.c[owner]).where(
                table.c[owner].not_in(select(owners.c[owner])))).scalars())
        in_use = [select(owner.c.SD_ID).where(owner.c.SD_ID.is_not(None)) for owner in (s.PARTITIONS, s.TBLS)]
        found["SDS"] = list(conn.execute(select(s.SDS.c.SD_ID).where(
            *(s.SDS.c.SD_ID.not_in(used) for used in in_use))).scalars())
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_to_a_table_and_partitions_being_dropped_leave_no_rows_behind(backend, tmp_path: Path):
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at(TABLE_AT))
        store.add_partitions("hive", "d", "t", _partitions())
        url = store.db.url
        outcomes = run_at_once(_writing_or_dropping, [
            (url, "drop_table", 15), (url, "drop_partitions", 15), (url, "table_stats", 80),
            (url, "partition_stats", 80), (url, "alter", 60)], timeout_s=240)
        assert sorted(landed for _, landed, _ in outcomes) == [15, 15, 60, 80, 80]
        assert _orphans(store) == {"TAB_COL_STATS": [], "TABLE_PARAMS": [], "PART_COL_STATS": [],
                                   "PARTITION_PARAMS": [], "PARTITION_KEY_VALS": [], "SDS": []}
