"""A user's migration (issue 13): the real Java HMS 2.3.10 writes a metastore into a MariaDB database that Hive's
own 2.3.0 script created (and the same rows are copied into a PostgreSQL database of Hive's 2.3.0 script)
(databases, partitioned/external/bucketed/skewed/transactional tables, a view, a Spark
datasource table, statistics, a function, transactions and a lock) and its answers are recorded. hmsproxy serves
that 2.3.0 database in place and must answer every recorded read with the same values (Hive 4 adds fields; those
Hive 2.3 answered must be equal) and continue transaction ids above every id the Java HMS handed out; then
`hmsproxy schema upgrade` (or, on a copy, Hive's own upgrade scripts) brings the database to Hive 4.0.0's layout
and everything is checked again."""
from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as A
from sqlalchemy import Boolean, MetaData, create_engine, text

from support.cli import run_hmsproxy
from support.databases import POSTGRES_ADMIN, fresh_database, postgres_reachable
from support.hive_schema import load_hive_script, upgrade_with_hives_scripts
from support.hmsproxy_server import start_hmsproxy
from support.reference_hms import ON_HIVES_2_3_SCHEMA, start_reference_hms_on_mariadb
from support.required import missing

PARTITIONS = 40
COLUMNS = [("id", "bigint"), ("name", "string"), ("price", "double"), ("amount", "decimal(12,2)"), ("day", "date")]


def _sd(location: str | None = None, **extra: Any) -> A.StorageDescriptor:
    return A.StorageDescriptor(
        cols=[A.FieldSchema(name=n, type=t, comment=f"the {n}") for n, t in COLUMNS], location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        serdeInfo=A.SerDeInfo(name="orc", serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde",
                              parameters={"serialization.format": "1"}),
        parameters={"sd.kept": "yes"}, bucketCols=extra.get("bucketCols", []), sortCols=extra.get("sortCols", []),
        compressed=False, numBuckets=extra.get("numBuckets", -1), skewedInfo=extra.get("skewedInfo"),
        storedAsSubDirectories=extra.get("storedAsSubDirectories", False))


