"""hmsproxy beside a running Java HMS on one MariaDB database, both writing at once (issue 13, the safe way to
migrate): ids never collide (DataNucleus and hmsproxy take them from the same SEQUENCE_TABLE rows), nothing is
corrupted, each server reads what the other wrote, and hmsproxy notices that this Java HMS logs no events
(PySpark's jars hold no DbNotificationListener) and stops answering from its cache.

The reference is Hive 2.3.10, the only Java HMS here, on two databases: one Hive's own 2.3.0 script laid out
(schema verification on), which hmsproxy serves in place, where both servers also run transactions and no
transaction id is handed out twice (both take them from NEXT_TXN_ID); and hmsproxy's Hive 4.0.0 schema (schema
verification off), where the Java HMS's transaction calls would need Hive 2.3's tables, so it writes metadata."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as A
from sqlalchemy import create_engine, text

from support.builders import sd
from support.cli import run_hmsproxy
from support.databases import fresh_database
from support.hive_schema import load_hive_script
from support.hmsproxy_server import start_hmsproxy_process
from support.polling import wait_for
from support.reference_hms import ON_HIVES_2_3_SCHEMA, start_reference_hms_on_mariadb
from support.scrape import metric

JAVA_PROPERTIES = {  # per schema: hmsproxy's own, or Hive's 2.3.0 script's
    "hmsproxy": {"datanucleus.schema.autoCreateAll": "false", "hive.metastore.schema.verification": "false"},
    "2.3.0": ON_HIVES_2_3_SCHEMA,
}
TABLES, PARTITIONS, BATCH, TXNS = 3, 24, 6, 4


def _sd() -> A.StorageDescriptor:
    return sd(A, [("a", "int"), ("b", "string")], serde_params={"field.delim": ","})


def _table(db: str, name: str) -> A.Table:
    return A.Table(tableName=name, dbName=db, owner="etl", sd=_sd(), parameters={"made.by": db},
                   partitionKeys=[A.FieldSchema(name="ds", type="string")], tableType="MANAGED_TABLE")


def _write(server: Any, tag: str, transactions: bool, txn_ids: list[int], errors: list[BaseException]) -> None:
    """A database of its own with partitioned tables, and partitions of its own in the shared table; with
    `transactions`, a transaction opened and committed after each batch (their ids go to `txn_ids`)."""
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
            for _ in range(TXNS if transactions else 0):
                [txn] = client.open_txns(A.OpenTxnRequest(num_txns=1, user=tag, hostname="h")).txn_ids
                client.commit_txn(A.CommitTxnRequest(txnid=txn))
                txn_ids.append(txn)
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


@pytest.fixture(params=["2.3.0", "hmsproxy"])
def side_by_side(request, tmp_path):
    """(database URL, the Java HMS, hmsproxy, the schema) on one MariaDB database."""
    with fresh_database("mariadb", tmp_path) as url:
        if request.param != "hmsproxy":
            load_hive_script("mariadb", url, request.param)
        ours = start_hmsproxy_process(tmp_path / "hmsproxy", url, "--unlogged-check-s", "0.2")
        try:
            with start_reference_hms_on_mariadb(tmp_path / "java", url, JAVA_PROPERTIES[request.param]) as java:
                yield url, java, ours, request.param
        finally:
            ours.stop()


def test_hmsproxy_and_the_java_hms_write_one_database_at_once(side_by_side, tmp_path):
    url, java, ours, schema = side_by_side
    transactions = schema != "hmsproxy"
    client = hmsclient.HMSClient(host=ours.host, port=ours.port)
    client.open()
    client.create_database(A.Database(name="shared", parameters={}))
    client.create_table(_table("shared", "shared"))
    client.close()

    errors: list[BaseException] = []
    txn_ids: dict[str, list[int]] = {"java": [], "ours": []}
    writers = [threading.Thread(target=_write, args=(java, "java", transactions, txn_ids["java"], errors)),
               threading.Thread(target=_write, args=(ours, "ours", transactions, txn_ids["ours"], errors))]
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
        # transactions: the counter is past every id; committed ones left TXNS (Hive 2.3's layout)
        counter = conn.execute(text("SELECT NTXN_NEXT FROM NEXT_TXN_ID")).scalar() if transactions else None
        txns_left = conn.execute(text("SELECT COUNT(*) FROM TXNS")).scalar()
    engine.dispose()
    assert descriptors[0] == descriptors[1] == 2 * TABLES * (1 + PARTITIONS) + 1 + 2 * PARTITIONS
    assert serdes[0] == serdes[1] >= descriptors[0]
    every_txn = txn_ids["java"] + txn_ids["ours"]
    assert len(set(every_txn)) == len(every_txn) == (2 * TXNS * PARTITIONS // BATCH if transactions else 0)
    assert (counter, txns_left) == ((max(every_txn) + 1, 0) if transactions else (None, 0))
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
