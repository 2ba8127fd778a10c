"""Hive's notification-log messages (JSONMessageEncoder, format ``json-0.2``): build them, and read them back.

Each builder returns an :class:`Event`: one NOTIFICATION_LOG row without its id and time (EVENT_TYPE, CAT_NAME,
DB_NAME, TBL_NAME, MESSAGE, MESSAGE_FORMAT). The MESSAGE is the JSON Hive's ``JSON*Message`` classes
serialise with Jackson: their ``@JsonProperty`` fields in declaration order, nulls included, compact.
Metadata objects are embedded as TJSONProtocol strings (:mod:`hmsproxy.events.thrift_json`), so Hive's
readers (replication, its CachedStore, Impala, ...) can read our log and we can read theirs.

Row columns follow Hive's DbNotificationListener: the catalog falls back to ``hive`` for metadata events;
transaction events (OPEN/COMMIT/ABORT_TXN, ALLOC_WRITE_ID_EVENT) have no catalog, and only
ALLOC_WRITE_ID_EVENT names a database and table.

``server`` and ``servicePrincipal`` are Hive's ``metastore.thrift.uris`` and Kerberos principal of the
writing server; we write empty strings (Hive's own defaults when those are unset). Timestamps are seconds
since the epoch; every builder takes ``timestamp=`` so tests can fix it.
"""
from __future__ import annotations

import base64
import gzip
import json
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from thriftpy2.thrift import TPayload

from hmsproxy.events.thrift_json import decode, encode
from hmsproxy.hive.names import DEFAULT_CATALOG, make_partition_name
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.idl.json_value import Json, JsonObject

P = TypeVar("P", bound=TPayload)   # an IDL struct

MESSAGE_FORMAT = "json-0.2"
SERVER = ""
SERVICE_PRINCIPAL = ""

# EVENT_TYPE values: Hive's MessageBuilder constants (note the _EVENT suffix on the newer ones).
CREATE_DATABASE = "CREATE_DATABASE"
ALTER_DATABASE = "ALTER_DATABASE"
DROP_DATABASE = "DROP_DATABASE"
CREATE_TABLE = "CREATE_TABLE"
ALTER_TABLE = "ALTER_TABLE"
DROP_TABLE = "DROP_TABLE"
ADD_PARTITION = "ADD_PARTITION"
ALTER_PARTITION = "ALTER_PARTITION"
DROP_PARTITION = "DROP_PARTITION"
CREATE_FUNCTION = "CREATE_FUNCTION"
DROP_FUNCTION = "DROP_FUNCTION"
UPDATE_TBL_COL_STAT = "UPDATE_TBL_COL_STAT_EVENT"
DELETE_TBL_COL_STAT = "DELETE_TBL_COL_STAT_EVENT"
UPDATE_PART_COL_STAT = "UPDATE_PART_COL_STAT_EVENT"
DELETE_PART_COL_STAT = "DELETE_PART_COL_STAT_EVENT"
OPEN_TXN = "OPEN_TXN"
COMMIT_TXN = "COMMIT_TXN"
ABORT_TXN = "ABORT_TXN"
ALLOC_WRITE_ID = "ALLOC_WRITE_ID_EVENT"
ACID_WRITE = "ACID_WRITE_EVENT"
INSERT = "INSERT"

WriteIds = Iterable[tuple[str, str, int]]  # (database, table, write id)


@dataclass(frozen=True)
class Event:
    """A NOTIFICATION_LOG row, less NL_ID / EVENT_ID / EVENT_TIME, which the store assigns."""
    event_type: str
    cat_name: str | None
    db_name: str | None
    table_name: str | None
    message: str
    message_format: str = MESSAGE_FORMAT
    created_rows: int = 1   # of a create event: the rows it announces (ADD_PARTITION: its partitions)


def _event(event_type: str, cat: str | None, db: str | None, table: str | None, body: Mapping[str, Json],
           created_rows: int = 1) -> Event:
    # Jackson's output: compact, non-ASCII as UTF-8 (it writes control characters' \u escapes in upper case,
    # json.dumps in lower; both read the same).
    return Event(event_type, cat, db, table, json.dumps(body, ensure_ascii=False, separators=(",", ":")),
                 created_rows=created_rows)


