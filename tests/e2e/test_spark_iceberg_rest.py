"""End-to-end: Spark 3.5 with Iceberg 1.10's Spark runtime, hmsproxy's Iceberg REST catalog as a `type=rest`
catalog, and the same table through Iceberg's Hive catalog (HMS over Thrift) in Spark and in pyiceberg.

The Spark driver (spark_iceberg_rest.py) runs in the Spark 3.5 venv (support/spark35.py) as a subprocess, one
session for all its steps; hmsproxy runs in this process on SQLite. Every step's rows are checked against what
the steps imply, computed here from the driver's data.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.rest import RestCatalog

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import spark_iceberg_rest as driver  # noqa: E402

from support.hmsproxy_server import start_hmsproxy  # noqa: E402
from support.ports import free_port  # noqa: E402
from support.spark35 import spark35  # noqa: E402

pytestmark = pytest.mark.spark

DRIVER_TIMEOUT_S = 480

Row = tuple[int, str, float]


def expected_steps() -> dict[str, list[Row]]:
    """The table's rows after each step, from the driver's data: the Iceberg semantics of each statement."""
    table = {row[0]: row for row in driver.ROWS}
    after: dict[str, list[Row]] = {"select_inserted": sorted(table.values())}
    table = {i: (i, c, a + driver.UPDATE_ADD if c == driver.UPDATED_CAT else a) for i, c, a in table.values()}
    after["select_updated"] = sorted(table.values())
    del table[driver.DELETED_ID]
    after["select_deleted"] = sorted(table.values())
    for i, c, a in driver.MERGE_SOURCE:
        if i in table and a < 0:
            del table[i]
        elif i in table:
            table[i] = (i, table[i][1], a)
        else:
            table[i] = (i, c, a)
    after["select_merged"] = after["hive_select_merged"] = sorted(table.values())
    table[driver.HIVE_INSERT[0]] = driver.HIVE_INSERT
    after["select_after_hive_insert"] = sorted(table.values())
    return after


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Any:
    """hmsproxy with its REST port, the driver's results, and the server (still running for pyiceberg)."""
    venv = spark35()
    workdir = tmp_path_factory.mktemp("spark-iceberg-rest")
    with start_hmsproxy(workdir / "hmsproxy", iceberg_rest_port=free_port()) as server:
        out, log = workdir / "results.json", workdir / "driver.log"
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_HOME"))}
        environment.update(PYSPARK_PYTHON=str(venv.python), PYSPARK_DRIVER_PYTHON=str(venv.python))
        with open(log, "w") as sink:
            subprocess.run([str(venv.python), str(HERE / "spark_iceberg_rest.py"),
                            "--jars", ",".join(map(str, venv.jars)), "--rest-uri", server.rest_uri,
                            "--thrift-uri", server.uri,
                            "--warehouse", str(server.warehouse), "--out", str(out)],
                           cwd=workdir, env=environment, stdout=sink, stderr=subprocess.STDOUT,
                           timeout=DRIVER_TIMEOUT_S)
        tail = "\n".join(log.read_text().splitlines()[-40:])
        assert out.exists(), f"the Spark driver wrote no results; log tail:\n{tail}"
        yield server, json.loads(out.read_text())


def rows_of(results: dict[str, dict[str, Any]], step: str) -> list[Row]:
    outcome = results[step]
    assert "error" not in outcome, f"{step}: {outcome['error']}\n{outcome['trace']}"
    return sorted((int(i), str(c), float(a)) for i, c, a in outcome["rows"])


def test_every_spark_step_succeeds(run):
    _, results = run
    failed = {step: outcome["error"].splitlines()[0] for step, outcome in results.items() if "error" in outcome}
    assert not failed, json.dumps(failed, indent=1)


@pytest.mark.parametrize("step", sorted(expected_steps()))
def test_spark_reads_what_the_statements_imply(run, step):
    _, results = run
    assert rows_of(results, step) == expected_steps()[step]


def test_the_hive_catalog_lists_the_rest_table(run):
    _, results = run
    assert [row[1] for row in results["hive_list_tables"]["rows"]] == [driver.TABLE]


def test_every_write_is_one_snapshot(run):
    """Insert, update, delete, merge through REST and the insert through the Hive catalog: one commit each, in
    order (UPDATE and MERGE rewrite files: copy-on-write, Spark's default; DELETE writes delete files:
    merge-on-read, as the table asks)."""
    _, results = run
    operations = results["rest_snapshot_operations"]["rows"]
    assert operations == ["append", "overwrite", "delete", "overwrite", "append"]


@pytest.mark.parametrize("catalog", ["hive", "rest"])
def test_pyiceberg_reads_the_spark_written_table(run, catalog):
    """The table Spark wrote (with merge-on-read delete files) read by pyiceberg through HMS Thrift and REST."""
    server, _ = run
    client = HiveCatalog("hive", uri=server.uri) if catalog == "hive" else RestCatalog("rest", uri=server.rest_uri)
    scanned = client.load_table(f"{driver.NAMESPACE}.{driver.TABLE}").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["cat"], r["amount"]) for r in scanned) == expected_steps()["select_after_hive_insert"]
