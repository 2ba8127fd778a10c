"""End-to-end: PySpark (Hive support) against a metastore, compared with the real Hive Metastore 2.3.10.

The workload (spark_workload.py) runs in a subprocess. The first test checks every step's result against
what the generated dataset implies (computed here from the generator in spark_workload); the second
checks that the results against hmsproxy equal the results against the reference HMS.

Needs pyspark + Java 17; slow (about a minute per workload run, plus JVM start-ups).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "spark_workload.py"
sys.path.insert(0, str(HERE))
import spark_workload as wl  # noqa: E402

from support.databases import fresh_database  # noqa: E402
from support.hive_schema import load_hive_script  # noqa: E402
from support.hmsproxy_server import start_hmsproxy  # noqa: E402
from support.reference_hms import start_reference_hms  # noqa: E402
from support.running import RunningServer  # noqa: E402

pytestmark = pytest.mark.spark

WORKLOAD_TIMEOUT_S = 900


# --------------------------------------------------------------------------------------------------
# Running the workload
# --------------------------------------------------------------------------------------------------


def run_workload(server, workdir: Path) -> dict:
    """Runs spark_workload.py against server; returns {"rc", "results", "log"}."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "results.json"
    log = workdir / "workload.log"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    cmd = [
        sys.executable,
        str(SCRIPT),
        "--metastore-uri",
        server.uri,
        "--warehouse",
        str(server.warehouse),
        "--data-dir",
        str(workdir / "data"),
        "--out",
        str(out),
        "--timings",
        str(workdir / "timings.json"),
    ]
    with open(log, "w") as f:
        proc = subprocess.run(cmd, cwd=workdir, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=WORKLOAD_TIMEOUT_S)
    results = json.loads(out.read_text()) if out.exists() else {}
    return {"rc": proc.returncode, "results": results, "log": log}


def assert_succeeded(run: dict, who: str) -> dict:
    results = run["results"]
    failed = {k: v["error"] for k, v in results.items() if k in wl.failed_steps(results)}
    tail = "\n".join(run["log"].read_text().splitlines()[-40:])
    assert results, f"{who}: workload wrote no results (rc={run['rc']}); log tail:\n{tail}"
    assert not failed, f"{who}: failed steps: {json.dumps(failed, indent=1)}\nlog: {run['log']}"
    assert run["rc"] == 0, f"{who}: workload exited {run['rc']}; log tail:\n{tail}"
    missing = [name for name, _ in wl.STEPS if name not in results]
    assert not missing, f"{who}: steps without a result: {missing}"
    return results