def _origin() -> JsonObject:
    return {"server": SERVER, "servicePrincipal": SERVICE_PRINCIPAL}


def _now(timestamp: int | None) -> int:
    return int(time.time()) if timestamp is None else timestamp


def _key_values(table: hms.Table, partition: hms.Partition) -> dict[str, str]:
    """Hive's MessageBuilder.getPartitionKeyValues: partition key name -> value, in key order."""
    return {present(key.name): value for key, value in zip(table.partitionKeys or [], partition.values or [])}


def _part_name(table: hms.Table, values: Sequence[str]) -> str:
    return make_partition_name([present(key.name) for key in table.partitionKeys or []], values)


# --- databases ------------------------------------------------------------------------------------------------------

def create_database(db: hms.Database, *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "cat": db.catalogName, "db": db.name, "dbJson": encode(db), "timestamp": _now(timestamp)}
    return _event(CREATE_DATABASE, db.catalogName or DEFAULT_CATALOG, db.name, None, body)


def alter_database(before: hms.Database, after: hms.Database, *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "db": before.name, "dbObjBeforeJson": encode(before), "dbObjAfterJson": encode(after),
            "timestamp": _now(timestamp)}
    return _event(ALTER_DATABASE, before.catalogName or DEFAULT_CATALOG, before.name, None, body)


def drop_database(db: hms.Database, *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "cat": db.catalogName, "db": db.name, "dbJson": encode(db), "timestamp": _now(timestamp)}
    return _event(DROP_DATABASE, db.catalogName or DEFAULT_CATALOG, db.name, None, body)


# --- tables ---------------------------------------------------------------------------------------------------------

def _table_event(event_type: str, table: hms.Table, body: Mapping[str, Json], created_rows: int = 1) -> Event:
    return _event(event_type, table.catName or DEFAULT_CATALOG, table.dbName, table.tableName, body, created_rows)


def insert(table: hms.Table, partition: hms.Partition | None, files: Sequence[str], checksums: Sequence[str] = (), *,
           replace: bool = False, timestamp: int | None = None) -> Event:
    """What fire_listener_event records for data inserted outside the metastore (Hive's JSONInsertMessage)."""
    body = {**_origin(), "db": table.dbName, "table": table.tableName, "tableType": table.tableType,
            "tableObjJson": encode(table), "ptnObjJson": encode(partition) if partition is not None else None,
            "timestamp": _now(timestamp), "replace": "true" if replace else "false",
            "files": [f"{f}###{c}" if c else f for f, c in zip(files, [*checksums, *[""] * len(files)])]}
    return _table_event(INSERT, table, body)


def create_table(table: hms.Table, *, files: Sequence[str] = (), timestamp: int | None = None) -> Event:
    body = {**_origin(), "db": table.dbName, "table": table.tableName, "tableType": table.tableType,
            "tableObjJson": encode(table), "timestamp": _now(timestamp), "files": list(files)}
    return _table_event(CREATE_TABLE, table, body)


def alter_table(before: hms.Table, after: hms.Table, *, is_truncate: bool = False, write_id: int | None = None,
                timestamp: int | None = None) -> Event:
    """The message names the table as it was (a rename's old name); the row, as it is now."""
    body = {**_origin(), "db": before.dbName, "table": before.tableName, "tableType": before.tableType,
            "tableObjBeforeJson": encode(before), "tableObjAfterJson": encode(after),
            "isTruncateOp": "true" if is_truncate else "false", "timestamp": _now(timestamp), "writeId": write_id}
    return _table_event(ALTER_TABLE, after, body)


def drop_table(table: hms.Table, *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "db": table.dbName, "table": table.tableName, "tableType": table.tableType,
            "tableObjJson": encode(table), "timestamp": _now(timestamp)}
    return _table_event(DROP_TABLE, table, body)


# --- partitions -----------------------------------------------------------------------------------------------------

