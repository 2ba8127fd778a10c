"""End-to-end PySpark workload against a Hive Metastore.

Run standalone:

    python spark_workload.py --metastore-uri thrift://127.0.0.1:9083 \
        --warehouse /path/to/warehouse --out results.json [--data-dir DIR]

One SparkSession (local[2], Hive support) runs a list of small steps: DDL, DML, partition pruning,
MSCK, ANALYZE, views, functions, renames, drops. Each step's result is stored in a JSON dict keyed by
the step name. The values never contain paths or timestamps, so the JSON from two different metastores
(the real Hive Metastore and hmsproxy) can be compared for equality. A failing step records
``{"error": "..."}`` and the script goes on with the next one; the exit status is 1 if any step failed.

The dataset is generated deterministically by :func:`generate_rows` from the constants below; the test
module imports them to compute the expected row counts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

# --------------------------------------------------------------------------------------------------
# Deterministic dataset
# --------------------------------------------------------------------------------------------------

REGIONS = ("ap-south", "eu-central", "eu-west", "us-east", "us-west")
HOURS = tuple(range(6))  # int partition key
START_DATE = dt.date(2024, 1, 1)
N_DAYS = 12  # date partition key: START_DATE .. START_DATE + N_DAYS - 1
N_ROWS = 1000  # 5 * 6 * 12 = 360 partitions, 2-3 rows each

DB = "e2e_db"
SCRATCH_DB = "e2e_scratch"
EVENTS = f"{DB}.events"


def day(i: int) -> dt.date:
    return START_DATE + dt.timedelta(days=i)


def generate_rows(n_rows: int = N_ROWS) -> list[tuple]:
    """Rows (id, name, amount, price, region, hr, ds) for the events table; fully deterministic."""
    rows = []
    for i in range(n_rows):
        region = REGIONS[i % len(REGIONS)]
        hr = HOURS[(i // len(REGIONS)) % len(HOURS)]
        ds = day((i // (len(REGIONS) * len(HOURS))) % N_DAYS)
        rows.append((i, f"item{i:04d}", (i * 37) % 1000, round((i % 97) * 1.25, 2), region, hr, ds))
    return rows


EVENT_COLUMNS = ("id", "name", "amount", "price", "region", "hr", "ds")

# Partitions added / renamed / dropped / overwritten by the workload (the test uses the same values).
ADDED_PARTS = (("zz-new", 0, day(60)), ("zz-new", 1, day(60)))
RENAMED_FROM = ADDED_PARTS[0]
RENAMED_TO = ("zz-renamed", 7, day(61))
ROWS_INTO_ADDED = 5  # rows inserted into RENAMED_FROM before the rename
DROPPED_PARTIAL = ("ap-south", 5)  # DROP PARTITION (region=..., hr=...): all days of it
OVERWRITTEN_PART = ("us-east", 2, day(1))
OVERWRITE_ROWS = 7  # ids 0..6 written into OVERWRITTEN_PART
TRUNCATED_PART = ("eu-west", 3, day(4))
ANALYZED_REGION = "eu-central"  # ANALYZE ... PARTITION (region=..., hr, ds)

# Directories written behind the metastore's back for MSCK REPAIR: (region, hr, ds) -> rows
MSCK_PARTS = tuple((r, h, day(d)) for r in ("m-a", "m-b") for h in (1, 2) for d in (0, 1, 2))
MSCK_ROWS_PER_PART = 4
MSCK_REMOVED = MSCK_PARTS[-1]  # its directory is deleted before MSCK ... SYNC PARTITIONS

PLAIN_ROWS = 200  # unpartitioned table: ids 0..PLAIN_ROWS-1 of the dataset
PLAIN_OVERWRITE_MAX_ID = 50  # INSERT OVERWRITE keeps ids < 50
EXTERNAL_ROWS = 30


def part_spec(part: tuple) -> str:
    region, hr, ds = part
    return f"region='{region}', hr={hr}, ds='{ds.isoformat()}'"


def part_name(part: tuple) -> str:
    region, hr, ds = part
    return f"region={region}/hr={hr}/ds={ds.isoformat()}"


# --------------------------------------------------------------------------------------------------
# Step machinery
# --------------------------------------------------------------------------------------------------


@dataclass
class Ctx:
    spark: Any
    warehouse: Path
    data_dir: Path
    scratch: dict = field(default_factory=dict)  # values shared between steps (never in results)

    def sql(self, text: str):
        return self.spark.sql(text)

    @contextmanager
    def conf(self, key: str, value: str):
        """A Spark setting for the statements inside the block only."""
        old = self.spark.conf.get(key)
        self.spark.conf.set(key, value)
        try:
            yield
        finally:
            self.spark.conf.set(key, old)

    def metastore_filter_fallback(self):
        """Lets Spark fetch all partitions when get_partitions_by_filter answers MetaException.

        The real HMS 2.3 cannot evaluate a filter that combines LIKE with a non-string partition key
        (direct SQL has no LIKE, the JDO fallback only filters string keys): it answers MetaException
        "Filtering is supported only on partition keys of type string", and Spark 4 fails the query
        unless this setting is on. Used only around such queries, so that everywhere else a metastore
        filter error still fails the step.
        """
        return self.conf("spark.sql.hive.metastorePartitionPruningFallbackOnException", "true")

    def basic_pushdown(self):
        """Spark's simpler filter strings: without advanced pushdown, IN / NOT IN / BETWEEN are sent
        as plain comparisons, or not at all (then Spark filters the partitions it got)."""
        return self.conf("spark.sql.hive.advancedPartitionPredicatePushdown.enabled", "false")

    def rows(self, text: str) -> list[list]:
        return [list(r) for r in self.sql(text).collect()]

    def scalar(self, text: str):
        return self.sql(text).collect()[0][0]

    def count(self, table_or_query: str) -> int:
        return int(self.scalar(f"SELECT count(*) FROM {table_or_query}"))

    def partitions(self, table: str, spec: str | None = None) -> list[str]:
        q = f"SHOW PARTITIONS {table}" + (f" PARTITION ({spec})" if spec else "")
        return sorted(r[0] for r in self.sql(q).collect())

    def tables(self, db: str, pattern: str | None = None) -> list[str]:
        q = f"SHOW TABLES IN {db}" + (f" LIKE '{pattern}'" if pattern else "")
        return sorted(r.tableName for r in self.sql(q).collect() if not r.isTemporary)

    def describe_columns(self, table: str) -> list[list]:
        """DESCRIBE output (columns + '# Partition Information' section), comments included."""
        return [[r.col_name, r.data_type, r.comment] for r in self.sql(f"DESCRIBE {table}").collect()]

    def formatted(self, what: str) -> dict:
        """DESCRIBE FORMATTED as a dict (first occurrence of each key)."""
        out: dict = {}
        for r in self.sql(f"DESCRIBE FORMATTED {what}").collect():
            out.setdefault(r.col_name.strip(), (r.data_type or "").strip())
        return out

    def location(self, table: str, spec: str | None = None) -> Path:
        what = table + (f" PARTITION ({spec})" if spec else "")
        return uri_to_path(self.formatted(what)["Location"])

    def stats_rows(self, what: str, key: str = "Statistics") -> int | None:
        """Row count from DESCRIBE FORMATTED's 'Statistics' / 'Partition Statistics' ('N bytes, M rows')."""
        value = self.formatted(what).get(key)
        if not value or "rows" not in value:
            return None
        return int(value.split(",")[1].strip().split()[0])


