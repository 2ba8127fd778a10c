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
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    Index,
    TypeDecorator,
    false,
    func,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
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
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray)):
            return any(value)
        if isinstance(value, str):
            return value.strip().upper() in ("Y", "1", "T", "TRUE")
        return bool(value)

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _table(name: str, *columns, **kwargs) -> Table:
    return Table(name, metadata, *columns, **_MYSQL, **kwargs)


def _id(name: str) -> Column:
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
    Column("NAME", String(256), unique=True),  # nullable, as in Hive's scripts
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
    UniqueConstraint("PART_NAME", "TBL_ID", name="UNIQUEPARTITION"),
    Index("PARTITIONS_N49", "TBL_ID"),
)

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


def _stats_columns() -> list[Column]:
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
    Index("TAB_COL_STATS_IDX", "TBL_ID", "COLUMN_NAME", mysql_length={"COLUMN_NAME": 255}),
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
    Index("PCS_STATS_IDX", "PART_ID", "COLUMN_NAME", mysql_length={"COLUMN_NAME": 255}),
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
    Index("NOTIFICATION_LOG_TABLE", "DB_NAME", "TBL_NAME", "EVENT_ID"),
)

NOTIFICATION_SEQUENCE = _table(
    "NOTIFICATION_SEQUENCE",
    _id("NNI_ID"),
    Column("NEXT_EVENT_ID", BigInteger, nullable=False),
)

# ---- transactions, write ids and locks (Hive's TxnHandler tables) ------------------------------------

TXNS = _table(
    "TXNS",
    _id("TXN_ID"),
    Column("TXN_STATE", CHAR(1), nullable=False),          # o = open, a = aborted (committed rows are deleted)
    Column("TXN_STARTED", BigInteger, nullable=False),
    Column("TXN_LAST_HEARTBEAT", BigInteger, nullable=False),
    Column("TXN_USER", String(128), nullable=False),
    Column("TXN_HOST", String(128), nullable=False),
    Column("TXN_AGENT_INFO", String(128)),
    Column("TXN_META_INFO", String(128)),
    Column("TXN_HEARTBEAT_COUNT", Integer),
    Column("TXN_TYPE", Integer),
)

NEXT_TXN_ID = _table("NEXT_TXN_ID", Column("NTXN_NEXT", BigInteger, primary_key=True, autoincrement=False))

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
    Index("TBL_TO_TXN_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_TXNID"),
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