def add_partition(table: hms.Table, partitions: Sequence[hms.Partition], *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "db": table.dbName, "table": table.tableName, "tableType": table.tableType,
            "tableObjJson": encode(table), "timestamp": _now(timestamp),
            "partitions": [_key_values(table, p) for p in partitions],
            "partitionListJson": [encode(p) for p in partitions], "partitionFiles": []}
    return _table_event(ADD_PARTITION, table, body, created_rows=len(partitions))


def alter_partition(table: hms.Table, before: hms.Partition, after: hms.Partition, *, is_truncate: bool = False,
                    write_id: int | None = None, timestamp: int | None = None) -> Event:
    body = {**_origin(), "cat": table.catName, "db": table.dbName, "table": table.tableName,
            "tableType": table.tableType, "tableObjJson": encode(table),
            "isTruncateOp": "true" if is_truncate else "false", "timestamp": _now(timestamp), "writeId": write_id,
            "keyValues": _key_values(table, before),
            "partitionObjBeforeJson": encode(before), "partitionObjAfterJson": encode(after)}
    return _table_event(ALTER_PARTITION, table, body)


def drop_partition(table: hms.Table, partitions: Sequence[hms.Partition], *, timestamp: int | None = None) -> Event:
    """Hive records only the dropped partitions' key values, not the partition objects."""
    body = {**_origin(), "cat": table.catName, "db": table.dbName, "table": table.tableName,
            "tableType": table.tableType, "tableObjJson": encode(table), "timestamp": _now(timestamp),
            "partitions": [_key_values(table, p) for p in partitions]}
    return _table_event(DROP_PARTITION, table, body)


# --- functions ------------------------------------------------------------------------------------------------------

def create_function(function: hms.Function, *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "db": function.dbName, "functionObjJson": encode(function), "timestamp": _now(timestamp)}
    return _event(CREATE_FUNCTION, function.catName or DEFAULT_CATALOG, function.dbName, None, body)


def drop_function(function: hms.Function, *, timestamp: int | None = None) -> Event:
    body = {**_origin(), "db": function.dbName, "functionName": function.functionName,
            "timestamp": _now(timestamp)}
    return _event(DROP_FUNCTION, function.catName or DEFAULT_CATALOG, function.dbName, None, body)


# --- column statistics ----------------------------------------------------------------------------------------------

def update_table_column_stat(table: hms.Table, stats: hms.ColumnStatistics, write_id: int,
                             valid_write_ids: str | None, *,
                             parameters: Mapping[str, str] | None = None, timestamp: int | None = None) -> Event:
    """``parameters``: the table's parameters after the update (Hive passes the updated ones)."""
    desc = stats.statsDesc
    body = {"writeId": write_id, "timestamp": _now(timestamp), "validWriteIds": valid_write_ids, **_origin(),
            "database": desc.dbName, "colStatsJson": encode(stats),
            "parameters": dict(parameters) if parameters is not None else None, "tableObjJson": encode(table)}
    return _event(UPDATE_TBL_COL_STAT, desc.catName or DEFAULT_CATALOG, desc.dbName, desc.tableName, body)


def delete_table_column_stat(table: hms.Table, column: str | None, *, timestamp: int | None = None) -> Event:
    """Hive's message carries only the database and column; the table is in the row's TBL_NAME."""
    body = {"timestamp": _now(timestamp), **_origin(), "database": table.dbName, "colName": column}
    return _table_event(DELETE_TBL_COL_STAT, table, body)


def update_part_column_stat(table: hms.Table, part_values: Sequence[str], stats: hms.ColumnStatistics, write_id: int, *,
                            parameters: Mapping[str, str] | None = None, timestamp: int | None = None) -> Event:
    """Unlike the table message, Hive's partition message has no validWriteIds."""
    desc = stats.statsDesc
    body = {"writeId": write_id, "timestamp": _now(timestamp), **_origin(), "catalog": desc.catName,
            "database": desc.dbName, "colStatsJson": encode(stats),
            "parameters": dict(parameters) if parameters is not None else None, "partVals": list(part_values),
            "tableObjJson": encode(table)}
    return _event(UPDATE_PART_COL_STAT, desc.catName or DEFAULT_CATALOG, desc.dbName, desc.tableName, body)