def uri_to_path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("file", "") else Path(uri)


def data_files(path: Path) -> int:
    """Number of visible data files under path (recursively; '_' and '.' files are ignored)."""
    if not path.exists():
        return 0
    n = 0
    for _root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        n += sum(1 for f in files if not f.startswith((".", "_")))
    return n


STEPS: list[tuple[str, Callable[[Ctx], Any]]] = []


def step(fn: Callable[[Ctx], Any]) -> Callable[[Ctx], Any]:
    STEPS.append((fn.__name__, fn))
    return fn


# --------------------------------------------------------------------------------------------------
# Steps (run in this order)
# --------------------------------------------------------------------------------------------------


@step
def create_database(c: Ctx):
    c.sql(
        f"CREATE DATABASE {DB} COMMENT 'hmsproxy end-to-end database' "
        "WITH DBPROPERTIES ('team'='data-platform', 'purpose'='e2e')"
    )
    c.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")  # no-op
    c.sql(f"CREATE DATABASE {SCRATCH_DB}")
    info = {r[0]: r[1] for r in c.rows(f"DESCRIBE DATABASE EXTENDED {DB}")}
    return {
        "name": info.get("Database Name") or info.get("Namespace Name"),
        "comment": info.get("Comment"),
        "properties": info.get("Properties"),
        "dir_exists": (c.warehouse / f"{DB}.db").is_dir(),
    }


@step
def show_databases(c: Ctx):
    return {
        "all": sorted(r[0] for r in c.rows("SHOW DATABASES")),
        "like_e2e_star": sorted(r[0] for r in c.rows("SHOW DATABASES LIKE 'e2e*'")),
        "like_alternatives": sorted(r[0] for r in c.rows("SHOW DATABASES LIKE 'e2e_s*|default|nomatch'")),
        "like_none": sorted(r[0] for r in c.rows("SHOW DATABASES LIKE 'nomatch*'")),
    }


