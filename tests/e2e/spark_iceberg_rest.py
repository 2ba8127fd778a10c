"""Spark 3.5 with Iceberg's Spark runtime against hmsproxy: one table written through the REST catalog and read
(and written once) through the Hive catalog, i.e. HMS over Thrift.

Run by tests/e2e/test_spark_iceberg_rest.py in the Spark 3.5 venv (tests/support/spark35.py), not in the project's
own venv: the module imports pyspark only inside `run`, so the test can import the data below. It writes one JSON
object to --out: per step either {"rows": [...]} or {"error": "..."}; a failed step does not stop the others.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import traceback
from pathlib import Path
from typing import Any

NAMESPACE = "spark_rest"
TABLE = "orders"
# (id, cat, amount): the rows inserted first, partitioned by cat.
ROWS = [(1, "a", 10.0), (2, "a", 20.0), (3, "b", 30.0), (4, "c", 40.0)]
UPDATED_CAT, UPDATE_ADD = "a", 1.0  # UPDATE ... SET amount = amount + UPDATE_ADD WHERE cat = UPDATED_CAT
DELETED_ID = 3  # DELETE ... WHERE id = DELETED_ID
# MERGE source: a matched row with a negative amount is deleted, another matched row updated, the rest inserted.
MERGE_SOURCE = [(2, "a", 99.0), (4, "c", -1.0), (5, "b", 50.0)]
HIVE_INSERT = (6, "c", 60.0)  # inserted through the Hive catalog after the REST writes

REST, HIVE = "rest", "hive_ice"

LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def values(rows: list[tuple[int, str, float]]) -> str:
    return ", ".join(f"({i}, '{c}', CAST({a} AS DOUBLE))" for i, c, a in rows)


def make_spark(jars: str, rest_uri: str, thrift_uri: str, warehouse: Path, tmp: Path) -> Any:
    """One session with both catalogs: `rest` (type=rest) and `hive_ice` (type=hive, HMS over Thrift)."""
    from pyspark.sql import SparkSession

    log4j = tmp / "log4j2.properties"
    log4j.write_text(LOG4J2)
    return (
        SparkSession.builder.master("local[2]")
        .appName("hmsproxy-iceberg-rest")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{REST}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{REST}.type", "rest")
        .config(f"spark.sql.catalog.{REST}.uri", rest_uri)
        .config(f"spark.sql.catalog.{HIVE}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{HIVE}.type", "hive")
        .config(f"spark.sql.catalog.{HIVE}.uri", thrift_uri)
        .config(f"spark.sql.catalog.{HIVE}.warehouse", warehouse.as_uri())
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.local.dir", str(tmp / "spark-local"))
        # short runs on tiny data: the JVM's quick compiler alone, no whole-stage code generation
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={log4j.as_uri()} -Dderby.system.home={tmp} -XX:TieredStopAtLevel=1")
        .config("spark.sql.codegen.wholeStage", "false")
        .getOrCreate()
    )


def run(jars: str, rest_uri: str, thrift_uri: str, warehouse: Path) -> dict[str, dict[str, Any]]:
    tmp = Path(tempfile.mkdtemp(prefix="spark-iceberg-rest-"))
    spark = make_spark(jars, rest_uri, thrift_uri, warehouse, tmp)
    spark.sparkContext.setLogLevel("ERROR")
    rest_table, hive_table = f"{REST}.{NAMESPACE}.{TABLE}", f"{HIVE}.{NAMESPACE}.{TABLE}"
    results: dict[str, dict[str, Any]] = {}

    def rows(table: str) -> list[list[Any]]:
        return [list(r) for r in spark.sql(f"SELECT id, cat, amount FROM {table} ORDER BY id").collect()]

    steps: list[tuple[str, Any]] = [
        ("create_namespace", lambda: spark.sql(f"CREATE NAMESPACE {REST}.{NAMESPACE}")),
        ("create_table", lambda: spark.sql(
            f"CREATE TABLE {rest_table} (id BIGINT, cat STRING, amount DOUBLE) USING iceberg PARTITIONED BY (cat) "
            "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")),
        ("insert", lambda: spark.sql(f"INSERT INTO {rest_table} VALUES {values(ROWS)}")),
        ("select_inserted", lambda: rows(rest_table)),
        ("update", lambda: spark.sql(
            f"UPDATE {rest_table} SET amount = amount + {UPDATE_ADD} WHERE cat = '{UPDATED_CAT}'")),
        ("select_updated", lambda: rows(rest_table)),
        ("delete", lambda: spark.sql(f"DELETE FROM {rest_table} WHERE id = {DELETED_ID}")),
        ("select_deleted", lambda: rows(rest_table)),
        ("merge", lambda: spark.sql(
            f"MERGE INTO {rest_table} t USING (SELECT * FROM VALUES {values(MERGE_SOURCE)} AS s(id, cat, amount)) s "
            "ON t.id = s.id WHEN MATCHED AND s.amount < 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET t.amount = s.amount WHEN NOT MATCHED THEN INSERT *")),
        ("select_merged", lambda: rows(rest_table)),
        ("hive_select_merged", lambda: rows(hive_table)),
        ("hive_list_tables", lambda: [list(r) for r in spark.sql(f"SHOW TABLES IN {HIVE}.{NAMESPACE}").collect()]),
        ("hive_insert", lambda: spark.sql(f"INSERT INTO {hive_table} VALUES {values([HIVE_INSERT])}")),
        ("select_after_hive_insert", lambda: (spark.sql(f"REFRESH TABLE {rest_table}"), rows(rest_table))[1]),
        ("rest_snapshot_operations", lambda: [r[0] for r in spark.sql(
            f"SELECT operation FROM {rest_table}.snapshots ORDER BY committed_at").collect()]),
    ]
    for name, step in steps:
        try:
            outcome = step()
            results[name] = {"rows": outcome} if isinstance(outcome, list) else {}
        except Exception as failure:  # every step's failure is reported, the others still run
            results[name] = {"error": f"{type(failure).__name__}: {failure}"[:2000],
                             "trace": traceback.format_exc()[-4000:]}
    spark.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jars", required=True, help="comma-separated, as spark.jars takes them")
    parser.add_argument("--rest-uri", required=True)
    parser.add_argument("--thrift-uri", required=True)
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.write_text(json.dumps(run(args.jars, args.rest_uri, args.thrift_uri, args.warehouse), indent=1))


if __name__ == "__main__":
    main()
