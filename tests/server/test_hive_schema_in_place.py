"""Databases Hive 4.0.0's and 3.1.0's own scripts created, served in place (issue 13): nothing is added to their layout,
transaction ids continue above those Hive handed out, and transactions live as Hive 4 keeps them (a committed
one stays in TXNS as 'c' until the cleaner's turn, which keeps the highest id). The whole API suite also runs
on such databases (tests/conftest.py, the `-hive4` servers)."""
from __future__ import annotations

import base64
import copy
import dataclasses
import gzip
import time

import pytest
from sqlalchemy import create_engine, text

from hmsproxy.events import messages
from hmsproxy.idl import hms
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.sequences import reserve
from hmsproxy.store.sql.store import SqlStore
from support.cli import run_hmsproxy
from support.databases import fresh_database
from support.hive_schema import load_hive_script, tables_and_version
from support.hmsproxy_server import start_hmsproxy
from support.instances import connect
from support.polling import wait_for


def _sql(url: str, statement: str) -> list[tuple]:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement if url.startswith("mysql") else statement.replace("`", '"')))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _hive_history(url: str) -> list[int]:
    """Five transactions as Hive 4 leaves them: ids from the auto-increment, 1-3 and 5 committed, 4 aborted."""
    for _ in range(5):
        _sql(url, "INSERT INTO `TXNS` (`TXN_STATE`, `TXN_STARTED`, `TXN_LAST_HEARTBEAT`, `TXN_USER`, `TXN_HOST`) "
                  "VALUES ('c', 0, 0, 'hive', 'h')")
    ids = [row[0] for row in _sql(url, "SELECT `TXN_ID` FROM `TXNS` WHERE `TXN_ID` > 0 ORDER BY `TXN_ID`")]
    _sql(url, f"UPDATE `TXNS` SET `TXN_STATE` = 'a' WHERE `TXN_ID` = {ids[3]}")
    return ids


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_hive_4s_schema_is_served_in_place_and_its_transaction_ids_continue(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        load_hive_script(backend, url, "4.0.0")
        hive_ids = _hive_history(url)
        layout = tables_and_version(url)
        server = start_hmsproxy(tmp_path / "server", url)
        try:
            client = connect(server)
            assert client.get_database("default").name == "default"
            assert client.get_catalog(hms.GetCatalogRequest(name="hive")).catalog.locationUri != "TBD"
            t1, t2 = client.open_txns(hms.OpenTxnRequest(num_txns=2, user="u", hostname="h")).txn_ids
            assert (t1, t2) == (hive_ids[-1] + 1, hive_ids[-1] + 2)
            info = {t.id: t.state for t in client.get_open_txns_info().open_txns}
            assert info == {hive_ids[3]: hms.TxnState.ABORTED, t1: hms.TxnState.OPEN, t2: hms.TxnState.OPEN}
            client.commit_txn(hms.CommitTxnRequest(txnid=t1))
            client.commit_txn(hms.CommitTxnRequest(txnid=t1))  # Hive 4: a committed transaction stays known
            with pytest.raises(hms.NoSuchTxnException, match="already committed"):
                client.abort_txn(hms.AbortTxnRequest(txnid=t1))
            ranged = client.heartbeat_txn_range(hms.HeartbeatTxnRangeRequest(min=t1, max=t2))
            assert (set(ranged.aborted), set(ranged.nosuch)) == (set(), {t1})
            assert _sql(url, f"SELECT `TXN_STATE` FROM `TXNS` WHERE `TXN_ID` = {t1}") == [("c",)]
            client.abort_txn(hms.AbortTxnRequest(txnid=t2))
            state = client.get_open_txns()
            assert state.txn_high_water_mark == t2 and state.open_txns == [hive_ids[3], t2]
            client.close()
        finally:
            server.stop()
        store = SqlStore(Database(url))
        store.reap_expired()  # the cleaner's part: committed rows below the highest go
        store.close()
        kept = _sql(url, "SELECT `TXN_ID`, `TXN_STATE` FROM `TXNS` ORDER BY `TXN_ID`")
        assert kept == [(hive_ids[3], "a"), (t2, "a")]
        assert tables_and_version(url) == layout


def test_text_a_latin1_column_cannot_hold_is_refused_clearly_and_nothing_is_written(tmp_path):
    """Hive's MySQL tables are latin1 (MySQL's latin1 is Windows-1252): such text round-trips exactly; other text
    is refused with a MetaException naming the column, never stored as '?', whatever the server's sql_mode."""
    with fresh_database("mariadb", tmp_path) as url:
        load_hive_script("mariadb", url, "4.0.0")
        db = Database(url)
        with db.transaction() as conn:
            assert "STRICT_ALL_TABLES" in conn.execute(text("SELECT @@SESSION.sql_mode")).scalar()
        db.dispose()
        server = start_hmsproxy(tmp_path / "server", url)
        try:
            client = connect(server)
            client.create_database(hms.Database(name="fits", description="café € naïve", parameters={"k": "¼ß"}))
            kept = client.get_database("fits")
            assert (kept.description, kept.parameters) == ("café € naïve", {"k": "¼ß"})
            with pytest.raises(hms.MetaException) as refused:
                client.create_database(hms.Database(name="wide", description="日本", parameters={}))
            assert refused.value.message == ("create_database: text the metastore database cannot store in DBS.DESC "
                                             "(its character set, latin1 in Hive's MySQL schema, does not hold every "
                                             "character given); nothing was changed")
            with pytest.raises(hms.NoSuchObjectException):
                client.get_database("wide")
            client.close()
        finally:
            server.stop()
        assert _sql(url, "SELECT `NAME` FROM `DBS` WHERE `NAME` = 'wide'") == []


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_a_change_logged_as_hive_4s_listener_logs_it_reaches_the_cache(backend, tmp_path):
    """Another metastore changes a table and logs the event as Hive 4's DbNotificationListener does by default
    (MESSAGE_FORMAT "gzip(json-2.0)"): the cache serves the old table until the event, then the new one."""
    with fresh_database(backend, tmp_path) as url:
        load_hive_script(backend, url, "4.0.0")
        server = start_hmsproxy(tmp_path / "server", url)
        try:
            client = connect(server)
            client.create_database(hms.Database(name="shop", parameters={}))
            client.create_table(hms.Table(dbName="shop", tableName="t", tableType="EXTERNAL_TABLE",
                                          parameters={"note": "before", "EXTERNAL": "TRUE"}, partitionKeys=[],
                                          sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")],
                                                                   serdeInfo=hms.SerDeInfo(parameters={}))))
            before = client.get_table("shop", "t")
            _sql(url, "UPDATE `TABLE_PARAMS` SET `PARAM_VALUE` = 'after' WHERE `PARAM_KEY` = 'note'")
            assert client.get_table("shop", "t").parameters["note"] == "before"  # served from the cache
            after = copy.deepcopy(before)
            after.parameters["note"] = "after"
            event = messages.alter_table(before, after)
            packed = base64.b64encode(gzip.compress(event.message.encode("utf-8"))).decode("ascii")
            db = Database(url)
            with db.engine.begin() as conn:
                packed_event = dataclasses.replace(event, message=packed, message_format="gzip(json-2.0)")
                event_log.append(conn, [packed_event], reserve(conn, "MNotificationLog", 1))
            db.dispose()
            # the poller reads the log every 0.2 s; the timeout bounds a broken test
            wait_for(lambda: client.get_table("shop", "t").parameters["note"] == "after",
                     "the packed event applied", timeout=15)
            client.close()
        finally:
            server.stop()


