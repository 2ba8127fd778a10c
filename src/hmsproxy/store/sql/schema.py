"""SQLAlchemy Core tables laid out as the standard Hive metastore schema (Hive 3.1/4.x names).

Table and column names follow Hive's own schema scripts so that the store can later be put in front of
an existing metastore database. Ids come from SEQUENCE_TABLE rows named after the JDO model classes, as
the Java metastore allocates them. On MySQL/MariaDB every table uses a binary utf8mb4 collation: Hive
names are lower-cased, but partition values are case-sensitive and must not collide in unique keys.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import (
    CHAR,
    TIMESTAMP,
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    func,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.schema import SchemaItem
from sqlalchemy.types import TypeEngine

SCHEMA_VERSION = "4.0.0"
# MySQL's TEXT holds 64 KB: parameter values (Spark keeps table schemas there) and notification messages
# need Hive's MEDIUMTEXT / LONGTEXT.
MediumText = Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
LongText = Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
metadata = MetaData()
# Integers that Hive's PostgreSQL script declares bigint where its MySQL script has int (positions, times).
HiveInt = Integer().with_variant(BigInteger(), "postgresql")


class _Bit1(mysql.BIT):
    """bit(1) whose values reach HiveFlag as the driver gives them (SQLAlchemy's BIT would turn bytes into an
    integer, and fail on a column that an older schema holds as an integer)."""

    def result_processor(self, dialect: Dialect, coltype: object) -> None:
        return None


class HiveFlag(TypeDecorator[bool]):
    """A yes/no column as Hive's scripts declare it: bit(1) on MySQL/MariaDB, boolean elsewhere. Read from
    whatever a metastore database holds: the driver hands bit(1) over as bytes (b"\\x00" is a false that
    Python calls true), older hmsproxy schemas as integers, Derby-made ones as 'Y'/'N'."""

    impl = Boolean
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(_Bit1(1))
        return dialect.type_descriptor(Boolean())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else bool(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> bool | None:
        return hive_flag(value)


def hive_flag(value: Any) -> bool | None:
    """A HiveFlag column's value in any stored form, as the driver gives it or as JSON text of it (bit(1) cast to
    text is one character, "\\x00" or "\\x01")."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return any(value)
    if isinstance(value, str):
        if len(value) == 1 and value < " ":
            return value != "\x00"
        return value.strip().upper() in ("Y", "1", "T", "TRUE")
    return bool(value)


_MYSQL: dict[str, Any] = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _table(name: str, *columns: SchemaItem, **kwargs: Any) -> Table:
    return Table(name, metadata, *columns, **_MYSQL, **kwargs)


def _id(name: str) -> Column[int]:
    return Column(name, BigInteger, primary_key=True, autoincrement=False)


VERSION = _table(
    "VERSION",
    _id("VER_ID"),
    Column("SCHEMA_VERSION", String(127), nullable=False),
    Column("VERSION_COMMENT", String(255)),
)

SEQUENCE_TABLE = _table(
    "SEQUENCE_TABLE",
    Column("SEQUENCE_NAME", String(255), primary_key=True),
    Column("NEXT_VAL", BigInteger, nullable=False),
)

CTLGS = _table(
    "CTLGS",
    _id("CTLG_ID"),
    Column("NAME", String(256)),  # nullable, as in Hive's scripts
    Column("DESC", String(4000)),
    Column("LOCATION_URI", String(4000), nullable=False),
    Column("CREATE_TIME", HiveInt),
)

DBS = _table(
    "DBS",
    _id("DB_ID"),
    Column("DESC", String(4000)),
    Column("DB_LOCATION_URI", String(4000), nullable=False),
    Column("NAME", String(128)),
    Column("OWNER_NAME", String(128)),
    Column("OWNER_TYPE", String(10)),
    Column("CTLG_NAME", String(256), nullable=False, server_default="hive"),
    Column("CREATE_TIME", HiveInt),
    Column("DB_MANAGED_LOCATION_URI", String(4000)),
    Column("TYPE", String(32), nullable=False, server_default="NATIVE"),
    Column("DATACONNECTOR_NAME", String(128)),  # Hive 4's remote databases: kept empty, for Hive's tools
    Column("REMOTE_DBNAME", String(128)),
    UniqueConstraint("NAME", "CTLG_NAME", name="UNIQUE_DATABASE"),
)