@step
def create_partitioned_table(c: Ctx):
    c.sql(
        f"CREATE TABLE {EVENTS} (id bigint COMMENT 'row id', name string, amount int, price double) "
        "COMMENT 'generated events' "
        "PARTITIONED BY (region string, hr int, ds date) STORED AS PARQUET "
        "TBLPROPERTIES ('created.by'='e2e', 'quality'='bronze')"
    )
    return {"describe": c.describe_columns(EVENTS), "partitions": c.partitions(EVENTS)}


@step
def insert_dynamic_partitions(c: Ctx):
    df = c.spark.createDataFrame(
        generate_rows(), "id bigint, name string, amount int, price double, region string, hr int, ds date"
    )
    df.createOrReplaceTempView("src")
    c.sql(
        f"INSERT INTO {EVENTS} PARTITION (region, hr, ds) "
        "SELECT id, name, amount, price, region, hr, ds FROM src DISTRIBUTE BY region, hr, ds"
    )
    parts = c.partitions(EVENTS)
    return {"rows": c.count(EVENTS), "partition_count": len(parts)}


@step
def show_partitions_full(c: Ctx):
    return c.partitions(EVENTS)


@step
def show_partitions_partial(c: Ctx):
    return {
        "region": c.partitions(EVENTS, "region='us-west'"),
        "region_hr": c.partitions(EVENTS, "region='eu-west', hr=3"),
        "ds_only": c.partitions(EVENTS, f"ds='{day(5).isoformat()}'"),
        "hr_ds": c.partitions(EVENTS, f"hr=0, ds='{day(0).isoformat()}'"),
    }


# Partition-predicate SELECTs: step name -> WHERE clause. The test re-evaluates each clause in Python.
PRUNING_QUERIES: dict[str, str] = {
    "select_string_eq": "region = 'us-east'",
    "select_string_gt": "region > 'eu-west'",
    "select_string_in": "region IN ('eu-west', 'ap-south')",
    "select_string_not_in": "region NOT IN ('eu-west', 'ap-south', 'us-east')",
    "select_string_like_prefix": "region LIKE 'us%'",
    "select_string_like_suffix": "region LIKE '%west'",
    "select_string_like_contains": "region LIKE '%-c%'",
    "select_string_ne": "region <> 'us-east'",
    "select_int_eq": "hr = 3",
    "select_int_gt": "hr > 3",
    "select_int_le": "hr <= 1",
    "select_int_in": "hr IN (0, 2, 5)",
    "select_int_not_in": "hr NOT IN (0, 1)",
    "select_int_between": "hr BETWEEN 2 AND 4",
    "select_date_eq": f"ds = DATE '{day(3).isoformat()}'",
    "select_date_gt": f"ds > DATE '{day(8).isoformat()}'",
    "select_date_in": f"ds IN (DATE '{day(0).isoformat()}', DATE '{day(11).isoformat()}')",
    "select_date_not_in": f"ds NOT IN (DATE '{day(0).isoformat()}', DATE '{day(1).isoformat()}')",
    "select_date_between": f"ds BETWEEN DATE '{day(2).isoformat()}' AND DATE '{day(4).isoformat()}'",
    "select_date_string_literal": f"ds = '{day(7).isoformat()}'",
    "select_or_string_int": "region = 'us-west' OR hr = 4",
    "select_or_date_int": f"ds = DATE '{day(10).isoformat()}' OR hr < 1",
    "select_and_all_keys": f"region = 'eu-central' AND hr >= 2 AND ds < DATE '{day(6).isoformat()}'",
    "select_mixed_and_or": f"(region LIKE 'eu%' AND hr IN (1, 3)) OR (ds >= DATE '{day(11).isoformat()}' AND hr = 0)",
    "select_partition_and_data": "region = 'ap-south' AND amount > 500",
    "select_no_match": "region = 'nowhere'",
}


# Filters the real HMS 2.3 rejects (LIKE together with an int/date key): run with the fallback on.
NEEDS_FILTER_FALLBACK = {"select_mixed_and_or"}


# The same queries again with advanced partition predicate pushdown off (step name: "basic_" + query name).
BASIC_PUSHDOWN_QUERIES = ("select_string_in", "select_string_not_in", "select_int_in", "select_int_between",
                          "select_date_in", "select_or_string_int", "select_and_all_keys")


def _pruning_step(name: str, where: str, basic_pushdown: bool = False):
    def run(c: Ctx):
        q = f"SELECT count(*), coalesce(sum(amount), 0), count(DISTINCT region, hr, ds) FROM {EVENTS} WHERE {where}"
        if name in NEEDS_FILTER_FALLBACK:
            with c.metastore_filter_fallback():
                row = c.sql(q).collect()[0]
        elif basic_pushdown:
            with c.basic_pushdown():
                row = c.sql(q).collect()[0]
        else:
            row = c.sql(q).collect()[0]
        return {"rows": int(row[0]), "sum_amount": int(row[1]), "partitions": int(row[2])}

    run.__name__ = "basic_" + name if basic_pushdown else name
    return run


