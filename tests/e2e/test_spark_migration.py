"""A user's migration, seen from Spark (issue 13): Spark writes tables and rows through the Java HMS 2.3.10 into a
MariaDB database Hive's own 2.3.0 script laid out; then Spark, through hmsproxy serving that database in place,
reads the same rows; then the database is upgraded (`hmsproxy schema upgrade`) and Spark reads them again."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.cli import run_hmsproxy
from support.databases import fresh_database
from support.hive_schema import load_hive_script
from support.hmsproxy_server import start_hmsproxy
from support.reference_hms import ON_HIVES_2_3_SCHEMA, start_reference_hms_on_mariadb

pytestmark = pytest.mark.spark
SCRIPT = Path(__file__).resolve().parent / "spark_rows.py"


def _spark(server: Any, warehouse: Path, mode: str, workdir: Path) -> dict[str, Any]:
    """Runs spark_rows.py in its own process; its answers."""
    workdir.mkdir(parents=True, exist_ok=True)
    out, log = workdir / "answers.json", workdir / "spark.log"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    with open(log, "w") as sink:
        done = subprocess.run([sys.executable, str(SCRIPT), "--metastore-uri", server.uri,
                               "--warehouse", str(warehouse), "--mode", mode, "--out", str(out)],
                              cwd=workdir, env=env, stdout=sink, stderr=subprocess.STDOUT, timeout=600)
    assert done.returncode == 0 and out.exists(), "\n".join(log.read_text().splitlines()[-40:])
    return json.loads(out.read_text())


def test_spark_reads_the_rows_it_wrote_through_the_java_hms_in_place_and_after_the_upgrade(tmp_path):
    with fresh_database("mariadb", tmp_path) as url:
        load_hive_script("mariadb", url, "2.3.0")
        with start_reference_hms_on_mariadb(tmp_path / "java", url, ON_HIVES_2_3_SCHEMA) as java:
            warehouse = java.warehouse  # where the Java HMS put the data: hmsproxy serves the same warehouse
            written = _spark(java, warehouse, "write", tmp_path / "write")
        assert written["sales"] == [["1", "10.5", "2024-01-01"], ["2", "20.0", "2024-01-01"],
                                    ["3", "7.25", "2024-01-02"], ["4", "99.0", "2024-01-03"],
                                    ["5", "1.0", "2024-01-03"]]
        with start_hmsproxy(tmp_path / "in-place", url, warehouse=str(warehouse)) as server:
            assert _spark(server, warehouse, "read", tmp_path / "in-place-read") == written
        code, lines = run_hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path)
        assert (code, lines[-1]) == (0, "upgraded schema 2.3.0 to 4.0.0"), lines
        with start_hmsproxy(tmp_path / "upgraded", url, warehouse=str(warehouse)) as server:
            assert _spark(server, warehouse, "read", tmp_path / "upgraded-read") == written