def _hive_3_1_history(url: str) -> None:
    """Transactions as Hive 3.1 leaves them: ids 1-40 handed out by NEXT_TXN_ID, committed ones deleted from TXNS,
    37 aborted and 39 still open. Names unquoted: Hive's 3.1 PostgreSQL script created these tables unquoted."""
    _plain_sql(url, "UPDATE NEXT_TXN_ID SET NTXN_NEXT = 41")
    for txn_id, state in ((37, "a"), (39, "o")):
        _plain_sql(url, "INSERT INTO TXNS (TXN_ID, TXN_STATE, TXN_STARTED, TXN_LAST_HEARTBEAT, TXN_USER, TXN_HOST) "
                        f"VALUES ({txn_id}, '{state}', 0, {int(time.time() * 1000)}, 'hive', 'h')")


def _plain_sql(url: str, statement: str) -> list[tuple]:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            result = conn.execute(text(statement))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def _answers(client, db_name: str) -> tuple:
    """What a client reads of one database and its table: compared between the cache and the database."""
    table = client.get_table(db_name, "t")
    stats = client.get_table_column_statistics(db_name, "t", "id").statsObj[0].statsData.longStats
    return client.get_database(db_name), table.writeId, table.parameters, (stats.lowValue, stats.highValue)


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_hive_3_1s_schema_is_served_in_place(backend, tmp_path):
    """Hive 3.1.0's layout lacks a few of Hive 4's columns: what it never recorded (a database's create time, a
    table's write id) reads back empty, from the cache as from the database; what it cannot hold (a managed
    location, a histogram) is refused and nothing is written. Transaction ids continue from Hive's counter, and
    a committed transaction leaves TXNS as in Hive 3.1. The layout and VERSION stay as Hive's script made them."""
    with fresh_database(backend, tmp_path) as url:
        load_hive_script(backend, url, "3.1.0")
        _hive_3_1_history(url)
        layout = tables_and_version(url)
        assert run_hmsproxy("schema", "validate", "--db", url, cwd=tmp_path)[0] == 0
        code, lines = run_hmsproxy("schema", "info", "--db", url, cwd=tmp_path)
        assert (code, lines[0]) == (0, "schema version: 3.1.0 (Hive 3.1.0's layout, as Hive's schematool creates "
                                       "it; transaction ids from NEXT_TXN_ID)")
        server = start_hmsproxy(tmp_path / "cached", url)
        try:
            client = connect(server)
            [t1] = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
            assert t1 == 41
            info = {t.id: t.state for t in client.get_open_txns_info().open_txns}
            assert info == {37: hms.TxnState.ABORTED, 39: hms.TxnState.OPEN, 41: hms.TxnState.OPEN}
            client.commit_txn(hms.CommitTxnRequest(txnid=t1))
            assert _plain_sql(url, "SELECT TXN_ID FROM TXNS ORDER BY TXN_ID") == [(37,), (39,)]
            assert _plain_sql(url, "SELECT NTXN_NEXT FROM NEXT_TXN_ID") == [(42,)]

            with pytest.raises(hms.MetaException) as refused:
                client.create_database(hms.Database(name="managed", managedLocationUri=f"file:{tmp_path}/m"))
            assert "Hive's schema 3.1.0, which has no place for DBS.DB_MANAGED_LOCATION_URI" in refused.value.message
            with pytest.raises(hms.NoSuchObjectException):
                client.get_database("managed")

            client.create_database(hms.Database(name="sales", parameters={}))
            client.create_table(hms.Table(dbName="sales", tableName="t", tableType="EXTERNAL_TABLE", writeId=7,
                                          parameters={"EXTERNAL": "TRUE"}, partitionKeys=[],
                                          sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name="id", type="bigint")],
                                                                   serdeInfo=hms.SerDeInfo(parameters={}))))
            desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName="sales", tableName="t")
            plain = hms.ColumnStatisticsObj(colName="id", colType="bigint", statsData=hms.ColumnStatisticsData(
                longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=9)))
            client.update_table_column_statistics(hms.ColumnStatistics(statsDesc=desc, statsObj=[plain]))
            with_histogram = copy.deepcopy(plain)
            with_histogram.statsData.longStats.histogram, with_histogram.statsData.longStats.highValue = b"kll", 99
            with pytest.raises(hms.MetaException, match=r"no place for TAB_COL_STATS\.HISTOGRAM"):
                client.update_table_column_statistics(hms.ColumnStatistics(statsDesc=desc, statsObj=[with_histogram]))
            cached = _answers(client, "sales")
            assert cached[0].createTime is None and cached[1] == 0 and cached[3] == (1, 9)
            client.close()
        finally:
            server.stop()
        server = start_hmsproxy(tmp_path / "uncached", url, cache=False)
        try:
            client = connect(server)
            assert _answers(client, "sales") == cached
            client.close()
        finally:
            server.stop()
        assert tables_and_version(url) == layout