for _name, _where in PRUNING_QUERIES.items():
    step(_pruning_step(_name, _where))
for _name in BASIC_PUSHDOWN_QUERIES:
    step(_pruning_step(_name, PRUNING_QUERIES[_name], basic_pushdown=True))


@step
def add_partitions(c: Ctx):
    specs = " ".join(f"PARTITION ({part_spec(p)})" for p in ADDED_PARTS)
    c.sql(f"ALTER TABLE {EVENTS} ADD {specs}")
    c.sql(f"ALTER TABLE {EVENTS} ADD IF NOT EXISTS PARTITION ({part_spec(ADDED_PARTS[0])})")  # no-op
    already = None
    try:
        c.sql(f"ALTER TABLE {EVENTS} ADD PARTITION ({part_spec(ADDED_PARTS[0])})")
    except Exception as e:  # expected: partition already exists
        already = type(e).__name__
    c.scratch["added_locations"] = [c.location(EVENTS, part_spec(p)) for p in ADDED_PARTS]
    return {
        "partitions": c.partitions(EVENTS, "region='zz-new'"),
        "rows": c.count(f"{EVENTS} WHERE region = 'zz-new'"),
        "duplicate_add_error": already,
        "dirs_exist": [p.is_dir() for p in c.scratch["added_locations"]],
        "total_partitions": len(c.partitions(EVENTS)),
    }


@step
def insert_into_static_partition(c: Ctx):
    c.sql(
        f"INSERT INTO {EVENTS} PARTITION ({part_spec(RENAMED_FROM)}) "
        f"SELECT id, name, amount, price FROM src WHERE id < {ROWS_INTO_ADDED}"
    )
    return {"rows": c.count(f"{EVENTS} WHERE region = 'zz-new' AND hr = {RENAMED_FROM[1]}")}


@step
def rename_partition(c: Ctx):
    old_loc = c.location(EVENTS, part_spec(RENAMED_FROM))
    c.sql(f"ALTER TABLE {EVENTS} PARTITION ({part_spec(RENAMED_FROM)}) RENAME TO PARTITION ({part_spec(RENAMED_TO)})")
    new_loc = c.location(EVENTS, part_spec(RENAMED_TO))
    return {
        "zz_partitions": c.partitions(EVENTS, "region='zz-new'") + c.partitions(EVENTS, "region='zz-renamed'"),
        "rows_new": c.count(f"{EVENTS} WHERE region = '{RENAMED_TO[0]}' AND hr = {RENAMED_TO[1]}"),
        "rows_old": c.count(f"{EVENTS} WHERE region = '{RENAMED_FROM[0]}' AND hr = {RENAMED_FROM[1]}"),
        "old_dir_exists": old_loc.exists(),
        "new_dir_files": data_files(new_loc),
        "new_location_relative": new_loc.relative_to(c.warehouse).as_posix()
        if new_loc.is_relative_to(c.warehouse)
        else "outside-warehouse",
    }


@step
def drop_partitions(c: Ctx):
    renamed_loc = c.location(EVENTS, part_spec(RENAMED_TO))
    c.sql(f"ALTER TABLE {EVENTS} DROP PARTITION ({part_spec(RENAMED_TO)})")
    c.sql(f"ALTER TABLE {EVENTS} DROP IF EXISTS PARTITION ({part_spec(RENAMED_TO)})")  # no-op
    c.sql(f"ALTER TABLE {EVENTS} DROP PARTITION (region='zz-new')")  # partial spec: remaining added one
    region, hr = DROPPED_PARTIAL
    partial_locs = [c.location(EVENTS, part_spec((region, hr, day(d)))) for d in range(N_DAYS)]
    c.sql(f"ALTER TABLE {EVENTS} DROP PARTITION (region='{region}', hr={hr})")
    missing = None
    try:
        c.sql(f"ALTER TABLE {EVENTS} DROP PARTITION (region='nowhere', hr=1, ds='2024-01-01')")
    except Exception as e:  # expected: no such partition
        missing = type(e).__name__
    return {
        "total_partitions": len(c.partitions(EVENTS)),
        "dropped_partial": c.partitions(EVENTS, f"region='{region}', hr={hr}"),
        "rows": c.count(EVENTS),
        "renamed_dir_exists": renamed_loc.exists(),
        "added_dirs_exist": [p.exists() for p in c.scratch.get("added_locations", [])],
        "partial_dirs_exist": sorted(set(p.exists() for p in partial_locs)),
        "drop_missing_error": missing,
    }


