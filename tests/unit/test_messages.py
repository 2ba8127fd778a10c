"""Hive's JSON notification messages: field names and order as Hive's JSON*Message classes declare them,
NOTIFICATION_LOG row columns as DbNotificationListener sets them, and the embedded objects decode back."""
import base64
import gzip
import json
import time

import pytest

from hmsproxy.events import messages as m
from hmsproxy.events.thrift_json import encode
from hmsproxy.idl import hms

TS = 1700000000
ORIGIN = ["server", "servicePrincipal"]


def table(name="events", cat=None):
    return hms.Table(
        tableName=name, dbName="sales", owner="anna", tableType="MANAGED_TABLE", catName=cat,
        partitionKeys=[hms.FieldSchema(name="ds", type="string"), hms.FieldSchema(name="hr", type="int")],
        sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name="id", type="bigint")], location="file:/wh/t",
                                 skewedInfo=hms.SkewedInfo(skewedColNames=["id"], skewedColValues=[["1"]],
                                                           skewedColValueLocationMaps={("1",): "file:/wh/t/id=1"})),
        parameters={"comment": "naïve \"t\""})


def partition(ds="2024-01-01", hr="1"):
    return hms.Partition(values=[ds, hr], dbName="sales", tableName="events", parameters={"numRows": "3"},
                         sd=hms.StorageDescriptor(location=f"file:/wh/t/ds={ds}/hr={hr}"))


def database(cat="hive"):
    return hms.Database(name="sales", description="d", locationUri="file:/wh/sales.db", parameters={},
                        ownerName="anna", ownerType=1, catalogName=cat)


def function():
    return hms.Function(functionName="f", dbName="sales", className="C", ownerName="anna", ownerType=1,
                        createTime=TS, functionType=1, resourceUris=[], catName="hive")


def stats(part_name=None):
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName="sales", tableName="events",
                                           partName=part_name, catName="hive"),
        statsObj=[hms.ColumnStatisticsObj(colName="id", colType="bigint", statsData=hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=9,
                                              bitVectors=b"\x00HLL")))],
        engine="hive")


def body(event: m.Event) -> dict:
    assert event.message_format == "json-0.2"
    return json.loads(event.message)


def row(event: m.Event):
    return event.event_type, event.cat_name, event.db_name, event.table_name


# --- every event type: Hive's names, row columns, objects back ------------------------------------------------------

def test_create_database():
    db = database()
    e = m.create_database(db, timestamp=TS)
    assert row(e) == ("CREATE_DATABASE", "hive", "sales", None)
    assert list(body(e)) == ORIGIN + ["cat", "db", "dbJson", "timestamp"]
    assert body(e)["dbJson"] == encode(db) and body(e)["timestamp"] == TS
    parsed = m.parse(e.event_type, e.message)
    assert parsed.database == db and parsed.db_name == "sales" and parsed.timestamp == TS


def test_alter_database():
    before, after = database(), database()
    after.parameters = {"k": "v"}
    e = m.alter_database(before, after, timestamp=TS)
    assert row(e) == ("ALTER_DATABASE", "hive", "sales", None)
    assert list(body(e)) == ORIGIN + ["db", "dbObjBeforeJson", "dbObjAfterJson", "timestamp"]
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.database_before, parsed.database_after) == (before, after)


def test_drop_database_defaults_the_catalog_on_the_row():
    db = database(cat=None)
    e = m.drop_database(db, timestamp=TS)
    assert row(e) == ("DROP_DATABASE", "hive", "sales", None)
    assert list(body(e)) == ORIGIN + ["cat", "db", "dbJson", "timestamp"]
    assert body(e)["cat"] is None
    assert m.parse(e.event_type, e.message).database == db


def test_create_table():
    t = table()
    e = m.create_table(t, timestamp=TS)
    assert row(e) == ("CREATE_TABLE", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ORIGIN + ["db", "table", "tableType", "tableObjJson", "timestamp", "files"]
    assert (b["db"], b["table"], b["tableType"], b["files"]) == ("sales", "events", "MANAGED_TABLE", [])
    parsed = m.parse(e.event_type, e.message)
    assert parsed.table == t and parsed.table_name == "events"


def test_alter_table_rename_names_old_table_in_message_and_new_on_row():
    before, after = table(), table("events_v2", cat="hive")
    e = m.alter_table(before, after, is_truncate=True, write_id=12, timestamp=TS)
    assert row(e) == ("ALTER_TABLE", "hive", "sales", "events_v2")
    b = body(e)
    assert list(b) == ORIGIN + ["db", "table", "tableType", "tableObjBeforeJson", "tableObjAfterJson",
                                "isTruncateOp", "timestamp", "writeId"]
    assert (b["table"], b["isTruncateOp"], b["writeId"]) == ("events", "true", 12)
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.table_before, parsed.table_after, parsed.is_truncate, parsed.write_id) == (before, after, True,
                                                                                              12)