def _write_a_metastore(client: Any, warehouse: Path) -> None:
    """Everything Spark and hmsclient create, written by the Java HMS."""
    client.create_database(A.Database(name="sales", description="orders and more", parameters={"team": "data"},
                                      ownerName="ana", ownerType=A.PrincipalType.USER))
    partition_keys = [A.FieldSchema(name="ds", type="string"), A.FieldSchema(name="region", type="string")]
    client.create_table(A.Table(tableName="orders", dbName="sales", owner="ana", sd=_sd(), partitionKeys=partition_keys,
                                parameters={"comment": "all orders"}, tableType="MANAGED_TABLE"))
    client.add_partitions([A.Partition(dbName="sales", tableName="orders", values=[f"2024-01-{d // 2 + 1:02d}", r],
                                       sd=_sd(), parameters={"origin": f"batch{d}"})
                           for d, r in enumerate(["eu", "us"] * (PARTITIONS // 2))])
    client.create_table(A.Table(tableName="ext", dbName="sales", owner="ana", sd=_sd(f"file:{warehouse}/external/ext"),
                                partitionKeys=[], parameters={"EXTERNAL": "TRUE"}, tableType="EXTERNAL_TABLE"))
    client.create_table(A.Table(tableName="shaped", dbName="sales", owner="ana", partitionKeys=[], parameters={},
                                tableType="MANAGED_TABLE", sd=_sd(
                                    bucketCols=["id"], numBuckets=4, sortCols=[A.Order(col="id", order=1)],
                                    storedAsSubDirectories=True, skewedInfo=A.SkewedInfo(
                                        skewedColNames=["name"], skewedColValues=[["a"], ["b"]],
                                        skewedColValueLocationMaps={}))))
    client.create_table(A.Table(tableName="v", dbName="sales", owner="ana", partitionKeys=[], tableType="VIRTUAL_VIEW",
                                viewOriginalText="select id from orders",
                                viewExpandedText="select `orders`.`id` from `sales`.`orders`",
                                parameters={}, sd=_sd()))
    client.create_table(A.Table(tableName="spark_ds", dbName="sales", owner="ana", partitionKeys=[],
                                tableType="MANAGED_TABLE", sd=_sd(), parameters={
                                    "spark.sql.sources.provider": "parquet", "spark.sql.sources.schema.numParts": "1",
                                    "spark.sql.sources.schema.part.0": '{"type":"struct","fields":[]}'}))
    client.create_table(A.Table(tableName="acid", dbName="sales", owner="ana", partitionKeys=[],
                                tableType="MANAGED_TABLE", sd=_sd(bucketCols=["id"], numBuckets=2),
                                parameters={"transactional": "true"}))
    stats = [A.ColumnStatisticsObj(colName="id", colType="bigint", statsData=A.ColumnStatisticsData(
                 longStats=A.LongColumnStatsData(lowValue=1, highValue=900, numNulls=0, numDVs=850))),
             A.ColumnStatisticsObj(colName="name", colType="string", statsData=A.ColumnStatisticsData(
                 stringStats=A.StringColumnStatsData(maxColLen=30, avgColLen=7.5, numNulls=3, numDVs=12)))]
    client.update_table_column_statistics(A.ColumnStatistics(
        statsDesc=A.ColumnStatisticsDesc(isTblLevel=True, dbName="sales", tableName="orders"), statsObj=stats))
    for name in ("ds=2024-01-01/region=eu", "ds=2024-01-02/region=us"):
        client.update_partition_column_statistics(A.ColumnStatistics(statsDesc=A.ColumnStatisticsDesc(
            isTblLevel=False, dbName="sales", tableName="orders", partName=name), statsObj=stats))
    client.create_function(A.Function(functionName="plus_one", dbName="sales", className="com.example.PlusOne",
                                      ownerName="ana", ownerType=A.PrincipalType.USER, createTime=1700000000,
                                      functionType=A.FunctionType.JAVA, resourceUris=[
                                          A.ResourceUri(resourceType=A.ResourceType.JAR, uri="file:/jars/udf.jar")]))
    txns = client.open_txns(A.OpenTxnRequest(num_txns=3, user="ana", hostname="etl-1")).txn_ids
    client.commit_txn(A.CommitTxnRequest(txnid=txns[0]))
    client.abort_txn(A.AbortTxnRequest(txnid=txns[1]))
    client.lock(A.LockRequest(user="ana", hostname="etl-1", txnid=txns[2], component=[A.LockComponent(
        type=A.LockType.SHARED_READ, level=A.LockLevel.TABLE, dbname="sales", tablename="acid")]))


READS: dict[str, Callable[[Any], Any]] = {
    "database": lambda c: c.get_database("sales"),
    "databases": lambda c: sorted(c.get_all_databases()),
    "tables": lambda c: sorted(c.get_all_tables("sales")),
    **{f"table {name}": (lambda table: lambda c: c.get_table("sales", table))(name)
       for name in ("orders", "ext", "shaped", "v", "spark_ds", "acid")},
    "partitions": lambda c: sorted(c.get_partitions("sales", "orders", -1), key=lambda p: p.values),
    "partition names": lambda c: sorted(c.get_partition_names("sales", "orders", -1)),
    "partitions by filter": lambda c: sorted(p.values for p in c.get_partitions_by_filter(
        "sales", "orders", 'ds >= "2024-01-15" and region = "eu"', -1)),
    "table statistics": lambda c: c.get_table_statistics_req(A.TableStatsRequest(
        dbName="sales", tblName="orders", colNames=["id", "name"])).tableStats,
    "partition statistics": lambda c: c.get_partitions_statistics_req(A.PartitionsStatsRequest(
        dbName="sales", tblName="orders", colNames=["id", "name"],
        partNames=["ds=2024-01-01/region=eu", "ds=2024-01-02/region=us"])).partStats,
    "function": lambda c: c.get_function("sales", "plus_one"),
    "functions": lambda c: c.get_functions("sales", "*"),
    "open transactions": lambda c: sorted((t.id, t.state, t.user, t.hostname)
                                          for t in c.get_open_txns_info().open_txns),
    "locks": lambda c: sorted((lock.txnid, lock.dbname, lock.tablename, lock.state, lock.type, lock.user)
                              for lock in c.show_locks(A.ShowLocksRequest()).locks),
}


def _read_all(server: Any) -> dict[str, Any]:
    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    try:
        return {name: read(client) for name, read in READS.items()}
    finally:
        client.close()


def _as_hive_2_3_answered(expected: Any, got: Any, where: str) -> list[str]:
    """Where `got` differs from `expected` in the fields `expected` has (Hive 4 answers more fields)."""
    if hasattr(expected, "thrift_spec"):
        return [difference for key, value in vars(expected).items() if value is not None
                for difference in _as_hive_2_3_answered(value, getattr(got, key, None), f"{where}.{key}")]
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)) and len(expected) == len(got):
        return [d for i, (e, g) in enumerate(zip(expected, got)) for d in _as_hive_2_3_answered(e, g, f"{where}[{i}]")]
    if isinstance(expected, dict) and isinstance(got, dict) and set(expected) == set(got):
        return [d for k in expected for d in _as_hive_2_3_answered(expected[k], got[k], f"{where}[{k}]")]
    return [] if expected == got else [f"{where}: Hive answered {expected!r}, hmsproxy {got!r}"]


def _copy_rows(source_url: str, target_url: str) -> None:
    """Every row of a Hive 2.3.0 MariaDB metastore into a PostgreSQL one Hive's 2.3.0 script laid out: tables and
    columns matched by name whatever their case (Hive's PostgreSQL script has lower-case transaction tables),
    bit(1) flags as booleans, foreign keys unchecked while the rows arrive, the rows Hive's script inserted replaced."""
    source, target = create_engine(source_url), create_engine(target_url)
    try:
        targets = {table.name.lower(): table for table in _reflected(target)}
        with source.connect() as read, target.begin() as write:
            write.execute(text("SET session_replication_role = replica"))
            for table in targets.values():  # the rows Hive's script inserts (VERSION, counters) come from the source
                write.execute(table.delete())
            for table in _reflected(source):
                into = targets[table.name.lower()]
                columns = {column.name.lower(): column for column in into.columns}
                rows = [{columns[key.lower()].name: _as(columns[key.lower()], value) for key, value in row.items()}
                        for row in read.execute(table.select()).mappings()]
                if rows:
                    write.execute(into.insert(), rows)
    finally:
        source.dispose()
        target.dispose()


def _reflected(engine: Any) -> list[Any]:
    metadata = MetaData()
    metadata.reflect(engine)
    return list(metadata.sorted_tables)


def _as(column: Any, value: Any) -> Any:
    if isinstance(value, bytes) and isinstance(column.type, Boolean):
        return any(value)
    return value


@pytest.fixture(scope="module")
def hive_written(tmp_path_factory) -> Iterator[tuple[dict[tuple[str, str], str], dict[str, Any], Path]]:
    """((backend, who upgrades it) -> URL of a Hive 2.3.0 database holding what the Java HMS wrote, its answers, its
    warehouse). The Java HMS writes MariaDB (the reference runs only there); the same rows are copied into another
    MariaDB database and into two PostgreSQL ones: one of each to be upgraded by hmsproxy, one by Hive's scripts."""
    workdir = tmp_path_factory.mktemp("migration")
    with fresh_database("mariadb", workdir) as url, contextlib.ExitStack() as more:
        load_hive_script("mariadb", url, "2.3.0")
        with start_reference_hms_on_mariadb(workdir / "java", url, ON_HIVES_2_3_SCHEMA) as java:
            client = hmsclient.HMSClient(host=java.host, port=java.port)
            client.open()
            try:
                _write_a_metastore(client, java.warehouse)
            finally:
                client.close()
            answers = _read_all(java)
        urls = {("mariadb", "hmsproxy"): url,
                ("mariadb", "hive"): more.enter_context(fresh_database("mariadb", workdir))}
        _copy_mariadb(url, urls[("mariadb", "hive")])
        for upgrader in ("hmsproxy", "hive") if postgres_reachable() else ():
            urls[("postgres", upgrader)] = more.enter_context(fresh_database("postgres", workdir))
            load_hive_script("postgres", urls[("postgres", upgrader)], "2.3.0")
            _copy_rows(url, urls[("postgres", upgrader)])
        yield urls, answers, java.warehouse


def _copy_mariadb(source_url: str, target_url: str) -> None:
    """The whole database, with MariaDB's own dump and client."""
    dump = subprocess.run(["mariadb-dump", "-h", "127.0.0.1", "-u", "root", source_url.rsplit("/", 1)[1]],
                          capture_output=True, check=True, timeout=120).stdout
    subprocess.run(["mariadb", "-h", "127.0.0.1", "-u", "root", target_url.rsplit("/", 1)[1]], input=dump,
                   check=True, capture_output=True, timeout=120)


def _same_answers_and_new_ids(server: Any, hive_answers: dict[str, Any]) -> None:
    """hmsproxy answers every read as the Java HMS did, and the ids it opens come after the Java HMS's."""
    ours = _read_all(server)
    assert [d for name in READS for d in _as_hive_2_3_answered(hive_answers[name], ours[name], name)] == []
    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    try:
        highest_java_id = max(txn[0] for txn in hive_answers["open transactions"])
        new_ids = client.open_txns(A.OpenTxnRequest(num_txns=2, user="bo", hostname="etl-2")).txn_ids
        assert min(new_ids) > highest_java_id
        for txn_id in new_ids:
            client.commit_txn(A.CommitTxnRequest(txnid=txn_id))
    finally:
        client.close()


@pytest.mark.parametrize("upgrader", ["hmsproxy", "hive"])
@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_a_metastore_the_java_hms_wrote_is_served_in_place_then_upgraded_with_the_same_answers(
        backend, upgrader, hive_written, tmp_path):
    urls, hive_answers, java_warehouse = hive_written
    if (backend, upgrader) not in urls:
        missing("postgres", f"PostgreSQL server not reachable at {POSTGRES_ADMIN}")
    url = urls[(backend, upgrader)]
    assert len(hive_answers["partitions"]) == PARTITIONS and hive_answers["open transactions"] != []
    for cache in (True, False):
        with start_hmsproxy(tmp_path / f"in-place-{cache}", url, warehouse=str(java_warehouse), cache=cache) as server:
            _same_answers_and_new_ids(server, hive_answers)

    if upgrader == "hmsproxy":
        code, lines = run_hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path)
        assert (code, lines[-1]) == (0, "upgraded schema 2.3.0 to 4.0.0"), lines
    else:
        upgrade_with_hives_scripts(backend, url, "2.3.0")
    with start_hmsproxy(tmp_path / "hmsproxy", url, warehouse=str(java_warehouse)) as server:
        _same_answers_and_new_ids(server, hive_answers)
        client = hmsclient.HMSClient(host=server.host, port=server.port)
        client.open()
        try:
            for txn_id in [txn[0] for txn in hive_answers["open transactions"] if txn[1] == A.TxnState.OPEN]:
                client.commit_txn(A.CommitTxnRequest(txnid=txn_id))
            assert client.show_locks(A.ShowLocksRequest()).locks == []  # the Java HMS's lock went with its commit
            client.create_database(A.Database(name=f"new_{uuid.uuid4().hex[:6]}", parameters={}))
        finally:
            client.close()