@step
def insert_overwrite_partition(c: Ctx):
    c.sql(
        f"INSERT OVERWRITE TABLE {EVENTS} PARTITION ({part_spec(OVERWRITTEN_PART)}) "
        f"SELECT id, name, amount, price FROM src WHERE id < {OVERWRITE_ROWS}"
    )
    region, hr, ds = OVERWRITTEN_PART
    return {
        "partition_rows": c.count(f"{EVENTS} WHERE region = '{region}' AND hr = {hr} AND ds = DATE '{ds}'"),
        "rows": c.count(EVENTS),
        "total_partitions": len(c.partitions(EVENTS)),
    }


@step
def add_columns(c: Ctx):
    c.sql(f"ALTER TABLE {EVENTS} ADD COLUMNS (note string COMMENT 'added later', score double)")
    c.sql(
        f"INSERT INTO {EVENTS} PARTITION (region='us-west', hr=0, ds='{day(0)}') "
        "SELECT id, name, amount, price, 'late', 1.5 FROM src WHERE id BETWEEN 1000 AND 1000"
    )  # selects nothing: exercises the write path with the new schema
    return {
        "describe": c.describe_columns(EVENTS),
        "null_notes": c.count(f"{EVENTS} WHERE note IS NULL"),
        "rows": c.count(EVENTS),
    }


VOLATILE_PROPS = {"transient_lastDdlTime", "last_modified_time", "last_modified_by"}


@step
def set_tblproperties(c: Ctx):
    c.sql(f"ALTER TABLE {EVENTS} SET TBLPROPERTIES ('quality'='gold', 'e2e.version'='2', 'tmp.key'='x')")
    c.sql(f"ALTER TABLE {EVENTS} UNSET TBLPROPERTIES ('tmp.key')")
    props = {r[0]: r[1] for r in c.rows(f"SHOW TBLPROPERTIES {EVENTS}")}
    wanted = ("created.by", "quality", "e2e.version", "tmp.key", "comment")
    return {
        "selected": {k: props.get(k) for k in wanted},
        "one": c.rows(f"SHOW TBLPROPERTIES {EVENTS} ('quality')"),
        "table_comment": c.formatted(EVENTS).get("Comment"),
    }


@step
def analyze_partitioned_table(c: Ctx):
    before = c.stats_rows(EVENTS)
    c.sql(f"ANALYZE TABLE {EVENTS} COMPUTE STATISTICS")
    c.sql(f"ANALYZE TABLE {EVENTS} PARTITION (region='{ANALYZED_REGION}', hr, ds) COMPUTE STATISTICS")
    a_part = (ANALYZED_REGION, 1, day(2))
    other = ("us-west", 1, day(2))
    return {
        "table_rows_before": before,
        "table_rows": c.stats_rows(EVENTS),
        "analyzed_partition_rows": c.stats_rows(f"{EVENTS} PARTITION ({part_spec(a_part)})", "Partition Statistics"),
        "other_partition_rows": c.stats_rows(f"{EVENTS} PARTITION ({part_spec(other)})", "Partition Statistics"),
        "rows": c.count(EVENTS),
    }


@step
def truncate_partition(c: Ctx):
    loc = c.location(EVENTS, part_spec(TRUNCATED_PART))
    c.sql(f"TRUNCATE TABLE {EVENTS} PARTITION ({part_spec(TRUNCATED_PART)})")
    region, hr, ds = TRUNCATED_PART
    return {
        "partition_rows": c.count(f"{EVENTS} WHERE region = '{region}' AND hr = {hr} AND ds = DATE '{ds}'"),
        "partition_still_listed": part_name(TRUNCATED_PART) in c.partitions(EVENTS),
        "dir_exists": loc.is_dir(),
        "dir_files": data_files(loc),
        "rows": c.count(EVENTS),
    }


MSCK = f"{DB}.msck_t"


@step
def msck_repair(c: Ctx):
    c.sql(
        f"CREATE TABLE {MSCK} (id bigint, v string) "
        "PARTITIONED BY (region string, hr int, ds date) STORED AS PARQUET"
    )
    loc = c.location(MSCK)
    c.scratch["msck_loc"] = loc
    for i, (region, hr, ds) in enumerate(MSCK_PARTS):
        rows = [(i * 100 + j, f"v{i}-{j}") for j in range(MSCK_ROWS_PER_PART)]
        c.spark.createDataFrame(rows, "id bigint, v string").coalesce(1).write.mode("overwrite").parquet(
            str(loc / f"region={region}" / f"hr={hr}" / f"ds={ds.isoformat()}")
        )
    before = {"partitions": c.partitions(MSCK), "rows": c.count(MSCK)}
    c.sql(f"MSCK REPAIR TABLE {MSCK}")
    after = {"partitions": c.partitions(MSCK), "rows": c.count(MSCK)}
    c.sql(f"MSCK REPAIR TABLE {MSCK}")  # idempotent
    return {
        "before": before,
        "after": after,
        "again_partitions": len(c.partitions(MSCK)),
        "pruned_rows": c.count(f"{MSCK} WHERE region = 'm-b' AND hr > 1 AND ds <= DATE '{day(1)}'"),
    }