def test_alter_table_without_write_id_writes_null_and_false():
    b = body(m.alter_table(table(), table(), timestamp=TS))
    assert (b["isTruncateOp"], b["writeId"]) == ("false", None)


def test_drop_table():
    t = table()
    e = m.drop_table(t, timestamp=TS)
    assert row(e) == ("DROP_TABLE", "hive", "sales", "events")
    assert list(body(e)) == ORIGIN + ["db", "table", "tableType", "tableObjJson", "timestamp"]
    assert m.parse(e.event_type, e.message).table == t


def test_add_partition():
    t, parts = table(), [partition(), partition("2024-01-02", "0")]
    e = m.add_partition(t, parts, timestamp=TS)
    assert row(e) == ("ADD_PARTITION", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ORIGIN + ["db", "table", "tableType", "tableObjJson", "timestamp", "partitions",
                                "partitionListJson", "partitionFiles"]
    assert b["partitions"] == [{"ds": "2024-01-01", "hr": "1"}, {"ds": "2024-01-02", "hr": "0"}]
    assert b["partitionFiles"] == []
    parsed = m.parse(e.event_type, e.message)
    assert parsed.partitions == parts and parsed.table == t
    assert parsed.partition_key_values == b["partitions"]
    assert list(parsed.partition_key_values[0]) == ["ds", "hr"]  # key order kept


def test_alter_partition():
    t, before, after = table(), partition(), partition()
    after.parameters = {"numRows": "4"}
    e = m.alter_partition(t, before, after, write_id=3, timestamp=TS)
    assert row(e) == ("ALTER_PARTITION", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ORIGIN + ["cat", "db", "table", "tableType", "tableObjJson", "isTruncateOp", "timestamp",
                                "writeId", "keyValues", "partitionObjBeforeJson", "partitionObjAfterJson"]
    assert b["keyValues"] == {"ds": "2024-01-01", "hr": "1"}
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.partition_before, parsed.partition_after, parsed.table) == (before, after, t)
    assert (parsed.write_id, parsed.is_truncate) == (3, False)
    assert parsed.partition_key_values == [{"ds": "2024-01-01", "hr": "1"}]


def test_drop_partition_records_key_values_only():
    t = table()
    e = m.drop_partition(t, [partition()], timestamp=TS)
    assert row(e) == ("DROP_PARTITION", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ORIGIN + ["cat", "db", "table", "tableType", "tableObjJson", "timestamp", "partitions"]
    parsed = m.parse(e.event_type, e.message)
    assert parsed.partition_key_values == [{"ds": "2024-01-01", "hr": "1"}] and parsed.table == t


def test_create_function():
    f = function()
    e = m.create_function(f, timestamp=TS)
    assert row(e) == ("CREATE_FUNCTION", "hive", "sales", None)
    assert list(body(e)) == ORIGIN + ["db", "functionObjJson", "timestamp"]
    assert m.parse(e.event_type, e.message).function == f


def test_drop_function():
    e = m.drop_function(function(), timestamp=TS)
    assert row(e) == ("DROP_FUNCTION", "hive", "sales", None)
    assert list(body(e)) == ORIGIN + ["db", "functionName", "timestamp"]
    assert m.parse(e.event_type, e.message).function_name == "f"


def test_update_table_column_stat():
    t, s = table(), stats()
    e = m.update_table_column_stat(t, s, 7, "sales.events:7:7::", parameters={"COLUMN_STATS_ACCURATE": "{}"},
                                   timestamp=TS)
    assert row(e) == ("UPDATE_TBL_COL_STAT_EVENT", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ["writeId", "timestamp", "validWriteIds", *ORIGIN, "database", "colStatsJson", "parameters",
                       "tableObjJson"]
    assert b["parameters"] == {"COLUMN_STATS_ACCURATE": "{}"}
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.column_statistics, parsed.table, parsed.write_id) == (s, t, 7)
    assert parsed.valid_write_ids == "sales.events:7:7::" and parsed.db_name == "sales"


def test_delete_table_column_stat():
    e = m.delete_table_column_stat(table(), "id", timestamp=TS)
    assert row(e) == ("DELETE_TBL_COL_STAT_EVENT", "hive", "sales", "events")
    assert list(body(e)) == ["timestamp", *ORIGIN, "database", "colName"]
    assert m.parse(e.event_type, e.message).column_name == "id"


def test_update_part_column_stat():
    t, s = table(), stats("ds=2024-01-01/hr=1")
    e = m.update_part_column_stat(t, ["2024-01-01", "1"], s, 8, timestamp=TS)
    assert row(e) == ("UPDATE_PART_COL_STAT_EVENT", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ["writeId", "timestamp", *ORIGIN, "catalog", "database", "colStatsJson", "parameters",
                       "partVals", "tableObjJson"]
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.column_statistics, parsed.table, parsed.write_id) == (s, t, 8)
    assert parsed.partition_values == ["2024-01-01", "1"]


def test_delete_part_column_stat_escapes_the_partition_name():
    e = m.delete_part_column_stat(table(), ["2024/01", "1"], None, timestamp=TS)
    assert row(e) == ("DELETE_PART_COL_STAT_EVENT", "hive", "sales", "events")
    b = body(e)
    assert list(b) == ["timestamp", *ORIGIN, "catalog", "database", "colName", "partName", "partValues"]
    assert (b["partName"], b["colName"], b["catalog"]) == ("ds=2024%2F01/hr=1", None, "hive")
    assert m.parse(e.event_type, e.message).partition_values == ["2024/01", "1"]


def test_open_txn_writes_the_range():
    e = m.open_txn([12, 10, 11], timestamp=TS)
    assert row(e) == ("OPEN_TXN", None, None, None)
    b = body(e)
    assert list(b) == ["txnIds", "timestamp", "fromTxnId", "toTxnId", *ORIGIN]
    assert (b["txnIds"], b["fromTxnId"], b["toTxnId"]) == (None, 10, 12)
    assert m.parse(e.event_type, e.message).txn_ids == [10, 11, 12]


@pytest.mark.parametrize("ids", [[], [1, 3]])
def test_open_txn_refuses_a_gap(ids):
    with pytest.raises(ValueError, match="consecutive"):
        m.open_txn(ids)


def test_commit_txn_alone_is_hives_message():
    e = m.commit_txn(5, timestamp=TS)
    assert row(e) == ("COMMIT_TXN", None, None, None)
    assert body(e) == {"txnid": 5, "timestamp": TS, "server": "", "servicePrincipal": "", "writeIds": None,
                       "databases": None, "tables": None, "partitions": None, "tableObjs": None,
                       "partitionObjs": None, "files": None}
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.txn_id, parsed.write_ids) == (5, [])


def test_commit_txn_with_write_ids():
    e = m.commit_txn(5, [("sales", "events", 3), ("sales", "other", 1)], timestamp=TS)
    b = body(e)
    assert list(b) == ["txnid", "timestamp", *ORIGIN, "writeIds", "databases", "tables", "partitions",
                       "tableObjs", "partitionObjs", "files"]
    assert (b["writeIds"], b["databases"], b["tables"]) == ([3, 1], ["sales", "sales"], ["events", "other"])
    assert b["tableObjs"] == [None, None]
    assert m.parse(e.event_type, e.message).write_ids == [("sales", "events", 3), ("sales", "other", 1)]


def test_abort_txn_lists_the_databases():
    e = m.abort_txn(6, [("a", "t", 1), ("b", "u", 2), ("a", "v", 3)], timestamp=TS)
    assert row(e) == ("ABORT_TXN", None, None, None)
    assert list(body(e)) == ["txnid", "timestamp", *ORIGIN, "dbsUpdated"]
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.txn_id, parsed.dbs_updated) == (6, ["a", "b"])