DATABASE_PARAMS = _table(
    "DATABASE_PARAMS",
    Column("DB_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("DB_ID", "PARAM_KEY"),
)

SERDES = _table(
    "SERDES",
    _id("SERDE_ID"),
    Column("NAME", String(128)),
    Column("SLIB", String(4000)),
    Column("DESCRIPTION", String(4000)),
    Column("SERIALIZER_CLASS", String(4000)),
    Column("DESERIALIZER_CLASS", String(4000)),
    Column("SERDE_TYPE", Integer),
)

SERDE_PARAMS = _table(
    "SERDE_PARAMS",
    Column("SERDE_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("SERDE_ID", "PARAM_KEY"),
)

CDS = _table("CDS", _id("CD_ID"))

COLUMNS_V2 = _table(
    "COLUMNS_V2",
    Column("CD_ID", BigInteger, nullable=False),
    Column("COMMENT", String(4000)),
    Column("COLUMN_NAME", String(700).with_variant(String(767), "postgresql"), nullable=False),  # 700: a utf8mb4 key
    Column("TYPE_NAME", MediumText),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("CD_ID", "COLUMN_NAME"),
)

SDS = _table(
    "SDS",
    _id("SD_ID"),
    Column("CD_ID", BigInteger),
    Column("INPUT_FORMAT", String(4000)),
    Column("IS_COMPRESSED", HiveFlag, nullable=False),
    Column("IS_STOREDASSUBDIRECTORIES", HiveFlag, nullable=False),
    Column("LOCATION", String(4000)),
    Column("NUM_BUCKETS", HiveInt, nullable=False),
    Column("OUTPUT_FORMAT", String(4000)),
    Column("SERDE_ID", BigInteger),
)

SD_PARAMS = _table(
    "SD_PARAMS",
    Column("SD_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("SD_ID", "PARAM_KEY"),
)

BUCKETING_COLS = _table(
    "BUCKETING_COLS",
    Column("SD_ID", BigInteger, nullable=False),
    Column("BUCKET_COL_NAME", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

SORT_COLS = _table(
    "SORT_COLS",
    Column("SD_ID", BigInteger, nullable=False),
    Column("COLUMN_NAME", String(767)),
    Column("ORDER", HiveInt, nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

SKEWED_STRING_LIST = _table("SKEWED_STRING_LIST", _id("STRING_LIST_ID"))

SKEWED_STRING_LIST_VALUES = _table(
    "SKEWED_STRING_LIST_VALUES",
    Column("STRING_LIST_ID", BigInteger, nullable=False),
    Column("STRING_LIST_VALUE", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("STRING_LIST_ID", "INTEGER_IDX"),
)

SKEWED_COL_NAMES = _table(
    "SKEWED_COL_NAMES",
    Column("SD_ID", BigInteger, nullable=False),
    Column("SKEWED_COL_NAME", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

SKEWED_VALUES = _table(
    "SKEWED_VALUES",
    Column("SD_ID_OID", BigInteger, nullable=False),
    Column("STRING_LIST_ID_EID", BigInteger, nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID_OID", "INTEGER_IDX"),
)

SKEWED_COL_VALUE_LOC_MAP = _table(
    "SKEWED_COL_VALUE_LOC_MAP",
    Column("SD_ID", BigInteger, nullable=False),
    Column("STRING_LIST_ID_KID", BigInteger, nullable=False),
    Column("LOCATION", String(4000)),
    PrimaryKeyConstraint("SD_ID", "STRING_LIST_ID_KID"),
)

TBLS = _table(
    "TBLS",
    _id("TBL_ID"),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("DB_ID", BigInteger),
    Column("LAST_ACCESS_TIME", HiveInt, nullable=False),
    Column("OWNER", String(767)),
    Column("OWNER_TYPE", String(10)),
    Column("RETENTION", HiveInt, nullable=False),
    Column("SD_ID", BigInteger),
    Column("TBL_NAME", String(256)),
    Column("TBL_TYPE", String(128)),
    Column("VIEW_EXPANDED_TEXT", MediumText),
    Column("VIEW_ORIGINAL_TEXT", MediumText),
    Column("IS_REWRITE_ENABLED", HiveFlag, nullable=False, server_default=false()),
    Column("WRITE_ID", BigInteger, server_default="0"),
    UniqueConstraint("TBL_NAME", "DB_ID", name="UNIQUETABLE"),
)

TABLE_PARAMS = _table(
    "TABLE_PARAMS",
    Column("TBL_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("TBL_ID", "PARAM_KEY"),
)

PARTITION_KEYS = _table(
    "PARTITION_KEYS",
    Column("TBL_ID", BigInteger, nullable=False),
    Column("PKEY_COMMENT", String(4000)),
    Column("PKEY_NAME", String(128), nullable=False),
    Column("PKEY_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("TBL_ID", "PKEY_NAME"),
)

PARTITIONS = _table(
    "PARTITIONS",
    _id("PART_ID"),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("LAST_ACCESS_TIME", HiveInt, nullable=False),
    Column("PART_NAME", String(767)),
    Column("SD_ID", BigInteger),
    Column("TBL_ID", BigInteger),
    Column("WRITE_ID", BigInteger, server_default="0"),
    UniqueConstraint("TBL_ID", "PART_NAME", name="UNIQUEPARTITION"),  # Hive 4.0.0's order: serves lookups by table
)
# ... except on MySQL/MariaDB, where a unique key over utf8mb4 names (Hive's script has them latin1) is too long for
# InnoDB: MariaDB keeps it as a hash, which serves no lookup by table, and every query of a table's partitions
# would read all partitions. This index, with a prefix of the name, serves them (MYSQL_ONLY_KEYS).
Index("PARTITIONS_TBL_NAME_IDX", PARTITIONS.c.TBL_ID, PARTITIONS.c.PART_NAME,
      mysql_length={"PART_NAME": 255}).ddl_if(dialect="mysql")

PARTITION_KEY_VALS = _table(
    "PARTITION_KEY_VALS",
    Column("PART_ID", BigInteger, nullable=False),
    Column("PART_KEY_VAL", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("PART_ID", "INTEGER_IDX"),
)

PARTITION_PARAMS = _table(
    "PARTITION_PARAMS",
    Column("PART_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("PART_ID", "PARAM_KEY"),
)

FUNCS = _table(
    "FUNCS",
    _id("FUNC_ID"),
    Column("CLASS_NAME", String(4000)),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger),
    Column("FUNC_NAME", String(128)),
    Column("FUNC_TYPE", Integer, nullable=False),
    Column("OWNER_NAME", String(128)),
    Column("OWNER_TYPE", String(10)),
    UniqueConstraint("FUNC_NAME", "DB_ID", name="UNIQUEFUNCTION"),
)

FUNC_RU = _table(
    "FUNC_RU",
    Column("FUNC_ID", BigInteger, nullable=False),
    Column("RESOURCE_TYPE", Integer, nullable=False),
    Column("RESOURCE_URI", String(4000)),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("FUNC_ID", "INTEGER_IDX"),
)


def _stats_columns() -> list[Column[Any]]:
    """The value columns shared by table and partition column statistics."""
    return [
        Column("LONG_LOW_VALUE", BigInteger),
        Column("LONG_HIGH_VALUE", BigInteger),
        Column("DOUBLE_LOW_VALUE", Float(53)),
        Column("DOUBLE_HIGH_VALUE", Float(53)),
        Column("BIG_DECIMAL_LOW_VALUE", String(4000)),
        Column("BIG_DECIMAL_HIGH_VALUE", String(4000)),
        Column("NUM_NULLS", BigInteger, nullable=False),
        Column("NUM_DISTINCTS", BigInteger),
        Column("BIT_VECTOR", LargeBinary),
        Column("HISTOGRAM", LargeBinary),
        Column("AVG_COL_LEN", Float(53)),
        Column("MAX_COL_LEN", BigInteger),
        Column("NUM_TRUES", BigInteger),
        Column("NUM_FALSES", BigInteger),
        Column("LAST_ANALYZED", BigInteger, nullable=False),
        Column("ENGINE", String(128), nullable=False, server_default="hive"),
    ]


TAB_COL_STATS = _table(
    "TAB_COL_STATS",
    _id("CS_ID"),
    Column("CAT_NAME", String(256), nullable=False, server_default="hive"),
    Column("DB_NAME", String(128), nullable=False),
    Column("TABLE_NAME", String(256), nullable=False),
    Column("COLUMN_NAME", String(767), nullable=False),
    Column("COLUMN_TYPE", String(128), nullable=False),
    Column("TBL_ID", BigInteger, nullable=False),
    *_stats_columns(),
    Index("TAB_COL_STATS_TBL_ID_IDX", "TBL_ID", "COLUMN_NAME", mysql_length={"COLUMN_NAME": 255}),  # OWN_KEYS
)

PART_COL_STATS = _table(
    "PART_COL_STATS",
    _id("CS_ID"),
    Column("CAT_NAME", String(256), nullable=False, server_default="hive"),
    Column("DB_NAME", String(128), nullable=False),
    Column("TABLE_NAME", String(256), nullable=False),
    Column("PARTITION_NAME", String(767), nullable=False),
    Column("COLUMN_NAME", String(767), nullable=False),
    Column("COLUMN_TYPE", String(128), nullable=False),
    Column("PART_ID", BigInteger, nullable=False),
    *_stats_columns(),
    Index("PCS_STATS_PART_ID_IDX", "PART_ID", "COLUMN_NAME", mysql_length={"COLUMN_NAME": 255}),  # OWN_KEYS
)

NOTIFICATION_LOG = _table(
    "NOTIFICATION_LOG",
    _id("NL_ID"),
    Column("EVENT_ID", BigInteger, nullable=False),
    Column("EVENT_TIME", Integer, nullable=False),
    Column("EVENT_TYPE", String(32), nullable=False),
    Column("CAT_NAME", String(256)),
    Column("DB_NAME", String(128)),
    Column("TBL_NAME", String(256)),
    Column("MESSAGE", LongText),
    Column("MESSAGE_FORMAT", String(16)),
    UniqueConstraint("EVENT_ID", name="NOTIFICATION_LOG_EVENT_ID"),
    Index("NOTIFICATION_LOG_TABLE", "DB_NAME", "TBL_NAME", "EVENT_ID"),  # hmsproxy's own (OWN_KEYS)
)

NOTIFICATION_SEQUENCE = _table(
    "NOTIFICATION_SEQUENCE",
    _id("NNI_ID"),
    Column("NEXT_EVENT_ID", BigInteger, nullable=False),
)

# ---- transactions, write ids and locks (Hive's TxnHandler tables) ------------------------------------

TXNS = _table(  # Hive 4: the database numbers transactions (txn_ids.py); SQLite's rowid needs INTEGER
    "TXNS",
    Column("TXN_ID", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("TXN_STATE", CHAR(1), nullable=False),          # o open, a aborted, c committed (kept for a while)
    Column("TXN_STARTED", BigInteger, nullable=False),
    Column("TXN_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("TXN_USER", String(128), nullable=False),
    Column("TXN_HOST", String(128), nullable=False),
    Column("TXN_AGENT_INFO", String(128)),
    Column("TXN_META_INFO", String(128)),
    Column("TXN_HEARTBEAT_COUNT", Integer),
    Column("TXN_TYPE", Integer),
    sqlite_autoincrement=True,  # ids never reused
)

# The transaction id counter of Hive 2.3/3.1 and of schemas an older hmsproxy created; not created any more.
NEXT_TXN_ID = Table("NEXT_TXN_ID", MetaData(), Column("NTXN_NEXT", BigInteger, primary_key=True, autoincrement=False),
                    **_MYSQL)

TXN_COMPONENTS = _table(
    "TXN_COMPONENTS",
    Column("TC_TXNID", BigInteger, nullable=False),
    Column("TC_DATABASE", String(128), nullable=False),
    Column("TC_TABLE", String(256)),
    Column("TC_PARTITION", String(767)),
    Column("TC_OPERATION_TYPE", CHAR(1), nullable=False),
    Column("TC_WRITEID", BigInteger),
    Index("TC_TXNID_INDEX", "TC_TXNID"),
)

COMPLETED_TXN_COMPONENTS = _table(
    "COMPLETED_TXN_COMPONENTS",
    Column("CTC_TXNID", BigInteger, nullable=False),
    Column("CTC_DATABASE", String(128), nullable=False),
    Column("CTC_TABLE", String(256)),
    Column("CTC_PARTITION", String(767)),
    Column("CTC_TIMESTAMP", TIMESTAMP, nullable=False, server_default=func.current_timestamp()),  # the commit time
    Column("CTC_WRITEID", BigInteger),
    Column("CTC_UPDATE_DELETE", CHAR(1), nullable=False),
)

WRITE_SET = _table(  # update/delete components of committed transactions, for write-conflict checks
    "WRITE_SET",
    Column("WS_DATABASE", String(128), nullable=False),
    Column("WS_TABLE", String(256), nullable=False),
    Column("WS_PARTITION", String(767)),
    Column("WS_TXNID", BigInteger, nullable=False),
    Column("WS_COMMIT_ID", BigInteger, nullable=False),
    Column("WS_OPERATION_TYPE", CHAR(1), nullable=False),
)

TXN_TO_WRITE_ID = _table(
    "TXN_TO_WRITE_ID",
    Column("T2W_TXNID", BigInteger, nullable=False),
    Column("T2W_DATABASE", String(128), nullable=False),
    Column("T2W_TABLE", String(256), nullable=False),
    Column("T2W_WRITEID", BigInteger, nullable=False),
    Index("TBL_TO_TXN_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_TXNID", unique=True),
    Index("TBL_TO_WRITE_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID", unique=True),
)

NEXT_WRITE_ID = _table(
    "NEXT_WRITE_ID",
    Column("NWI_DATABASE", String(128), nullable=False),
    Column("NWI_TABLE", String(256), nullable=False),
    Column("NWI_NEXT", BigInteger, nullable=False),
    PrimaryKeyConstraint("NWI_DATABASE", "NWI_TABLE"),
)

HIVE_LOCKS = _table(
    "HIVE_LOCKS",
    Column("HL_LOCK_EXT_ID", BigInteger, nullable=False),
    Column("HL_LOCK_INT_ID", BigInteger, nullable=False),
    Column("HL_TXNID", BigInteger, nullable=False),           # 0 = not in a transaction
    Column("HL_DB", String(128), nullable=False),
    Column("HL_TABLE", String(256)),
    Column("HL_PARTITION", String(767)),
    Column("HL_LOCK_STATE", CHAR(1), nullable=False),       # a = acquired, w = waiting
    Column("HL_LOCK_TYPE", CHAR(1), nullable=False),        # r shared read, w shared write, x excl write, e exclusive
    Column("HL_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("HL_ACQUIRED_AT", BigInteger),
    Column("HL_USER", String(128), nullable=False),
    Column("HL_HOST", String(128), nullable=False),
    Column("HL_HEARTBEAT_COUNT", Integer),
    Column("HL_AGENT_INFO", String(128)),
    Column("HL_BLOCKEDBY_EXT_ID", BigInteger),
    Column("HL_BLOCKEDBY_INT_ID", BigInteger),
    PrimaryKeyConstraint("HL_LOCK_EXT_ID", "HL_LOCK_INT_ID"),
    Index("HL_TXNID_INDEX", "HL_TXNID"),
)

NEXT_LOCK_ID = _table("NEXT_LOCK_ID", Column("NL_NEXT", BigInteger, primary_key=True, autoincrement=False))


# ---- Hive 4.0.0's other tables ---------------------------------------------------------------------------------
# hmsproxy does not use these yet (privileges, compaction, replication, constraints, workload management,
# materialized views, scheduled queries, ...); it creates them as Hive's script does, column for column, so
# that a schema it creates is one Hive's own tools (schematool, a Java HMS) can work with. Types as Hive declares
# them on MySQL and PostgreSQL; primary keys as Hive's, but no secondary indexes.

# A binary that Hive's MySQL script declares varbinary(2048), PostgreSQL bytea (compaction META_INFO).
MetaInfo = LargeBinary().with_variant(mysql.VARBINARY(2048), "mysql", "mariadb")
# A flag Hive declares bit(1) on MySQL but smallint on PostgreSQL (WM_TRIGGER.IS_IN_UNMANAGED).
SMALLINT_OR_BIT = SmallInteger().with_variant(mysql.BIT(1), "mysql", "mariadb")

AUX_TABLE = _table(
    "AUX_TABLE",
    Column("MT_KEY1", String(128), nullable=False),
    Column("MT_KEY2", BigInteger, nullable=False),
    Column("MT_COMMENT", String(255)),
    PrimaryKeyConstraint("MT_KEY1", "MT_KEY2"),
)

COMPACTION_METRICS_CACHE = _table(
    "COMPACTION_METRICS_CACHE",
    Column("CMC_DATABASE", String(128), nullable=False),
    Column("CMC_TABLE", String(256), nullable=False),
    Column("CMC_PARTITION", String(767)),
    Column("CMC_METRIC_TYPE", String(128), nullable=False),
    Column("CMC_METRIC_VALUE", Integer, nullable=False),
    Column("CMC_VERSION", Integer, nullable=False),
)

COMPACTION_QUEUE = _table(
    "COMPACTION_QUEUE",
    Column("CQ_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CQ_DATABASE", String(128), nullable=False),
    Column("CQ_TABLE", String(256), nullable=False),
    Column("CQ_PARTITION", String(767)),
    Column("CQ_STATE", CHAR(1), nullable=False),
    Column("CQ_TYPE", CHAR(1), nullable=False),
    Column("CQ_TBLPROPERTIES", String(2048)),
    Column("CQ_WORKER_ID", String(128)),
    Column("CQ_ENQUEUE_TIME", BigInteger),
    Column("CQ_START", BigInteger),
    Column("CQ_RUN_AS", String(128)),
    Column("CQ_HIGHEST_WRITE_ID", BigInteger),
    Column("CQ_META_INFO", MetaInfo),
    Column("CQ_HADOOP_JOB_ID", String(32)),
    Column("CQ_ERROR_MESSAGE", MediumText),
    Column("CQ_NEXT_TXN_ID", BigInteger),
    Column("CQ_TXN_ID", BigInteger),
    Column("CQ_COMMIT_TIME", BigInteger),
    Column("CQ_INITIATOR_ID", String(128)),
    Column("CQ_INITIATOR_VERSION", String(128)),
    Column("CQ_WORKER_VERSION", String(128)),
    Column("CQ_CLEANER_START", BigInteger),
    Column("CQ_RETRY_RETENTION", BigInteger, nullable=False, server_default=text('0')),
    Column("CQ_POOL_NAME", String(128)),
    Column("CQ_NUMBER_OF_BUCKETS", Integer),
    Column("CQ_ORDER_BY", String(4000)),
)

COMPLETED_COMPACTIONS = _table(
    "COMPLETED_COMPACTIONS",
    Column("CC_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CC_DATABASE", String(128), nullable=False),
    Column("CC_TABLE", String(256), nullable=False),
    Column("CC_PARTITION", String(767)),
    Column("CC_STATE", CHAR(1), nullable=False),
    Column("CC_TYPE", CHAR(1), nullable=False),
    Column("CC_TBLPROPERTIES", String(2048)),
    Column("CC_WORKER_ID", String(128)),
    Column("CC_ENQUEUE_TIME", BigInteger),
    Column("CC_START", BigInteger),
    Column("CC_END", BigInteger),
    Column("CC_RUN_AS", String(128)),
    Column("CC_HIGHEST_WRITE_ID", BigInteger),
    Column("CC_META_INFO", MetaInfo),
    Column("CC_HADOOP_JOB_ID", String(32)),
    Column("CC_ERROR_MESSAGE", MediumText),
    Column("CC_NEXT_TXN_ID", BigInteger),
    Column("CC_TXN_ID", BigInteger),
    Column("CC_COMMIT_TIME", BigInteger),
    Column("CC_INITIATOR_ID", String(128)),
    Column("CC_INITIATOR_VERSION", String(128)),
    Column("CC_WORKER_VERSION", String(128)),
    Column("CC_POOL_NAME", String(128)),
    Column("CC_NUMBER_OF_BUCKETS", Integer),
    Column("CC_ORDER_BY", String(4000)),
)

DATACONNECTORS = _table(
    "DATACONNECTORS",
    Column("NAME", String(128), primary_key=True),
    Column("TYPE", String(32), nullable=False),
    Column("URL", String(4000), nullable=False),
    Column("COMMENT", String(256)),
    Column("OWNER_NAME", String(256)),
    Column("OWNER_TYPE", String(10)),
    Column("CREATE_TIME", Integer, nullable=False),
)

DATACONNECTOR_PARAMS = _table(
    "DATACONNECTOR_PARAMS",
    Column("NAME", String(128), nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", String(4000)),
    PrimaryKeyConstraint("NAME", "PARAM_KEY"),
)

DB_PRIVS = _table(
    "DB_PRIVS",
    Column("DB_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("DB_ID", BigInteger),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("DB_PRIV", String(128)),
    Column("AUTHORIZER", String(128)),
)

DC_PRIVS = _table(
    "DC_PRIVS",
    Column("DC_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("NAME", String(128)),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("DC_PRIV", String(128)),
    Column("AUTHORIZER", String(128)),
)

DELEGATION_TOKENS = _table(
    "DELEGATION_TOKENS",
    Column("TOKEN_IDENT", String(767), primary_key=True),
    Column("TOKEN", String(767)),
)

GLOBAL_PRIVS = _table(
    "GLOBAL_PRIVS",
    Column("USER_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("USER_PRIV", String(128)),
    Column("AUTHORIZER", String(128)),
)

I_SCHEMA = _table(
    "I_SCHEMA",
    Column("SCHEMA_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("SCHEMA_TYPE", Integer, nullable=False),
    Column("NAME", String(256)),
    Column("DB_ID", BigInteger),
    Column("COMPATIBILITY", Integer, nullable=False),
    Column("VALIDATION_LEVEL", Integer, nullable=False),
    Column("CAN_EVOLVE", HiveFlag(), nullable=False),
    Column("SCHEMA_GROUP", String(256)),
    Column("DESCRIPTION", String(4000)),
)

KEY_CONSTRAINTS = _table(
    "KEY_CONSTRAINTS",
    Column("CHILD_CD_ID", BigInteger),
    Column("CHILD_INTEGER_IDX", HiveInt),
    Column("CHILD_TBL_ID", BigInteger),
    Column("PARENT_CD_ID", BigInteger),
    Column("PARENT_INTEGER_IDX", HiveInt, nullable=False),
    Column("PARENT_TBL_ID", BigInteger, nullable=False),
    Column("POSITION", BigInteger, nullable=False),
    Column("CONSTRAINT_NAME", String(400), nullable=False),
    Column("CONSTRAINT_TYPE", SmallInteger, nullable=False),
    Column("UPDATE_RULE", SmallInteger),
    Column("DELETE_RULE", SmallInteger),
    Column("ENABLE_VALIDATE_RELY", SmallInteger, nullable=False),
    Column("DEFAULT_VALUE", String(400)),
    PrimaryKeyConstraint("PARENT_TBL_ID", "CONSTRAINT_NAME", "POSITION"),
)

MASTER_KEYS = _table(
    "MASTER_KEYS",
    Column("KEY_ID", Integer, primary_key=True, autoincrement=False),
    Column("MASTER_KEY", String(767)),
)

MATERIALIZATION_REBUILD_LOCKS = _table(
    "MATERIALIZATION_REBUILD_LOCKS",
    Column("MRL_TXN_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("MRL_DB_NAME", String(128), nullable=False),
    Column("MRL_TBL_NAME", String(256), nullable=False),
    Column("MRL_LAST_HEARTBEAT", BigInteger, nullable=False),
)

METASTORE_DB_PROPERTIES = _table(
    "METASTORE_DB_PROPERTIES",
    Column("PROPERTY_KEY", String(255), primary_key=True),
    Column("PROPERTY_VALUE", String(1000), nullable=False),
    Column("DESCRIPTION", String(1000)),
    Column("PROPERTYCONTENT", LargeBinary),
)

MIN_HISTORY_LEVEL = _table(
    "MIN_HISTORY_LEVEL",
    Column("MHL_TXNID", BigInteger, primary_key=True, autoincrement=False),
    Column("MHL_MIN_OPEN_TXNID", BigInteger, nullable=False),
)

MIN_HISTORY_WRITE_ID = _table(
    "MIN_HISTORY_WRITE_ID",
    Column("MH_TXNID", BigInteger, nullable=False),
    Column("MH_DATABASE", String(128), nullable=False),
    Column("MH_TABLE", String(256), nullable=False),
    Column("MH_WRITEID", BigInteger, nullable=False),
)

MV_CREATION_METADATA = _table(
    "MV_CREATION_METADATA",
    Column("MV_CREATION_METADATA_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CAT_NAME", String(256), nullable=False),
    Column("DB_NAME", String(128), nullable=False),
    Column("TBL_NAME", String(256), nullable=False),
    Column("TXN_LIST", Text),
    Column("MATERIALIZATION_TIME", BigInteger, nullable=False),
)

MV_TABLES_USED = _table(
    "MV_TABLES_USED",
    Column("MV_CREATION_METADATA_ID", BigInteger, nullable=False),
    Column("TBL_ID", BigInteger, nullable=False),
    Column("INSERTED_COUNT", BigInteger, nullable=False, server_default=text('0')),
    Column("UPDATED_COUNT", BigInteger, nullable=False, server_default=text('0')),
    Column("DELETED_COUNT", BigInteger, nullable=False, server_default=text('0')),
    PrimaryKeyConstraint("TBL_ID", "MV_CREATION_METADATA_ID"),
)

NEXT_COMPACTION_QUEUE_ID = _table(
    "NEXT_COMPACTION_QUEUE_ID",
    Column("NCQ_NEXT", BigInteger, nullable=False),
)

NUCLEUS_TABLES = _table(
    "NUCLEUS_TABLES",
    Column("CLASS_NAME", String(128), primary_key=True),
    Column("TABLE_NAME", String(128), nullable=False),
    Column("TYPE", String(4), nullable=False),
    Column("OWNER", String(2), nullable=False),
    Column("VERSION", String(20), nullable=False),
    Column("INTERFACE_NAME", String(255)),
)

PACKAGES = _table(
    "PACKAGES",
    Column("PKG_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger, nullable=False),
    Column("NAME", String(256), nullable=False),
    Column("OWNER_NAME", String(128), nullable=False),
    Column("HEADER", LongText, nullable=False),
    Column("BODY", LongText, nullable=False),
)

PARTITION_EVENTS = _table(
    "PARTITION_EVENTS",
    Column("PART_NAME_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CAT_NAME", String(256)),
    Column("DB_NAME", String(128)),
    Column("EVENT_TIME", BigInteger, nullable=False),
    Column("EVENT_TYPE", Integer, nullable=False),
    Column("PARTITION_NAME", String(767)),
    Column("TBL_NAME", String(256)),
)

PART_COL_PRIVS = _table(
    "PART_COL_PRIVS",
    Column("PART_COLUMN_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("COLUMN_NAME", String(767)),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PART_ID", BigInteger),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("PART_COL_PRIV", String(128)),
    Column("AUTHORIZER", String(128)),
)

PART_PRIVS = _table(
    "PART_PRIVS",
    Column("PART_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PART_ID", BigInteger),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("PART_PRIV", String(128)),
    Column("AUTHORIZER", String(128)),
)

REPLICATION_METRICS = _table(
    "REPLICATION_METRICS",
    Column("RM_SCHEDULED_EXECUTION_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RM_POLICY", String(256), nullable=False),
    Column("RM_DUMP_EXECUTION_ID", BigInteger, nullable=False),
    Column("RM_METADATA", String(4000)),
    Column("RM_PROGRESS", String(10000)),
    Column("RM_START_TIME", Integer, nullable=False),
    Column("MESSAGE_FORMAT", String(16), server_default=text("'json-0.2'")),
)

REPL_TXN_MAP = _table(
    "REPL_TXN_MAP",
    Column("RTM_REPL_POLICY", String(256), nullable=False),
    Column("RTM_SRC_TXN_ID", BigInteger, nullable=False),
    Column("RTM_TARGET_TXN_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("RTM_REPL_POLICY", "RTM_SRC_TXN_ID"),
)

ROLES = _table(
    "ROLES",
    Column("ROLE_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("OWNER_NAME", String(128)),
    Column("ROLE_NAME", String(128)),
)

ROLE_MAP = _table(
    "ROLE_MAP",
    Column("ROLE_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("ADD_TIME", HiveInt, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("ROLE_ID", BigInteger),
)

RUNTIME_STATS = _table(
    "RUNTIME_STATS",
    Column("RS_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("WEIGHT", BigInteger, nullable=False),
    Column("PAYLOAD", LargeBinary),
)

SCHEDULED_EXECUTIONS = _table(
    "SCHEDULED_EXECUTIONS",
    Column("SCHEDULED_EXECUTION_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("END_TIME", Integer),
    Column("ERROR_MESSAGE", String(2000)),
    Column("EXECUTOR_QUERY_ID", String(256)),
    Column("LAST_UPDATE_TIME", Integer),
    Column("SCHEDULED_QUERY_ID", BigInteger),
    Column("START_TIME", Integer),
    Column("STATE", String(256)),
)

SCHEDULED_QUERIES = _table(
    "SCHEDULED_QUERIES",
    Column("SCHEDULED_QUERY_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CLUSTER_NAMESPACE", String(256)),
    Column("ENABLED", Boolean, nullable=False),
    Column("NEXT_EXECUTION", Integer),
    Column("QUERY", String(4000)),
    Column("SCHEDULE", String(256)),
    Column("SCHEDULE_NAME", String(256)),
    Column("USER", String(256)),
    Column("ACTIVE_EXECUTION_ID", HiveInt),
)

SCHEMA_VERSIONS = _table(  # Hive's schema registry (I_SCHEMA versions), not our VERSION
    "SCHEMA_VERSION",
    Column("SCHEMA_VERSION_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("SCHEMA_ID", BigInteger),
    Column("VERSION", Integer, nullable=False),
    Column("CREATED_AT", BigInteger, nullable=False),
    Column("CD_ID", BigInteger),
    Column("STATE", Integer, nullable=False),
    Column("DESCRIPTION", String(4000)),
    Column("SCHEMA_TEXT", MediumText),
    Column("FINGERPRINT", String(256)),
    Column("SCHEMA_VERSION_NAME", String(256)),
    Column("SERDE_ID", BigInteger),
)

STORED_PROCS = _table(
    "STORED_PROCS",
    Column("SP_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger, nullable=False),
    Column("NAME", String(256), nullable=False),
    Column("OWNER_NAME", String(128), nullable=False),
    Column("SOURCE", LongText, nullable=False),
)

TBL_COL_PRIVS = _table(
    "TBL_COL_PRIVS",
    Column("TBL_COLUMN_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("COLUMN_NAME", String(767)),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("TBL_COL_PRIV", String(128)),
    Column("TBL_ID", BigInteger),
    Column("AUTHORIZER", String(128)),
)

TBL_PRIVS = _table(
    "TBL_PRIVS",
    Column("TBL_GRANT_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("GRANT_OPTION", SmallInteger, nullable=False),
    Column("GRANTOR", String(128)),
    Column("GRANTOR_TYPE", String(128)),
    Column("PRINCIPAL_NAME", String(128)),
    Column("PRINCIPAL_TYPE", String(128)),
    Column("TBL_PRIV", String(128)),
    Column("TBL_ID", BigInteger),
    Column("AUTHORIZER", String(128)),
)

TXN_LOCK_TBL = _table(
    "TXN_LOCK_TBL",
    Column("TXN_LOCK", BigInteger, nullable=False),
)

TXN_WRITE_NOTIFICATION_LOG = _table(
    "TXN_WRITE_NOTIFICATION_LOG",
    Column("WNL_ID", BigInteger, nullable=False),
    Column("WNL_TXNID", BigInteger, nullable=False),
    Column("WNL_WRITEID", BigInteger, nullable=False),
    Column("WNL_DATABASE", String(128), nullable=False),
    Column("WNL_TABLE", String(256), nullable=False),
    Column("WNL_PARTITION", String(767), nullable=False),
    Column("WNL_TABLE_OBJ", LongText, nullable=False),
    Column("WNL_PARTITION_OBJ", LongText),
    Column("WNL_FILES", LongText),
    Column("WNL_EVENT_TIME", Integer, nullable=False),
)

TYPES = _table(
    "TYPES",
    Column("TYPES_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("TYPE_NAME", String(128)),
    Column("TYPE1", String(767)),
    Column("TYPE2", String(767)),
)

TYPE_FIELDS = _table(
    "TYPE_FIELDS",
    Column("TYPE_NAME", BigInteger, nullable=False),
    Column("COMMENT", String(256)),
    Column("FIELD_NAME", String(128), nullable=False),
    Column("FIELD_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("TYPE_NAME", "FIELD_NAME"),
)

WM_MAPPING = _table(
    "WM_MAPPING",
    Column("MAPPING_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("ENTITY_TYPE", String(128), nullable=False),
    Column("ENTITY_NAME", String(128), nullable=False),
    Column("POOL_ID", BigInteger),
    Column("ORDERING", Integer),
)

WM_POOL = _table(
    "WM_POOL",
    Column("POOL_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("PATH", String(767).with_variant(String(1024), "postgresql"), nullable=False),
    Column("ALLOC_FRACTION", Float(53)),
    Column("QUERY_PARALLELISM", Integer),
    Column("SCHEDULING_POLICY", String(767).with_variant(String(1024), "postgresql")),
)

WM_POOL_TO_TRIGGER = _table(
    "WM_POOL_TO_TRIGGER",
    Column("POOL_ID", BigInteger, nullable=False),
    Column("TRIGGER_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("POOL_ID", "TRIGGER_ID"),
)

WM_RESOURCEPLAN = _table(
    "WM_RESOURCEPLAN",
    Column("RP_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("NAME", String(128), nullable=False),
    Column("NS", String(128)),
    Column("QUERY_PARALLELISM", Integer),
    Column("STATUS", String(20), nullable=False),
    Column("DEFAULT_POOL_ID", BigInteger),
)

WM_TRIGGER = _table(
    "WM_TRIGGER",
    Column("TRIGGER_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("NAME", String(128), nullable=False),
    Column("TRIGGER_EXPRESSION", String(1024)),
    Column("ACTION_EXPRESSION", String(1024)),
    Column("IS_IN_UNMANAGED", SMALLINT_OR_BIT, nullable=False),
)


# ---- Hive 4.0.0's other keys, as its scripts declare them ------------------------------------------------
# Unique keys keep Hive's rules (one role of a name, one pool per path...) for any tool writing these tables.
# Of Hive's plain indexes, those its features look rows up by; the ones that only back a foreign key (*_N49,
# *_N50: hmsproxy declares no foreign keys) are left out, but for the two hmsproxy's listings use.
_HIVE_KEYS: list[tuple[Table, str, bool, tuple[str, ...]]] = [
    (CTLGS, "UNIQUE_CATALOG", True, ("NAME",)),
    (ROLES, "ROLEENTITYINDEX", True, ("ROLE_NAME",)),
    (ROLE_MAP, "USERROLEMAPINDEX", True, ("PRINCIPAL_NAME", "ROLE_ID", "GRANTOR", "GRANTOR_TYPE")),
    (TYPES, "UNIQUE_TYPE", True, ("TYPE_NAME",)),
    (PACKAGES, "UNIQUEPKG", True, ("NAME", "DB_ID")),
    (STORED_PROCS, "UNIQUESTOREDPROC", True, ("NAME", "DB_ID")),
    (WM_MAPPING, "UNIQUE_WM_MAPPING", True, ("RP_ID", "ENTITY_TYPE", "ENTITY_NAME")),
    (WM_POOL, "UNIQUE_WM_POOL", True, ("RP_ID", "PATH")),
    (WM_TRIGGER, "UNIQUE_WM_TRIGGER", True, ("RP_ID", "NAME")),
    (WM_RESOURCEPLAN, "UNIQUE_WM_RESOURCEPLAN", True, ("NAME", "NS")),
    (GLOBAL_PRIVS, "GLOBALPRIVILEGEINDEX", True,
     ("AUTHORIZER", "PRINCIPAL_NAME", "PRINCIPAL_TYPE", "USER_PRIV", "GRANTOR", "GRANTOR_TYPE")),
    (DB_PRIVS, "DBPRIVILEGEINDEX", True,
     ("AUTHORIZER", "DB_ID", "PRINCIPAL_NAME", "PRINCIPAL_TYPE", "DB_PRIV", "GRANTOR", "GRANTOR_TYPE")),
    (DC_PRIVS, "DCPRIVILEGEINDEX", True,
     ("AUTHORIZER", "NAME", "PRINCIPAL_NAME", "PRINCIPAL_TYPE", "DC_PRIV", "GRANTOR", "GRANTOR_TYPE")),
    (TBL_PRIVS, "TABLEPRIVILEGEINDEX", False,
     ("AUTHORIZER", "TBL_ID", "PRINCIPAL_NAME", "PRINCIPAL_TYPE", "TBL_PRIV", "GRANTOR", "GRANTOR_TYPE")),
    (PART_PRIVS, "PARTPRIVILEGEINDEX", False,
     ("AUTHORIZER", "PART_ID", "PRINCIPAL_NAME", "PRINCIPAL_TYPE", "PART_PRIV", "GRANTOR", "GRANTOR_TYPE")),
    (TBL_COL_PRIVS, "TABLECOLUMNPRIVILEGEINDEX", False, ("AUTHORIZER", "TBL_ID", "COLUMN_NAME", "PRINCIPAL_NAME",
                                                        "PRINCIPAL_TYPE", "TBL_COL_PRIV", "GRANTOR", "GRANTOR_TYPE")),
    (PART_COL_PRIVS, "PARTITIONCOLUMNPRIVILEGEINDEX", False,
     ("AUTHORIZER", "PART_ID", "COLUMN_NAME", "PRINCIPAL_NAME", "PRINCIPAL_TYPE", "PART_COL_PRIV", "GRANTOR",
      "GRANTOR_TYPE")),
    (TBLS, "TBLS_N49", False, ("DB_ID",)),
    (TAB_COL_STATS, "TAB_COL_STATS_IDX", False, ("DB_NAME", "TABLE_NAME", "COLUMN_NAME", "CAT_NAME")),
    (PART_COL_STATS, "PCS_STATS_IDX", False, ("DB_NAME", "TABLE_NAME", "COLUMN_NAME", "PARTITION_NAME", "CAT_NAME")),
    (FUNCS, "FUNCS_N49", False, ("DB_ID",)),
    (KEY_CONSTRAINTS, "CONSTRAINTS_PARENT_TABLE_ID_INDEX", False, ("PARENT_TBL_ID",)),
    (KEY_CONSTRAINTS, "CONSTRAINTS_CONSTRAINT_TYPE_INDEX", False, ("CONSTRAINT_TYPE",)),
    (MIN_HISTORY_LEVEL, "MIN_HISTORY_LEVEL_IDX", False, ("MHL_MIN_OPEN_TXNID",)),
    (MV_CREATION_METADATA, "MV_UNIQUE_TABLE", False, ("TBL_NAME", "DB_NAME")),
    (PARTITION_EVENTS, "PARTITIONEVENTINDEX", False, ("PARTITION_NAME",)),
    (REPLICATION_METRICS, "POLICY_IDX", False, ("RM_POLICY",)),
    (REPLICATION_METRICS, "DUMP_IDX", False, ("RM_DUMP_EXECUTION_ID",)),
    (RUNTIME_STATS, "IDX_RUNTIME_STATS_CREATE_TIME", False, ("CREATE_TIME",)),
    (SCHEDULED_EXECUTIONS, "IDX_SCHEDULED_EXECUTIONS_LAST_UPDATE_TIME", False, ("LAST_UPDATE_TIME",)),
    (SCHEDULED_EXECUTIONS, "IDX_SCHEDULED_EXECUTIONS_SCHEDULED_QUERY_ID", False, ("SCHEDULED_QUERY_ID",)),
    (COMPLETED_COMPACTIONS, "COMPLETED_COMPACTIONS_RES", False, ("CC_DATABASE", "CC_TABLE", "CC_PARTITION")),
    (COMPLETED_TXN_COMPONENTS, "COMPLETED_TXN_COMPONENTS_IDX", False, ("CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION")),
    (I_SCHEMA, "UNIQUE_NAME", False, ("NAME",)),
    (SCHEMA_VERSIONS, "UNIQUE_VERSION", False, ("SCHEMA_ID", "VERSION")),
]
MYSQL_KEY_CHARS = 760  # InnoDB keys hold 3072 bytes: 768 utf8mb4 characters, less room for the integers


def _mysql_prefixes(table: Table, columns: tuple[str, ...]) -> dict[str, int]:
    """Prefix lengths that fit a plain index over long text columns into an InnoDB key (Hive's latin1 tables fit
    them whole). Unique keys need none: MariaDB checks long ones through a hash."""
    texts = [(name, length) for name in columns if (length := _text_length(table.c[name]))]
    if sum(length for _, length in texts) <= MYSQL_KEY_CHARS:
        return {}
    share = MYSQL_KEY_CHARS // len(texts)
    return {name: share for name, length in texts if length > share}


def _text_length(column: Column[Any]) -> int | None:
    """The declared length of a text column; None for other columns and for text of no declared length."""
    return column.type.length if isinstance(column.type, String) else None


for _keyed, _name, _unique, _columns in _HIVE_KEYS:
    Index(_name, *(_keyed.c[column] for column in _columns), unique=_unique,
          mysql_length={} if _unique else _mysql_prefixes(_keyed, _columns))

# Keys hmsproxy adds to Hive's layout: a Hive database without them is served, only slower (`schema validate`
# says so; `schema upgrade` adds them).
OWN_KEYS = frozenset({("NOTIFICATION_LOG", ("DB_NAME", "TBL_NAME", "EVENT_ID")), ("NEXT_LOCK_ID", ("NL_NEXT",)),
                      ("PARTITIONS", ("TBL_ID", "PART_NAME")),
                      ("TAB_COL_STATS", ("TBL_ID", "COLUMN_NAME")), ("PART_COL_STATS", ("PART_ID", "COLUMN_NAME"))})
# Indexes a MySQL/MariaDB database has only (ddl_if): elsewhere a key of Hive's serves their lookups.
MYSQL_ONLY_KEYS = frozenset({"PARTITIONS_TBL_NAME_IDX"})


def indexes_on(table: Table, dialect: str) -> list[Index]:
    """The indexes declared for `table` that a database of `dialect` (SQLAlchemy's name) has."""
    return [index for index in table.indexes if dialect == "mysql" or index.name not in MYSQL_ONLY_KEYS]
