"""get_partitions_by_filter / get_num_partitions_by_filter through the server, with string, int and date
keys and the filter strings Spark sends (HiveShim.convertFilters)."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.idl import hms
from support.builders import partition, table

DAYS = ["2024-01-01", "2024-01-02", "2024-01-10", "2024-02-01"]
HOURS = ["0", "1", "5", "7", "10"]


@pytest.fixture
def tbl(client, db):
    """Partitioned by (ds string, hr int, d date): every day x hour, d equal to ds."""
    client.create_table(table(hms, db, "logs", part_keys=[("ds", "string"), ("hr", "int"), ("d", "date")]))
    tbl = client.get_table(db, "logs")
    parts = [partition(hms, tbl, [ds, hr, ds]) for ds in DAYS for hr in HOURS]
    parts.append(partition(hms, tbl, ["", "-1", "2023-12-31"]))
    client.add_partitions_req(hms.AddPartitionsRequest(dbName=db, tblName="logs", parts=parts, ifNotExists=False,
                                                       needResult=False))
    return tbl


def matching(hclient, tbl, flt: str) -> list[tuple[str, str]]:
    """(ds, hr) of the partitions the filter selects, in the server's order, via Spark's client (hmsclient)."""
    parts = hclient.get_partitions_by_filter(tbl.dbName, tbl.tableName, flt, -1)
    return [(p.values[0], p.values[1]) for p in parts]


def expected(pred) -> list[tuple[str, str]]:
    """What a filter should select, in partition-name order (hr compares as text there: "10" < "5")."""
    rows = [(ds, hr) for ds in DAYS for hr in HOURS if pred(ds, int(hr))]
    return sorted(rows, key=lambda r: f"ds={r[0]}/hr={r[1]}")


@pytest.mark.parametrize("flt, pred", [
    ('ds = "2024-01-01" and hr > 1', lambda ds, hr: ds == "2024-01-01" and hr > 1),
    ('hr > 1 and hr < 10', lambda ds, hr: 1 < hr < 10),
    ('hr >= 5 and hr <= 7', lambda ds, hr: 5 <= hr <= 7),
    ('(ds) in ("2024-01-02", "2024-02-01") and hr = 0',
     lambda ds, hr: ds in ("2024-01-02", "2024-02-01") and hr == 0),
    ('(ds = "2024-01-02" or ds = "2024-01-10") and hr = 10',
     lambda ds, hr: ds in ("2024-01-02", "2024-01-10") and hr == 10),
    ('(hr) not in (0, 1) and ds = "2024-01-01"', lambda ds, hr: hr not in (0, 1) and ds == "2024-01-01"),
    ('(hr != 0 and hr != 1) and ds = "2024-01-01"', lambda ds, hr: hr not in (0, 1) and ds == "2024-01-01"),
    ('ds != "2024-01-01" and hr = 7', lambda ds, hr: ds != "2024-01-01" and hr == 7),
    ('ds like "2024-01-0.*" and hr = 1', lambda ds, hr: ds.startswith("2024-01-0") and hr == 1),
    ('ds like ".*-01" and hr = 1', lambda ds, hr: ds.endswith("-01") and hr == 1),
    ('ds like ".*01-1.*" and hr = 1', lambda ds, hr: "01-1" in ds and hr == 1),
    ('d >= "2024-01-02" and d <= "2024-01-10" and hr = 5',
     lambda ds, hr: "2024-01-02" <= ds <= "2024-01-10" and hr == 5),
    ('d = 2024-01-10 and hr = 5', lambda ds, hr: ds == "2024-01-10" and hr == 5),
    ("ds = '2024-01-01' AND hr BETWEEN 1 AND 5", lambda ds, hr: ds == "2024-01-01" and 1 <= hr <= 5),
])
def test_spark_filters(hclient, tbl, flt, pred):
    assert matching(hclient, tbl, flt) == expected(pred)


def test_integer_key_compares_numerically(hclient, tbl):
    # as text "10" < "5"; HMS compares integral keys as numbers
    assert {hr for _, hr in matching(hclient, tbl, "hr > 5")} == {"7", "10"}
    assert {hr for _, hr in matching(hclient, tbl, 'hr < 5 and ds = "2024-01-01"')} == {"0", "1"}


def test_empty_filter_and_default_partition(client, hclient, tbl):
    assert len(hclient.get_partitions_by_filter(tbl.dbName, tbl.tableName, "", -1)) == len(DAYS) * len(HOURS) + 1
    # HMS 2.3 keeps an empty value as given: only the partition's name says __HIVE_DEFAULT_PARTITION__
    parts = client.get_partitions_by_filter(tbl.dbName, tbl.tableName, 'ds = ""', -1)
    assert [p.values for p in parts] == [["", "-1", "2023-12-31"]]
    assert client.get_partitions_by_filter(tbl.dbName, tbl.tableName, 'ds = "__HIVE_DEFAULT_PARTITION__"', -1) == []
    names = [p.values for p in client.get_partitions_by_filter(tbl.dbName, tbl.tableName, "hr = -1", -1)]
    assert names == [["", "-1", "2023-12-31"]]


def test_max_parts_and_counts(client, hclient, tbl):
    assert len(client.get_partitions_by_filter(tbl.dbName, tbl.tableName, "hr > 0", 3)) == 3
    assert client.get_num_partitions_by_filter(tbl.dbName, tbl.tableName, 'ds = "2024-01-01"') == len(HOURS)
    assert hclient.get_num_partitions_by_filter(tbl.dbName, tbl.tableName, "hr >= 7") == 2 * len(DAYS)
    assert client.get_num_partitions_by_filter(tbl.dbName, tbl.tableName, 'ds = "nope"') == 0


@pytest.mark.parametrize("flt", [
    'ds = ',                         # does not parse
    'not (ds = "2024-01-01")',       # not in Hive 2.3's grammar
    'ds = "2024-01-01" and',
    'unknown_key = "x"',             # no such partition key
    'd = "not-a-date"',
])
def test_bad_filters_are_meta_exceptions(client, hclient, tbl, flt):
    # Spark falls back to fetching all partitions on MetaException; anything else fails the query
    with pytest.raises(A.MetaException):
        hclient.get_partitions_by_filter(tbl.dbName, tbl.tableName, flt, -1)
    with pytest.raises(hms.MetaException):
        client.get_num_partitions_by_filter(tbl.dbName, tbl.tableName, flt)


def test_filter_on_missing_table(client, hclient, db):
    with pytest.raises(A.NoSuchObjectException):
        hclient.get_partitions_by_filter(db, "missing", 'ds = "x"', -1)