def test_alloc_write_id():
    e = m.alloc_write_id("sales", "events", [(10, 1), (11, 2)], timestamp=TS)
    assert row(e) == ("ALLOC_WRITE_ID_EVENT", None, "sales", "events")
    b = body(e)
    assert list(b) == [*ORIGIN, "catName", "dbName", "tableName", "txnIdList", "writeIdList", "timestamp"]
    parsed = m.parse(e.event_type, e.message)
    assert parsed.txn_to_write_ids == [(10, 1), (11, 2)]
    assert (parsed.db_name, parsed.table_name) == ("sales", "events")


def test_acid_write():
    t, p = table(), partition()
    e = m.acid_write(20, 4, t, p, files=["file:/wh/t/delta_4_4/b_0"], timestamp=TS)
    assert row(e) == ("ACID_WRITE_EVENT", None, "sales", "events")
    b = body(e)
    assert list(b) == ["txnid", "writeId", "timestamp", *ORIGIN, "database", "table", "partition", "tableObjJson",
                       "partitionObjJson", "files"]
    assert b["partition"] == "ds=2024-01-01/hr=1"
    parsed = m.parse(e.event_type, e.message)
    assert (parsed.txn_id, parsed.write_id, parsed.table, parsed.partition) == (20, 4, t, p)
    unpartitioned = m.parse(m.ACID_WRITE, m.acid_write(20, 4, t, timestamp=TS).message)
    assert unpartitioned.partition is None and unpartitioned.body["partition"] is None