@step
def msck_sync_partitions(c: Ctx):
    loc = c.scratch["msck_loc"]
    region, hr, ds = MSCK_REMOVED
    shutil.rmtree(loc / f"region={region}" / f"hr={hr}" / f"ds={ds.isoformat()}")
    c.sql(f"MSCK REPAIR TABLE {MSCK} SYNC PARTITIONS")
    return {"partitions": c.partitions(MSCK), "rows": c.count(MSCK)}


PLAIN = f"{DB}.plain"


@step
def unpartitioned_table(c: Ctx):
    c.sql(f"CREATE TABLE {PLAIN} (id bigint, name string, amount int, region string) STORED AS PARQUET")
    c.sql(f"INSERT INTO {PLAIN} SELECT id, name, amount, region FROM src WHERE id < {PLAIN_ROWS}")
    return {"rows": c.count(PLAIN), "describe": c.describe_columns(PLAIN)}


@step
def analyze_columns(c: Ctx):
    c.sql(f"ANALYZE TABLE {PLAIN} COMPUTE STATISTICS FOR COLUMNS id, amount, region")
    out: dict = {"table_rows": c.stats_rows(PLAIN)}
    for col in ("id", "amount", "region"):
        info = {r[0]: r[1] for r in c.rows(f"DESCRIBE EXTENDED {PLAIN} {col}")}
        out[col] = {k: info.get(k) for k in ("data_type", "min", "max", "num_nulls", "distinct_count", "max_col_len")}
    return out


@step
def insert_overwrite_table(c: Ctx):
    c.sql(
        f"INSERT OVERWRITE TABLE {PLAIN} "
        f"SELECT id, name, amount, region FROM src WHERE id < {PLAIN_OVERWRITE_MAX_ID}"
    )
    return {"rows": c.count(PLAIN), "max_id": int(c.scalar(f"SELECT max(id) FROM {PLAIN}"))}


CTAS = f"{DB}.region_summary"
DS_TABLE = f"{DB}.ds_events"


@step
def ctas(c: Ctx):
    c.sql(
        f"CREATE TABLE {CTAS} STORED AS PARQUET AS "
        f"SELECT region, count(*) AS n, sum(amount) AS total FROM {EVENTS} GROUP BY region"
    )
    return {
        "rows": c.rows(f"SELECT region, n, total FROM {CTAS} ORDER BY region"),
        "describe": c.describe_columns(CTAS),
    }


@step
def ctas_datasource_partitioned(c: Ctx):
    c.sql(
        f"CREATE TABLE {DS_TABLE} USING parquet PARTITIONED BY (region, ds) AS "
        "SELECT id, amount, region, ds FROM src WHERE hr = 1"
    )
    with c.metastore_filter_fallback():  # LIKE + date key
        pruned_like = c.count(f"{DS_TABLE} WHERE region LIKE 'eu%' AND ds > DATE '{day(5)}'")
    return {
        "partitions": c.partitions(DS_TABLE),
        "rows": c.count(DS_TABLE),
        "pruned_rows": c.count(f"{DS_TABLE} WHERE region IN ('eu-central', 'eu-west') AND ds > DATE '{day(5)}'"),
        "pruned_rows_like": pruned_like,
        "describe": c.describe_columns(DS_TABLE),
    }


RENAMED_CTAS = f"{DB}.region_totals"
RENAMED_MSCK = f"{DB}.repaired"


@step
def rename_tables(c: Ctx):
    old_loc = c.location(CTAS)
    c.sql(f"ALTER TABLE {CTAS} RENAME TO {RENAMED_CTAS}")
    new_loc = c.location(RENAMED_CTAS)
    msck_old = c.location(MSCK)
    c.sql(f"ALTER TABLE {MSCK} RENAME TO {RENAMED_MSCK}")
    msck_new = c.location(RENAMED_MSCK)
    return {
        "tables": c.tables(DB),
        "rows": c.count(RENAMED_CTAS),
        "old_dir_exists": old_loc.exists(),
        "new_dir_files": data_files(new_loc),
        "new_dir_name": new_loc.name,
        "partitioned_rows": c.count(RENAMED_MSCK),
        "partitioned_pruned_rows": c.count(f"{RENAMED_MSCK} WHERE region = 'm-a' AND ds IN (DATE '{day(0)}')"),
        "partitioned_old_dir_exists": msck_old.exists(),
        "partitioned_new_dir_files": data_files(msck_new),
        "partition_dirs_under_new": sorted(
            {
                c.location(RENAMED_MSCK, part_spec(p)).is_relative_to(msck_new)
                for p in MSCK_PARTS
                if p != MSCK_REMOVED
            }
        ),
    }