def delete_part_column_stat(table: hms.Table, part_values: Sequence[str], column: str | None, *,
                            timestamp: int | None = None) -> Event:
    body = {"timestamp": _now(timestamp), **_origin(), "catalog": table.catName or DEFAULT_CATALOG,
            "database": table.dbName, "colName": column, "partName": _part_name(table, part_values),
            "partValues": list(part_values)}
    return _table_event(DELETE_PART_COL_STAT, table, body)


# --- transactions ---------------------------------------------------------------------------------------------------

def open_txn(txn_ids: Sequence[int], *, timestamp: int | None = None) -> Event:
    """Hive 4 writes the opened range as fromTxnId..toTxnId (txnIds null): ids opened together are consecutive."""
    ids = sorted(txn_ids)
    if not ids or ids != list(range(ids[0], ids[0] + len(ids))):
        raise ValueError(f"OPEN_TXN needs a non-empty run of consecutive transaction ids, got {list(txn_ids)}")
    body = {"txnIds": None, "timestamp": _now(timestamp), "fromTxnId": ids[0], "toTxnId": ids[-1], **_origin()}
    return _event(OPEN_TXN, None, None, None, body)


def commit_txn(txn_id: int, write_ids: WriteIds = (), *, timestamp: int | None = None) -> Event:
    """Hive writes only the txnid (its readers pair it with ALLOC_WRITE_ID_EVENTs); given ``write_ids``, we also
    fill the per-write lists the way Hive's CommitTxnMessage.addWriteEventInfo does, with no table objects."""
    entries = list(write_ids)
    lists: JsonObject = dict.fromkeys(
        ("writeIds", "databases", "tables", "partitions", "tableObjs", "partitionObjs", "files"))
    if entries:
        lists.update(writeIds=[w for _, _, w in entries], databases=[d for d, _, _ in entries],
                     tables=[t for _, t, _ in entries], partitions=[None] * len(entries),
                     tableObjs=[None] * len(entries), partitionObjs=[None] * len(entries),
                     files=[None] * len(entries))
    body = {"txnid": txn_id, "timestamp": _now(timestamp), **_origin(), **lists}
    return _event(COMMIT_TXN, None, None, None, body)


def abort_txn(txn_id: int, write_ids: WriteIds = (), *, timestamp: int | None = None) -> Event:
    """Hive's message lists only the databases the transaction wrote to (dbsUpdated)."""
    dbs = list(dict.fromkeys(db for db, _, _ in write_ids))
    body = {"txnid": txn_id, "timestamp": _now(timestamp), **_origin(), "dbsUpdated": dbs}
    return _event(ABORT_TXN, None, None, None, body)


def alloc_write_id(db: str, table: str, txn_to_write_ids: Iterable[tuple[int, int]], *,
                   cat_name: str = DEFAULT_CATALOG, timestamp: int | None = None) -> Event:
    pairs = list(txn_to_write_ids)
    body = {**_origin(), "catName": cat_name, "dbName": db, "tableName": table,
            "txnIdList": [t for t, _ in pairs], "writeIdList": [w for _, w in pairs], "timestamp": _now(timestamp)}
    return _event(ALLOC_WRITE_ID, None, db, table, body)


def acid_write(txn_id: int, write_id: int, table: hms.Table, partition: hms.Partition | None = None, *,
               files: Sequence[str] = (), timestamp: int | None = None) -> Event:
    """Hive 4 stores this message in TXN_WRITE_NOTIFICATION_LOG (WNL_TABLE_OBJ etc.), not NOTIFICATION_LOG;
    the row columns here are the ones its NotificationEvent carries."""
    body = {"txnid": txn_id, "writeId": write_id, "timestamp": _now(timestamp), **_origin(),
            "database": table.dbName, "table": table.tableName,
            "partition": _part_name(table, present(partition.values)) if partition is not None else None,
            "tableObjJson": encode(table), "partitionObjJson": encode(partition) if partition is not None else None,
            "files": list(files)}
    return _event(ACID_WRITE, None, table.dbName, table.tableName, body)