# --- format details -------------------------------------------------------------------------------------------------

def test_message_is_compact_json_with_utf8_text_and_embedded_tjson():
    e = m.create_table(table(), timestamp=TS)
    assert e.message.startswith('{"server":"","servicePrincipal":"","db":"sales","table":"events",')
    assert "naïve" in e.message and ": " not in e.message.split('"tableObjJson"')[0]
    assert '{["str",1,"1"]:"file:/wh/t/id=1"}' in body(e)["tableObjJson"]  # skew map key, as Hive writes it


def test_timestamp_defaults_to_now_in_seconds():
    before = int(time.time())
    stamp = body(m.drop_function(function()))["timestamp"]
    assert before <= stamp <= int(time.time())


def test_reads_hive_written_messages():
    """Messages in the shapes Hive itself writes (older OPEN_TXN with a txnIds list, extra fields)."""
    opened = m.parse("OPEN_TXN", '{"txnIds":[3,4],"timestamp":1,"fromTxnId":null,"toTxnId":null,'
                                 '"server":"thrift://hms:9083","servicePrincipal":"hive/_HOST@R"}')
    assert opened.txn_ids == [3, 4]
    dropped = m.parse("DROP_TABLE", '{"server":"","servicePrincipal":"","db":"d","table":"t","tableType":null,'
                                    '"tableObjJson":"{\\"1\\":{\\"str\\":\\"t\\"}}","timestamp":1,"locOwner":null}')
    assert dropped.table.tableName == "t"


def test_reads_hive_4s_gzip_compressed_messages():
    """Hive 4's default encoder (GzipJSONMessageEncoder, MESSAGE_FORMAT "gzip(json-2.0)") stores base64 of the
    gzip-compressed JSON. The first value is the example Hive documents for its `deserialize` UDF ("test")."""
    assert m.message_json("H4sIAAAAAAAA/ytJLS4BAAx+f9gEAAAA", "gzip(json-2.0)") == "test"
    for event in (m.create_table(table()), m.alter_partition(table(), partition(), partition(hr="2")),
                  m.commit_txn(7, [("sales", "events", 3)]), m.open_txn([8, 9])):
        packed = base64.b64encode(gzip.compress(event.message.encode("utf-8"))).decode("ascii")
        assert m.parse(event.event_type, packed, "gzip(json-2.0)") == m.parse(event.event_type, event.message)
        assert m.parse(event.event_type, event.message, "json-2.0") == m.parse(event.event_type, event.message)


@pytest.mark.parametrize("message", ["not base64!", base64.b64encode(b"not gzip").decode(),
                                     base64.b64encode(gzip.compress(b"\xff\xfe"))[:-4].decode()])
def test_a_malformed_gzip_message_raises_value_error(message):
    with pytest.raises(ValueError, match="gzip"):
        m.parse("CREATE_TABLE", message, "gzip(json-2.0)")


# --- malformed messages ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("event_type, message, error", [
    ("CREATE_TABLE", "{not json", "CREATE_TABLE message is not valid JSON"),
    ("CREATE_TABLE", "[1, 2]", "not a JSON object"),
    ("CREATE_TABLE", '{"db":"d","table":"t"}', "CREATE_TABLE message lacks tableObjJson"),
    ("COMMIT_TXN", '{"txnid":null}', "lacks txnid"),
    ("OPEN_TXN", '{"txnIds":null,"fromTxnId":1}', "neither txnIds nor fromTxnId/toTxnId"),
    ("INSERT", "{}", "unsupported notification event type 'INSERT'"),
])
def test_malformed_message_raises_value_error(event_type, message, error):
    with pytest.raises(ValueError, match=error):
        m.parse(event_type, message)


def test_malformed_embedded_object_raises_value_error():
    parsed = m.parse("CREATE_FUNCTION", '{"db":"d","functionObjJson":"{\\"1\\":"}')
    with pytest.raises(ValueError, match="malformed TJSONProtocol text"):
        _ = parsed.function
    with pytest.raises(ValueError, match="CREATE_FUNCTION message has no tableObjJson"):
        _ = parsed.table
