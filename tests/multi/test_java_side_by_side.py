"""hmsproxy beside a running Java HMS on one MariaDB database, both writing at once (issue 13, the safe way to
migrate): ids never collide (DataNucleus and hmsproxy take them from the same SEQUENCE_TABLE rows), nothing is
corrupted, each server reads what the other wrote, and hmsproxy notices that this Java HMS logs no events
(PySpark's jars hold no DbNotificationListener) and stops answering from its cache.

The reference is Hive 2.3.10 on hmsproxy's Hive 4.0.0 schema (with schema verification off): the only Java HMS
here. Its transaction calls need Hive 2.3's NEXT_TXN_ID and fail on Hive 4's schema, so it writes metadata only."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as A
from sqlalchemy import create_engine, text

from support.cli import run_hmsproxy
from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy_process
from support.reference_hms import start_reference_hms_on_mariadb
from support.scrape import metric, wait_for

JAVA_PROPERTIES = {"datanucleus.schema.autoCreateAll": "false", "hive.metastore.schema.verification": "false"}
TABLES, PARTITIONS, BATCH = 3, 24, 6


def _sd() -> A.StorageDescriptor:
    return A.StorageDescriptor(cols=[A.FieldSchema(name="a", type="int"), A.FieldSchema(name="b", type="string")],
                               inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                               outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                               serdeInfo=A.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                                                     parameters={"field.delim": ","}),
                               parameters={}, bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)


def _table(db: str, name: str) -> A.Table:
    return A.Table(tableName=name, dbName=db, owner="etl", sd=_sd(), parameters={"made.by": db},
                   partitionKeys=[A.FieldSchema(name="ds", type="string")], tableType="MANAGED_TABLE")


def _write(server: Any, tag: str, errors: list[BaseException]) -> None:
    """A database of its own with partitioned tables, and partitions of its own in the shared table."""
    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    try:
        client.create_database(A.Database(name=tag, parameters={"by": tag}))
        for t in range(TABLES):
            client.create_table(_table(tag, f"t{t}"))
        for first in range(0, PARTITIONS, BATCH):
            for t in ["shared", *(f"t{t}" for t in range(TABLES))]:
                db = "shared" if t == "shared" else tag
                client.add_partitions([A.Partition(dbName=db, tableName=t, sd=_sd(), parameters={"by": tag},
                                                   values=[f"{tag}-{i:03d}" if t == "shared" else f"{i:03d}"])
                                       for i in range(first, first + BATCH)])
    except BaseException as exc:  # reported by the main thread
        errors.append(exc)
    finally:
        client.close()


def _listing(server: Any) -> dict[str, Any]:
    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    try:
        return {f"{db}.{t}": (client.get_table(db, t).parameters.get("made.by"),
                              sorted(client.get_partition_names(db, t, -1)))
                for db in ("java", "ours", "shared") for t in sorted(client.get_all_tables(db))}
    finally:
        client.close()


@pytest.fixture
def side_by_side(tmp_path):
    with fresh_database("mariadb", tmp_path) as url:
        ours = start_hmsproxy_process(tmp_path / "hmsproxy", url, "--unlogged-check-s", "0.2")
        try:
            with start_reference_hms_on_mariadb(tmp_path / "java", url, JAVA_PROPERTIES) as java:
                yield url, java, ours
        finally:
            ours.stop()


def test_hmsproxy_and_the_java_hms_write_one_database_at_once(side_by_side, tmp_path):
    url, java, ours = side_by_side
    client = hmsclient.HMSClient(host=ours.host, port=ours.port)
    client.open()
    client.create_database(A.Database(name="shared", parameters={}))
    client.create_table(_table("shared", "shared"))
    client.close()

    errors: list[BaseException] = []
    writers = [threading.Thread(target=_write, args=(java, "java", errors)),
               threading.Thread(target=_write, args=(ours, "ours", errors))]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert errors == []

    wait_for(lambda: metric(ours, "hmsproxy_cache_passing_through") == 1, "hmsproxy noticed the unlogged writer")
    expected = {**{f"{db}.t{t}": (db, [f"ds={i:03d}" for i in range(PARTITIONS)]) for db in ("java", "ours")
                   for t in range(TABLES)},
                "shared.shared": ("shared", sorted(f"ds={tag}-{i:03d}" for tag in ("java", "ours")
                                                   for i in range(PARTITIONS)))}
    assert _listing(ours) == expected
    assert _listing(java) == expected

    engine = create_engine(url)
    with engine.connect() as conn:  # every object has rows of its own: no id was handed out twice
        descriptors = conn.execute(text("SELECT COUNT(*), COUNT(DISTINCT SD_ID) FROM (SELECT SD_ID FROM TBLS UNION ALL "
                                        "SELECT SD_ID FROM PARTITIONS) AS used")).one()
        serdes = conn.execute(text("SELECT COUNT(*), COUNT(DISTINCT SERDE_ID) FROM SDS")).one()
    engine.dispose()
    assert descriptors[0] == descriptors[1] == 2 * TABLES * (1 + PARTITIONS) + 1 + 2 * PARTITIONS
    assert serdes[0] == serdes[1] >= descriptors[0]
    code, lines = run_hmsproxy("schema", "validate", "--db", url, cwd=tmp_path)
    assert code == 0, lines  # among others: no id counter is behind the ids in use

    java_client = hmsclient.HMSClient(host=java.host, port=java.port)
    java_client.open()
    table = java_client.get_table("ours", "t0")
    table.parameters["altered.by"] = "java"
    java_client.alter_table("ours", "t0", table)
    java_client.close()
    client = hmsclient.HMSClient(host=ours.host, port=ours.port)
    client.open()
    assert client.get_table("ours", "t0").parameters["altered.by"] == "java"  # not from a stale cache
    client.close()