# --- reading --------------------------------------------------------------------------------------------------------

# The fields each message must have for the accessors to mean anything.
_REQUIRED: dict[str, tuple[str, ...]] = {
    CREATE_DATABASE: ("db", "dbJson"),
    ALTER_DATABASE: ("db", "dbObjBeforeJson", "dbObjAfterJson"),
    DROP_DATABASE: ("db",),
    CREATE_TABLE: ("db", "table", "tableObjJson"),
    ALTER_TABLE: ("db", "table", "tableObjBeforeJson", "tableObjAfterJson"),
    DROP_TABLE: ("db", "table"),
    ADD_PARTITION: ("db", "table", "tableObjJson", "partitions", "partitionListJson"),
    ALTER_PARTITION: ("db", "table", "partitionObjBeforeJson", "partitionObjAfterJson"),
    DROP_PARTITION: ("db", "table", "partitions"),
    CREATE_FUNCTION: ("db", "functionObjJson"),
    DROP_FUNCTION: ("db", "functionName"),
    UPDATE_TBL_COL_STAT: ("database", "colStatsJson"),
    DELETE_TBL_COL_STAT: ("database",),
    UPDATE_PART_COL_STAT: ("database", "colStatsJson", "partVals"),
    DELETE_PART_COL_STAT: ("database", "partValues"),
    OPEN_TXN: (),
    COMMIT_TXN: ("txnid",),
    ABORT_TXN: ("txnid",),
    ALLOC_WRITE_ID: ("dbName", "tableName", "txnIdList", "writeIdList"),
    ACID_WRITE: ("txnid", "writeId", "database", "table", "tableObjJson"),
}


def parse(event_type: str, message: str, message_format: str | None = MESSAGE_FORMAT) -> ParsedMessage:
    """Check a NOTIFICATION_LOG message of a supported type; its accessors decode the embedded objects."""
    if event_type not in _REQUIRED:
        raise ValueError(f"unsupported notification event type {event_type!r}")
    try:
        body = json.loads(message_json(message, message_format))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{event_type} message is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ValueError(f"{event_type} message is not a JSON object")
    missing = [key for key in _REQUIRED[event_type] if body.get(key) is None]
    if missing:
        raise ValueError(f"{event_type} message lacks {', '.join(missing)}")
    if event_type == OPEN_TXN and body.get("txnIds") is None and (body.get("fromTxnId") is None
                                                                   or body.get("toTxnId") is None):
        raise ValueError("OPEN_TXN message has neither txnIds nor fromTxnId/toTxnId")
    return ParsedMessage(event_type, body)