@pytest.fixture(scope="module")
def reference_server(tmp_path_factory):
    server = start_reference_hms(tmp_path_factory.mktemp("reference-hms"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def reference_run(reference_server, tmp_path_factory) -> dict:
    return run_workload(reference_server, tmp_path_factory.mktemp("workload-reference"))


@pytest.fixture(scope="module", params=["cache-on", "cache-off", "hive-2.3.0-in-place", "in-front-of-java"])
def metastore_under_test(request, tmp_path_factory):
    """The metastore the workload is checked against: hmsproxy with its cache on, and with it off (on its own
    SQLite database); cache on, serving in place a MariaDB database that Hive's own 2.3.0 script laid out; and
    `serve --upstream` in front of a Java HMS of its own (the warehouse is that HMS's)."""
    workdir = tmp_path_factory.mktemp(f"hmsproxy-{request.param}")
    if request.param == "in-front-of-java":
        with start_reference_hms(workdir / "java") as java:
            front = start_hmsproxy(workdir / "front", upstream=java.uri)
            yield RunningServer(host=front.host, port=front.port, warehouse=java.warehouse, _stop=front.stop)
            front.stop()
        return
    with fresh_database("mariadb" if request.param.startswith("hive") else "sqlite", workdir) as url:
        if request.param.startswith("hive"):
            load_hive_script("mariadb", url, "2.3.0")
        server = start_hmsproxy(workdir, url, cache=request.param != "cache-off")
        yield server
        server.stop()


@pytest.fixture(scope="module")
def run_under_test(metastore_under_test, tmp_path_factory) -> dict:
    return run_workload(metastore_under_test, tmp_path_factory.mktemp("workload-under-test"))


# --------------------------------------------------------------------------------------------------
# Expected values, computed from the generator
# --------------------------------------------------------------------------------------------------

# Python twins of spark_workload.PRUNING_QUERIES (row -> bool); d(i) is the i-th day of the dataset.
d = wl.day
PREDICATES = {
    "select_string_eq": lambda r: r["region"] == "us-east",
    "select_string_gt": lambda r: r["region"] > "eu-west",
    "select_string_in": lambda r: r["region"] in ("eu-west", "ap-south"),
    "select_string_not_in": lambda r: r["region"] not in ("eu-west", "ap-south", "us-east"),
    "select_string_like_prefix": lambda r: r["region"].startswith("us"),
    "select_string_like_suffix": lambda r: r["region"].endswith("west"),
    "select_string_like_contains": lambda r: "-c" in r["region"],
    "select_string_ne": lambda r: r["region"] != "us-east",
    "select_int_eq": lambda r: r["hr"] == 3,
    "select_int_gt": lambda r: r["hr"] > 3,
    "select_int_le": lambda r: r["hr"] <= 1,
    "select_int_in": lambda r: r["hr"] in (0, 2, 5),
    "select_int_not_in": lambda r: r["hr"] not in (0, 1),
    "select_int_between": lambda r: 2 <= r["hr"] <= 4,
    "select_date_eq": lambda r: r["ds"] == d(3),
    "select_date_gt": lambda r: r["ds"] > d(8),
    "select_date_in": lambda r: r["ds"] in (d(0), d(11)),
    "select_date_not_in": lambda r: r["ds"] not in (d(0), d(1)),
    "select_date_between": lambda r: d(2) <= r["ds"] <= d(4),
    "select_date_string_literal": lambda r: r["ds"] == d(7),
    "select_or_string_int": lambda r: r["region"] == "us-west" or r["hr"] == 4,
    "select_or_date_int": lambda r: r["ds"] == d(10) or r["hr"] < 1,
    "select_and_all_keys": lambda r: r["region"] == "eu-central" and r["hr"] >= 2 and r["ds"] < d(6),
    "select_mixed_and_or": lambda r: (r["region"].startswith("eu") and r["hr"] in (1, 3))
    or (r["ds"] >= d(11) and r["hr"] == 0),
    "select_partition_and_data": lambda r: r["region"] == "ap-south" and r["amount"] > 500,
    "select_no_match": lambda r: r["region"] == "nowhere",
}


def dataset() -> list[dict]:
    return [dict(zip(wl.EVENT_COLUMNS, row)) for row in wl.generate_rows()]


def key(r: dict) -> tuple:
    return (r["region"], r["hr"], r["ds"])


def names(parts) -> list[str]:
    return sorted(wl.part_name(p) for p in parts)


def spark_like(pattern: str, candidates) -> list[str]:
    """SHOW TABLES/DATABASES LIKE: '*' any chars, '|' alternatives, case-insensitive."""
    alts = [re.compile("(?i)" + ".*".join(re.escape(x) for x in a.strip().split("*")) + "$")
            for a in pattern.split("|")]
    return sorted(c for c in candidates if any(a.match(c) for a in alts))


def summary(rows: list[dict]) -> dict:
    return {"rows": len(rows), "sum_amount": sum(r["amount"] for r in rows), "partitions": len({key(r) for r in rows})}


class EventsModel:
    """The events table's contents as the workload changes it, step by step."""

    def __init__(self):
        self.src = dataset()
        self.rows = list(self.src)
        self.parts = {key(r) for r in self.rows}

    def count(self, pred=lambda r: True) -> int:
        return sum(1 for r in self.rows if pred(r))

    def in_part(self, part) -> int:
        return self.count(lambda r: key(r) == part)

    # the mutations, in workload order
    def add_partitions(self):
        self.parts |= set(wl.ADDED_PARTS)

    def insert_into_added(self):
        region, hr, ds = wl.RENAMED_FROM
        self.rows += [dict(r, region=region, hr=hr, ds=ds) for r in self.src if r["id"] < wl.ROWS_INTO_ADDED]

    def rename_partition(self):
        self.parts = (self.parts - {wl.RENAMED_FROM}) | {wl.RENAMED_TO}
        self.rows = [dict(r, region=wl.RENAMED_TO[0], hr=wl.RENAMED_TO[1], ds=wl.RENAMED_TO[2])
                     if key(r) == wl.RENAMED_FROM else r
                     for r in self.rows]

    def drop_partitions(self):
        region, hr = wl.DROPPED_PARTIAL

        def dropped(p):
            return p == wl.RENAMED_TO or p[0] == "zz-new" or (p[0] == region and p[1] == hr)

        self.parts = {p for p in self.parts if not dropped(p)}
        self.rows = [r for r in self.rows if not dropped(key(r))]

    def overwrite_partition(self):
        part = wl.OVERWRITTEN_PART
        self.rows = [r for r in self.rows if key(r) != part]
        self.rows += [dict(r, region=part[0], hr=part[1], ds=part[2]) for r in self.src if r["id"] < wl.OVERWRITE_ROWS]

    def truncate_partition(self):
        self.rows = [r for r in self.rows if key(r) != wl.TRUNCATED_PART]


EVENTS_DESCRIBE_BASE = [["id", "bigint", "row id"], ["name", "string", None], ["amount", "int", None],
                        ["price", "double", None]]
EVENTS_DESCRIBE_PARTS = [["region", "string", None], ["hr", "int", None], ["ds", "date", None]]
PARTITION_INFO = [["# Partition Information", "", ""], ["# col_name", "data_type", "comment"]]


def expected_results() -> dict:
    """What each step must report, from the generator parameters only."""
    m = EventsModel()
    src = m.src
    all_parts = set(m.parts)
    exp: dict = {}

    exp["create_database"] = {
        "name": wl.DB,
        "comment": "hmsproxy end-to-end database",
        "properties": "((purpose,e2e), (team,data-platform))",
        "dir_exists": True,
    }
    dbs = ["default", wl.DB, wl.SCRATCH_DB]
    exp["show_databases"] = {
        "all": sorted(dbs),
        "like_e2e_star": spark_like("e2e*", dbs),
        "like_alternatives": spark_like("e2e_s*|default|nomatch", dbs),
        "like_none": [],
    }
    exp["create_partitioned_table"] = {
        "describe": EVENTS_DESCRIBE_BASE + EVENTS_DESCRIBE_PARTS + PARTITION_INFO + EVENTS_DESCRIBE_PARTS,
        "partitions": [],
    }
    exp["insert_dynamic_partitions"] = {"rows": wl.N_ROWS, "partition_count": len(all_parts)}
    exp["show_partitions_full"] = names(all_parts)
    exp["show_partitions_partial"] = {
        "region": names(p for p in all_parts if p[0] == "us-west"),
        "region_hr": names(p for p in all_parts if p[:2] == ("eu-west", 3)),
        "ds_only": names(p for p in all_parts if p[2] == d(5)),
        "hr_ds": names(p for p in all_parts if p[1:] == (0, d(0))),
    }
    for name, pred in PREDICATES.items():
        exp[name] = summary([r for r in src if pred(r)])
    for name in wl.BASIC_PUSHDOWN_QUERIES:
        exp["basic_" + name] = exp[name]

    m.add_partitions()
    exp["add_partitions"] = {
        "partitions": names(p for p in m.parts if p[0] == "zz-new"),
        "rows": 0,
        "duplicate_add_error": "AnalysisException",
        "dirs_exist": [True] * len(wl.ADDED_PARTS),
        "total_partitions": len(m.parts),
    }
    m.insert_into_added()
    exp["insert_into_static_partition"] = {"rows": m.in_part(wl.RENAMED_FROM)}
    m.rename_partition()
    exp["rename_partition"] = {
        "zz_partitions": (names(p for p in m.parts if p[0] == "zz-new")
                          + names(p for p in m.parts if p[0] == "zz-renamed")),
        "rows_new": m.in_part(wl.RENAMED_TO),
        "rows_old": 0,
        "old_dir_exists": False,
        "new_dir_files": 1,
        "new_location_relative": f"{wl.DB}.db/events/{wl.part_name(wl.RENAMED_TO)}",
    }
    m.drop_partitions()
    exp["drop_partitions"] = {
        "total_partitions": len(m.parts),
        "dropped_partial": [],
        "rows": m.count(),
        "renamed_dir_exists": False,
        "added_dirs_exist": [False] * len(wl.ADDED_PARTS),
        "partial_dirs_exist": [False],
        "drop_missing_error": "AnalysisException",
    }
    m.overwrite_partition()
    exp["insert_overwrite_partition"] = {
        "partition_rows": m.in_part(wl.OVERWRITTEN_PART),
        "rows": m.count(),
        "total_partitions": len(m.parts),
    }
    exp["add_columns"] = {
        "describe": EVENTS_DESCRIBE_BASE
        + [["note", "string", "added later"], ["score", "double", None]]
        + EVENTS_DESCRIBE_PARTS
        + PARTITION_INFO
        + EVENTS_DESCRIBE_PARTS,
        "null_notes": m.count(),
        "rows": m.count(),
    }
    exp["set_tblproperties"] = {
        "selected": {"created.by": "e2e", "quality": "gold", "e2e.version": "2", "tmp.key": None, "comment": None},
        "one": [["quality", "gold"]],
        "table_comment": "generated events",
    }
    exp["analyze_partitioned_table"] = {
        "table_rows_before": None,
        "table_rows": m.count(),
        "analyzed_partition_rows": m.in_part((wl.ANALYZED_REGION, 1, d(2))),
        "other_partition_rows": None,
        "rows": m.count(),
    }
    m.truncate_partition()
    exp["truncate_partition"] = {
        "partition_rows": 0,
        "partition_still_listed": True,
        "dir_exists": True,
        "dir_files": 0,
        "rows": m.count(),
    }

    msck_all = list(wl.MSCK_PARTS)
    msck_rows = {p: wl.MSCK_ROWS_PER_PART for p in msck_all}
    exp["msck_repair"] = {
        "before": {"partitions": [], "rows": 0},
        "after": {"partitions": names(msck_all), "rows": sum(msck_rows.values())},
        "again_partitions": len(msck_all),
        "pruned_rows": sum(n for p, n in msck_rows.items() if p[0] == "m-b" and p[1] > 1 and p[2] <= d(1)),
    }
    del msck_rows[wl.MSCK_REMOVED]
    exp["msck_sync_partitions"] = {"partitions": names(msck_rows), "rows": sum(msck_rows.values())}

    plain = [r for r in src if r["id"] < wl.PLAIN_ROWS]
    exp["unpartitioned_table"] = {
        "rows": len(plain),
        "describe": [["id", "bigint", None], ["name", "string", None], ["amount", "int", None],
                     ["region", "string", None]],
    }
    exp["analyze_columns"] = {"table_rows": len(plain)}  # column details checked in check_analyze_columns
    exp["insert_overwrite_table"] = {"rows": wl.PLAIN_OVERWRITE_MAX_ID, "max_id": wl.PLAIN_OVERWRITE_MAX_ID - 1}
    per_region = Counter(r["region"] for r in m.rows)
    totals = Counter()
    for r in m.rows:
        totals[r["region"]] += r["amount"]
    exp["ctas"] = {
        "rows": [[reg, per_region[reg], totals[reg]] for reg in sorted(per_region)],
        "describe": [["region", "string", None], ["n", "bigint", None], ["total", "bigint", None]],
    }
    hr1 = [r for r in src if r["hr"] == 1]
    exp["ctas_datasource_partitioned"] = {
        "partitions": sorted({f"region={r['region']}/ds={r['ds'].isoformat()}" for r in hr1}),
        "rows": len(hr1),
        "pruned_rows": sum(1 for r in hr1 if r["region"].startswith("eu") and r["ds"] > d(5)),
        "pruned_rows_like": sum(1 for r in hr1 if r["region"].startswith("eu") and r["ds"] > d(5)),
        "describe": [["id", "bigint", None], ["amount", "int", None], ["region", "string", None], ["ds", "date", None]]
        + PARTITION_INFO
        + [["region", "string", None], ["ds", "date", None]],
    }
    tables = ["ds_events", "events", "plain", "region_totals", "repaired"]
    exp["rename_tables"] = {
        "tables": tables,
        "rows": len(per_region),
        "old_dir_exists": False,
        "new_dir_files": 1,
        "new_dir_name": "region_totals",
        "partitioned_rows": sum(msck_rows.values()),
        "partitioned_pruned_rows": sum(n for p, n in msck_rows.items() if p[0] == "m-a" and p[2] == d(0)),
        "partitioned_old_dir_exists": False,
        "partitioned_new_dir_files": len(msck_rows),
        "partition_dirs_under_new": [True],
    }
    us = [r for r in m.rows if r["region"].startswith("us")]
    exp["views"] = {
        "rows": len(us),
        "pruned_rows": sum(1 for r in us if r["hr"] == 2),
        "describe": [["id", "bigint", "row id"], ["region", "string", None], ["hr", "int", None], ["ds", "date", None],
                     ["amount", "int", None]],
        "views": ["v_us"],
        "type": "VIEW",
        "altered_rows": m.count(lambda r: r["region"] == "us-west"),
        "tables_after_drop": tables,
    }
    overwritten = [r for r in src if r["id"] < wl.PLAIN_OVERWRITE_MAX_ID][:3]
    fq = f"spark_catalog.{wl.DB}."
    exp["functions"] = {
        "listed": [fq + "my_abs", fq + "my_upper"],
        "used": [[r["name"].upper(), abs(-r["amount"])] for r in overwritten],
        "after_drop": [fq + "my_upper"],
        "after_drop_all": [],
    }
    exp["truncate_table"] = {"rows": 0, "dir_exists": True, "dir_files": 0}
    exp["external_table"] = {
        "rows": wl.EXTERNAL_ROWS,
        "type": "EXTERNAL",
        "files_after_drop": True,
        "rows_after_recreate": wl.EXTERNAL_ROWS,
        "tables": ["ext_t"],
    }
    tables_now = sorted(tables + ["ext_t"])
    exp["show_tables"] = {
        "all": tables_now,
        "like_star": spark_like("*e*s*", tables_now),
        "like_prefix": spark_like("ev*", tables_now),
        "like_alternatives": spark_like("plain|repai*|nomatch", tables_now),
        "like_none": [],
        "scratch": [],
    }
    exp["drop_tables"] = {
        "tables": sorted(set(tables) - {"plain"}),
        "managed_dir_exists": False,
        "external_files_survive": True,
    }
    exp["drop_database_cascade"] = {
        "before": {"tables": ["p", "u", "w"], "partitions": ["k=0", "k=1", "k=2"], "rows": 9},
        "drop_non_empty_error": "AnalysisException",
        "scratch_dir_exists": False,
        "databases": ["default"],
        "events_dir_exists": False,
        "db_dir_exists": False,
        "external_files_survive": True,
    }
    return exp


def check_analyze_columns(got: dict) -> None:
    plain = [r for r in dataset() if r["id"] < wl.PLAIN_ROWS]
    amounts = [r["amount"] for r in plain]
    assert got["id"]["min"] == "0" and got["id"]["max"] == str(wl.PLAIN_ROWS - 1), got["id"]
    assert got["amount"]["min"] == str(min(amounts)) and got["amount"]["max"] == str(max(amounts)), got["amount"]
    assert all(got[c]["num_nulls"] == "0" for c in ("id", "amount", "region")), got
    assert got["region"]["distinct_count"] == str(len({r["region"] for r in plain})), got["region"]
    assert got["region"]["max_col_len"] == str(max(len(r["region"]) for r in plain)), got["region"]


def diff(want, got, a: str = "expected", b: str = "got"):
    """The differing part of two step results (only the differing keys of dicts)."""
    if isinstance(want, dict) and isinstance(got, dict):
        return {k: diff(want.get(k), got.get(k), a, b)
                for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)}
    return {a: want, b: got}


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------


def test_expectations_cover_every_step():
    assert set(PREDICATES) == set(wl.PRUNING_QUERIES)
    assert set(expected_results()) == {name for name, _ in wl.STEPS}
    assert len({key(r) for r in dataset()}) >= 300


def test_workload_results_match_dataset(run_under_test):
    results = assert_succeeded(run_under_test, "metastore under test")
    expected = expected_results()
    mismatches = {}
    for name, want in expected.items():
        got = results.get(name)
        if name == "analyze_columns":
            check_analyze_columns(got)
            got = {k: got[k] for k in want}
        if got != want:
            mismatches[name] = diff(want, got)
    assert not mismatches, json.dumps(mismatches, indent=1, default=str)


def test_results_equal_reference_hms(run_under_test, reference_run):
    reference = assert_succeeded(reference_run, "reference HMS")
    results = assert_succeeded(run_under_test, "metastore under test")
    differing = {
        name: diff(reference.get(name), results.get(name), "reference", "under_test")
        for name in sorted(set(reference) | set(results))
        if reference.get(name) != results.get(name)
    }
    assert not differing, json.dumps(differing, indent=1)