VIEW = f"{DB}.v_us"


@step
def views(c: Ctx):
    c.sql(
        f"CREATE VIEW {VIEW} COMMENT 'us only' "
        f"AS SELECT id, region, hr, ds, amount FROM {EVENTS} WHERE region LIKE 'us%'"
    )
    with c.metastore_filter_fallback():  # the view's LIKE + hr = 2 reach the metastore as one filter
        pruned = c.count(f"{VIEW} WHERE hr = 2")
    out = {
        "rows": c.count(VIEW),
        "pruned_rows": pruned,
        "describe": c.describe_columns(VIEW),
        "views": sorted(r.viewName for r in c.sql(f"SHOW VIEWS IN {DB}").collect() if not r.isTemporary),
        "type": c.formatted(VIEW).get("Type"),
    }
    c.sql(f"ALTER VIEW {VIEW} AS SELECT id, region FROM {EVENTS} WHERE region = 'us-west'")
    out["altered_rows"] = c.count(VIEW)
    c.sql(f"DROP VIEW {VIEW}")
    out["tables_after_drop"] = c.tables(DB)
    return out


@step
def functions(c: Ctx):
    c.sql(f"CREATE FUNCTION {DB}.my_upper AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper'")
    c.sql(f"CREATE FUNCTION {DB}.my_abs AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFAbs'")
    listed = sorted(r[0] for r in c.rows(f"SHOW USER FUNCTIONS IN {DB} LIKE 'my*'"))
    used = c.rows(f"SELECT {DB}.my_upper(name), {DB}.my_abs(-amount) FROM {PLAIN} ORDER BY id LIMIT 3")
    c.sql(f"DROP FUNCTION {DB}.my_abs")
    c.sql(f"DROP FUNCTION IF EXISTS {DB}.my_abs")
    after = sorted(r[0] for r in c.rows(f"SHOW USER FUNCTIONS IN {DB} LIKE 'my*'"))
    c.sql(f"DROP FUNCTION {DB}.my_upper")
    return {
        "listed": listed,
        "used": used,
        "after_drop": after,
        "after_drop_all": sorted(r[0] for r in c.rows(f"SHOW USER FUNCTIONS IN {DB}")),
    }


@step
def truncate_table(c: Ctx):
    loc = c.location(PLAIN)
    c.sql(f"TRUNCATE TABLE {PLAIN}")
    return {"rows": c.count(PLAIN), "dir_exists": loc.is_dir(), "dir_files": data_files(loc)}


EXT = f"{DB}.ext_t"


@step
def external_table(c: Ctx):
    ext_dir = c.data_dir / "ext_t"
    ddl = f"CREATE EXTERNAL TABLE {EXT} (id bigint, name string) STORED AS PARQUET LOCATION '{ext_dir.as_uri()}'"
    c.sql(ddl)
    c.sql(f"INSERT INTO {EXT} SELECT id, name FROM src WHERE id < {EXTERNAL_ROWS}")
    rows = c.count(EXT)
    table_type = c.formatted(EXT).get("Type")
    c.sql(f"DROP TABLE {EXT}")
    survived = data_files(ext_dir)
    c.sql(ddl)
    return {
        "rows": rows,
        "type": table_type,
        "files_after_drop": survived > 0,
        "rows_after_recreate": c.count(EXT),
        "tables": c.tables(DB, "ext*"),
    }


@step
def show_tables(c: Ctx):
    return {
        "all": c.tables(DB),
        "like_star": c.tables(DB, "*e*s*"),
        "like_prefix": c.tables(DB, "ev*"),
        "like_alternatives": c.tables(DB, "plain|repai*|nomatch"),
        "like_none": c.tables(DB, "zzz*"),
        "scratch": c.tables(SCRATCH_DB),
    }


@step
def drop_tables(c: Ctx):
    plain_loc = c.location(PLAIN)
    ext_dir = c.data_dir / "ext_t"
    c.sql(f"DROP TABLE {PLAIN}")
    c.sql(f"DROP TABLE {EXT}")
    c.sql(f"DROP TABLE IF EXISTS {DB}.no_such_table")
    return {
        "tables": c.tables(DB),
        "managed_dir_exists": plain_loc.exists(),
        "external_files_survive": data_files(ext_dir) > 0,
    }