def message_json(message: str, message_format: str | None) -> str:
    """The JSON of a message as Hive's listener stored it: Hive 4's default encoder (GzipJSONMessageEncoder,
    format "gzip(json-2.0)") stores it gzip-compressed and base64-encoded; "json-0.2" (Hive 2.3, and
    hmsproxy) and "json-2.0" (Hive 3's JSONMessageEncoder) store the JSON itself."""
    if not (message_format or "").startswith("gzip("):
        return message
    try:
        return gzip.decompress(base64.b64decode(message, validate=True)).decode("utf-8")
    except (ValueError, OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{message_format} message is not base64 of gzip-compressed UTF-8: {exc}") from None


@dataclass(frozen=True)
class ParsedMessage:
    """A message's JSON fields (``body``, Hive's names) with typed accessors; objects are decoded on access."""
    event_type: str
    body: dict[str, Any]

    def _get(self, key: str) -> Any:
        value = self.body.get(key)
        if value is None:
            raise ValueError(f"{self.event_type} message has no {key}")
        return value

    def _obj(self, cls: type[P], key: str) -> P:
        return decode(cls, self._get(key))

    @property
    def timestamp(self) -> int | None:
        return self.body.get("timestamp")

    @property
    def db_name(self) -> str | None:
        return self.body.get("db") or self.body.get("database") or self.body.get("dbName")

    @property
    def table_name(self) -> str | None:
        name = self.body.get("tableName") if self.event_type == ALLOC_WRITE_ID else self.body.get("table")
        return name if isinstance(name, str) else None

    @property
    def table(self) -> hms.Table:
        return self._obj(hms.Table, "tableObjJson")

    @property
    def table_before(self) -> hms.Table:
        return self._obj(hms.Table, "tableObjBeforeJson")

    @property
    def table_after(self) -> hms.Table:
        return self._obj(hms.Table, "tableObjAfterJson")

    @property
    def is_truncate(self) -> bool:
        return self.body.get("isTruncateOp") == "true"

    @property
    def partitions(self) -> list[hms.Partition]:
        """ADD_PARTITION's partition objects."""
        return [decode(hms.Partition, text) for text in self._get("partitionListJson")]

    @property
    def partition_count(self) -> int:
        """How many partitions ADD_PARTITION added (without decoding them)."""
        return len(self._get("partitionListJson"))

    @property
    def partition_key_values(self) -> list[dict[str, str]]:
        """Key -> value of each added/dropped partition (ADD/DROP_PARTITION) or the altered one (ALTER)."""
        if self.event_type == ALTER_PARTITION:
            return [self._get("keyValues")]
        return cast("list[dict[str, str]]", self._get("partitions"))

    @property
    def partition_before(self) -> hms.Partition:
        return self._obj(hms.Partition, "partitionObjBeforeJson")

    @property
    def partition_after(self) -> hms.Partition:
        return self._obj(hms.Partition, "partitionObjAfterJson")

    @property
    def partition(self) -> hms.Partition | None:
        """ACID_WRITE's partition object, None for an unpartitioned table."""
        text = self.body.get("partitionObjJson")
        return decode(hms.Partition, text) if text is not None else None

    @property
    def partition_values(self) -> list[str]:
        """The partition of a column-statistics event."""
        return cast("list[str]", self._get("partVals" if self.event_type == UPDATE_PART_COL_STAT else "partValues"))

    @property
    def database(self) -> hms.Database:
        return self._obj(hms.Database, "dbJson")

    @property
    def database_before(self) -> hms.Database:
        return self._obj(hms.Database, "dbObjBeforeJson")

    @property
    def database_after(self) -> hms.Database:
        return self._obj(hms.Database, "dbObjAfterJson")

    @property
    def function(self) -> hms.Function:
        return self._obj(hms.Function, "functionObjJson")

    @property
    def function_name(self) -> str:
        return cast(str, self._get("functionName"))

    @property
    def column_statistics(self) -> hms.ColumnStatistics:
        return self._obj(hms.ColumnStatistics, "colStatsJson")

    @property
    def column_name(self) -> str | None:
        return self.body.get("colName")

    @property
    def txn_id(self) -> int:
        return cast(int, self._get("txnid"))

    @property
    def txn_ids(self) -> list[int]:
        """OPEN_TXN's transactions, from either form Hive has written (txnIds, or fromTxnId..toTxnId)."""
        if self.body.get("txnIds") is not None:
            return list(self.body["txnIds"])
        return list(range(self._get("fromTxnId"), self._get("toTxnId") + 1))

    @property
    def write_id(self) -> int | None:
        return self.body.get("writeId")

    @property
    def write_ids(self) -> list[tuple[str, str, int]]:
        """COMMIT_TXN's (database, table, write id) entries; empty when the message has none (Hive's own)."""
        ids = self.body.get("writeIds") or []
        return list(zip(self._get("databases"), self._get("tables"), ids)) if ids else []

    @property
    def txn_to_write_ids(self) -> list[tuple[int, int]]:
        """ALLOC_WRITE_ID_EVENT's (txn id, write id) pairs."""
        return list(zip(self._get("txnIdList"), self._get("writeIdList")))

    @property
    def dbs_updated(self) -> list[str]:
        return self.body.get("dbsUpdated") or []

    @property
    def valid_write_ids(self) -> str | None:
        return self.body.get("validWriteIds")
