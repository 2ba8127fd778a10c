"""Spark (Hive support) against one metastore: `write` creates a few tables and their rows, `read` answers a
fixed set of queries about them. The answers hold no paths or times, so two metastores' can be compared: the
rows a migration must keep (tests/e2e/test_spark_migration.py)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

DB = "migrated"
QUERIES = {
    "databases": f"SHOW DATABASES LIKE '{DB}'",
    "tables": f"SHOW TABLES IN {DB}",
    "sales": f"SELECT id, amount, ds FROM {DB}.sales ORDER BY id",
    "one partition": f"SELECT id FROM {DB}.sales WHERE ds = '2024-01-02' ORDER BY id",
    "per partition": f"SELECT ds, COUNT(*), SUM(amount) FROM {DB}.sales GROUP BY ds ORDER BY ds",
    "partitions": f"SHOW PARTITIONS {DB}.sales",
    "datasource table": f"SELECT k, v FROM {DB}.kv ORDER BY k",
    "view": f"SELECT * FROM {DB}.big_sales ORDER BY id",
    "columns": f"DESCRIBE {DB}.sales",
}


def write(spark) -> None:
    spark.sql(f"CREATE DATABASE {DB} COMMENT 'written through the Java HMS'")
    spark.sql(f"CREATE TABLE {DB}.sales (id INT, amount DOUBLE) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {DB}.sales PARTITION (ds) VALUES (1, 10.5, '2024-01-01'), (2, 20.0, '2024-01-01'), "
              "(3, 7.25, '2024-01-02'), (4, 99.0, '2024-01-03'), (5, 1.0, '2024-01-03')")
    spark.sql(f"CREATE TABLE {DB}.kv (k STRING, v INT) USING parquet")
    spark.sql(f"INSERT INTO {DB}.kv VALUES ('a', 1), ('b', 2)")
    spark.sql(f"CREATE VIEW {DB}.big_sales AS SELECT id, amount FROM {DB}.sales WHERE amount > 10")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--metastore-uri", required=True)
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--mode", choices=["write", "read"], required=True)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("hmsproxy-migration")
             .config("spark.hadoop.hive.metastore.uris", args.metastore_uri)
             .config("spark.sql.warehouse.dir", args.warehouse.as_uri())
             .config("spark.hadoop.hive.exec.dynamic.partition.mode", "nonstrict")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             # short runs on tiny data: the JVM's quick compiler alone, no whole-stage code generation
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
             .config("spark.sql.codegen.wholeStage", "false")
             .enableHiveSupport().getOrCreate())
    try:
        if args.mode == "write":
            write(spark)
        answers = {name: [[str(value) for value in row] for row in spark.sql(query).collect()]
                   for name, query in QUERIES.items()}
        args.out.write_text(json.dumps(answers, indent=1, sort_keys=True))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