@step
def drop_database_cascade(c: Ctx):
    c.sql(f"CREATE TABLE {SCRATCH_DB}.p (id int) PARTITIONED BY (k string) STORED AS PARQUET")
    c.sql(f"INSERT INTO {SCRATCH_DB}.p PARTITION (k) SELECT id, CAST(id % 3 AS string) FROM range(9)")
    c.sql(f"CREATE TABLE {SCRATCH_DB}.u STORED AS PARQUET AS SELECT 1 AS x")
    c.sql(f"CREATE VIEW {SCRATCH_DB}.w AS SELECT x FROM {SCRATCH_DB}.u")
    before = {"tables": c.tables(SCRATCH_DB), "partitions": c.partitions(f"{SCRATCH_DB}.p"),
              "rows": c.count(f"{SCRATCH_DB}.p")}
    scratch_dir = c.warehouse / f"{SCRATCH_DB}.db"
    non_empty = None
    try:
        c.sql(f"DROP DATABASE {SCRATCH_DB}")
    except Exception as e:  # expected: database not empty
        non_empty = type(e).__name__
    c.sql(f"DROP DATABASE {SCRATCH_DB} CASCADE")
    events_dir = c.location(EVENTS)
    c.sql(f"DROP DATABASE {DB} CASCADE")
    c.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    return {
        "before": before,
        "drop_non_empty_error": non_empty,
        "scratch_dir_exists": scratch_dir.exists(),
        "databases": sorted(r[0] for r in c.rows("SHOW DATABASES")),
        "events_dir_exists": events_dir.exists(),
        "db_dir_exists": (c.warehouse / f"{DB}.db").exists(),
        "external_files_survive": data_files(c.data_dir / "ext_t") > 0,
    }


# --------------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------------

LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def make_spark(metastore_uri: str, warehouse: Path, tmp: Path):
    from pyspark.sql import SparkSession

    log4j = tmp / "log4j2.properties"
    log4j.write_text(LOG4J2)
    # A run lasts about a minute on tiny data: the JVM's quick compiler alone (TieredStopAtLevel=1) and no
    # whole-stage code generation take 12% off it (67 s -> 60 s), and neither changes what reaches the metastore.
    java_opts = f"-Dlog4j2.configurationFile={log4j.as_uri()} -Dderby.system.home={tmp} -XX:TieredStopAtLevel=1"
    return (
        SparkSession.builder.master("local[2]")
        .appName("hmsproxy-e2e")
        .config("spark.hadoop.hive.metastore.uris", metastore_uri)
        .config("spark.sql.warehouse.dir", warehouse.as_uri())
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.local.dir", str(tmp / "spark-local"))
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.hadoop.hive.exec.dynamic.partition", "true")
        .config("spark.hadoop.hive.exec.dynamic.partition.mode", "nonstrict")
        .config("spark.hadoop.hive.exec.max.dynamic.partitions", "5000")
        .config("spark.hadoop.hive.exec.max.dynamic.partitions.pernode", "5000")
        .config("spark.hadoop.hive.metastore.client.socket.timeout", "300")
        .config("spark.sql.sources.partitionOverwriteMode", "static")
        .config("spark.sql.codegen.wholeStage", "false")
        .enableHiveSupport()
        .getOrCreate()
    )


def short_error(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:500]


def run(metastore_uri: str, warehouse: Path, data_dir: Path | None, only: list[str] | None = None) -> tuple[dict, dict]:
    """Runs the steps; returns (results, timings)."""
    tmp = Path(tempfile.mkdtemp(prefix="spark-e2e-"))
    own_data = data_dir is None
    data_dir = Path(data_dir) if data_dir else tmp / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    timings: dict = {}
    spark = make_spark(metastore_uri, warehouse, tmp)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        ctx = Ctx(spark=spark, warehouse=warehouse.resolve(), data_dir=data_dir.resolve())
        for name, fn in STEPS:
            if only and name not in only:
                continue
            t0 = time.monotonic()
            try:
                results[name] = fn(ctx)
                status = "ok"
            except Exception as e:
                results[name] = {"error": short_error(e)}
                status = "FAILED"
                traceback.print_exc(file=sys.stderr)
            timings[name] = round(time.monotonic() - t0, 2)
            print(f"[{status}] {name} ({timings[name]} s)", file=sys.stderr, flush=True)
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        if own_data:
            shutil.rmtree(data_dir, ignore_errors=True)
    return results, timings


def failed_steps(results: dict) -> list[str]:
    return [k for k, v in results.items() if isinstance(v, dict) and set(v) == {"error"}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metastore-uri", required=True)
    ap.add_argument("--warehouse", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--data-dir", type=Path, default=None, help="for the EXTERNAL table (default: a temp dir)")
    ap.add_argument("--timings", type=Path, default=None, help="optional JSON file with seconds per step")
    ap.add_argument("--only", nargs="*", default=None, help="run only these steps (debugging)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    results, timings = run(args.metastore_uri, args.warehouse.resolve(), args.data_dir, args.only)
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True, default=str) + "\n")
    if args.timings:
        total = round(time.monotonic() - t0, 1)
        args.timings.write_text(json.dumps({"total": total, "steps": timings}, indent=1) + "\n")
    failed = failed_steps(results)
    print(f"{len(results) - len(failed)}/{len(results)} steps ok in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    if failed:
        print("failed steps: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
