"""SQLAlchemy Core tables of the Hive metastore schema that hmsproxy reads and writes (Hive 3.1/4.x names); Hive's
other tables, which it only creates, are in hive_only_tables.py.

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
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    func,
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

    def process_bind_param(self, value: object, dialect: Dialect) -> bool | None:
        return None if value is None else bool(value)

    def process_result_value(self, value: object, dialect: Dialect) -> bool | None:
        return hive_flag(value)


def hive_flag(value: object) -> bool | None:
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


def hive_table(name: str, *columns: SchemaItem, **kwargs: Any) -> Table:
    return Table(name, metadata, *columns, **_MYSQL, **kwargs)


def id_column(name: str) -> Column[int]:
    return Column(name, BigInteger, primary_key=True, autoincrement=False)


VERSION = hive_table(
    "VERSION",
    id_column("VER_ID"),
    Column("SCHEMA_VERSION", String(127), nullable=False),
    Column("VERSION_COMMENT", String(255)),
)

SEQUENCE_TABLE = hive_table(
    "SEQUENCE_TABLE",
    Column("SEQUENCE_NAME", String(255), primary_key=True),
    Column("NEXT_VAL", BigInteger, nullable=False),
)

CTLGS = hive_table(
    "CTLGS",
    id_column("CTLG_ID"),
    Column("NAME", String(256)),  # nullable, as in Hive's scripts
    Column("DESC", String(4000)),
    Column("LOCATION_URI", String(4000), nullable=False),
    Column("CREATE_TIME", HiveInt),
)

DBS = hive_table(
    "DBS",
    id_column("DB_ID"),
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

DATABASE_PARAMS = hive_table(
    "DATABASE_PARAMS",
    Column("DB_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("DB_ID", "PARAM_KEY"),
)

SERDES = hive_table(
    "SERDES",
    id_column("SERDE_ID"),
    Column("NAME", String(128)),
    Column("SLIB", String(4000)),
    Column("DESCRIPTION", String(4000)),
    Column("SERIALIZER_CLASS", String(4000)),
    Column("DESERIALIZER_CLASS", String(4000)),
    Column("SERDE_TYPE", Integer),
)

SERDE_PARAMS = hive_table(
    "SERDE_PARAMS",
    Column("SERDE_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("SERDE_ID", "PARAM_KEY"),
)

CDS = hive_table("CDS", id_column("CD_ID"))

COLUMNS_V2 = hive_table(
    "COLUMNS_V2",
    Column("CD_ID", BigInteger, nullable=False),
    Column("COMMENT", String(4000)),
    Column("COLUMN_NAME", String(700).with_variant(String(767), "postgresql"), nullable=False),  # 700: a utf8mb4 key
    Column("TYPE_NAME", MediumText),
    Column("INTEGER_IDX", Integer, nullable=False),
    PrimaryKeyConstraint("CD_ID", "COLUMN_NAME"),
)

SDS = hive_table(
    "SDS",
    id_column("SD_ID"),
    Column("CD_ID", BigInteger),
    Column("INPUT_FORMAT", String(4000)),
    Column("IS_COMPRESSED", HiveFlag, nullable=False),
    Column("IS_STOREDASSUBDIRECTORIES", HiveFlag, nullable=False),
    Column("LOCATION", String(4000)),
    Column("NUM_BUCKETS", HiveInt, nullable=False),
    Column("OUTPUT_FORMAT", String(4000)),
    Column("SERDE_ID", BigInteger),
)

SD_PARAMS = hive_table(
    "SD_PARAMS",
    Column("SD_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("SD_ID", "PARAM_KEY"),
)

BUCKETING_COLS = hive_table(
    "BUCKETING_COLS",
    Column("SD_ID", BigInteger, nullable=False),
    Column("BUCKET_COL_NAME", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

SORT_COLS = hive_table(
    "SORT_COLS",
    Column("SD_ID", BigInteger, nullable=False),
    Column("COLUMN_NAME", String(767)),
    Column("ORDER", HiveInt, nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

SKEWED_STRING_LIST = hive_table("SKEWED_STRING_LIST", id_column("STRING_LIST_ID"))

SKEWED_STRING_LIST_VALUES = hive_table(
    "SKEWED_STRING_LIST_VALUES",
    Column("STRING_LIST_ID", BigInteger, nullable=False),
    Column("STRING_LIST_VALUE", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("STRING_LIST_ID", "INTEGER_IDX"),
)

SKEWED_COL_NAMES = hive_table(
    "SKEWED_COL_NAMES",
    Column("SD_ID", BigInteger, nullable=False),
    Column("SKEWED_COL_NAME", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID", "INTEGER_IDX"),
)

SKEWED_VALUES = hive_table(
    "SKEWED_VALUES",
    Column("SD_ID_OID", BigInteger, nullable=False),
    Column("STRING_LIST_ID_EID", BigInteger, nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("SD_ID_OID", "INTEGER_IDX"),
)

SKEWED_COL_VALUE_LOC_MAP = hive_table(
    "SKEWED_COL_VALUE_LOC_MAP",
    Column("SD_ID", BigInteger, nullable=False),
    Column("STRING_LIST_ID_KID", BigInteger, nullable=False),
    Column("LOCATION", String(4000)),
    PrimaryKeyConstraint("SD_ID", "STRING_LIST_ID_KID"),
)

TBLS = hive_table(
    "TBLS",
    id_column("TBL_ID"),
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

TABLE_PARAMS = hive_table(
    "TABLE_PARAMS",
    Column("TBL_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("TBL_ID", "PARAM_KEY"),
)

PARTITION_KEYS = hive_table(
    "PARTITION_KEYS",
    Column("TBL_ID", BigInteger, nullable=False),
    Column("PKEY_COMMENT", String(4000)),
    Column("PKEY_NAME", String(128), nullable=False),
    Column("PKEY_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("TBL_ID", "PKEY_NAME"),
)

PARTITIONS = hive_table(
    "PARTITIONS",
    id_column("PART_ID"),
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

PARTITION_KEY_VALS = hive_table(
    "PARTITION_KEY_VALS",
    Column("PART_ID", BigInteger, nullable=False),
    Column("PART_KEY_VAL", String(256)),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("PART_ID", "INTEGER_IDX"),
)

PARTITION_PARAMS = hive_table(
    "PARTITION_PARAMS",
    Column("PART_ID", BigInteger, nullable=False),
    Column("PARAM_KEY", String(256), nullable=False),
    Column("PARAM_VALUE", MediumText),
    PrimaryKeyConstraint("PART_ID", "PARAM_KEY"),
)

FUNCS = hive_table(
    "FUNCS",
    id_column("FUNC_ID"),
    Column("CLASS_NAME", String(4000)),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger),
    Column("FUNC_NAME", String(128)),
    Column("FUNC_TYPE", Integer, nullable=False),
    Column("OWNER_NAME", String(128)),
    Column("OWNER_TYPE", String(10)),
    UniqueConstraint("FUNC_NAME", "DB_ID", name="UNIQUEFUNCTION"),
)

FUNC_RU = hive_table(
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


TAB_COL_STATS = hive_table(
    "TAB_COL_STATS",
    id_column("CS_ID"),
    Column("CAT_NAME", String(256), nullable=False, server_default="hive"),
    Column("DB_NAME", String(128), nullable=False),
    Column("TABLE_NAME", String(256), nullable=False),
    Column("COLUMN_NAME", String(767), nullable=False),
    Column("COLUMN_TYPE", String(128), nullable=False),
    Column("TBL_ID", BigInteger, nullable=False),
    *_stats_columns(),
    Index("TAB_COL_STATS_TBL_ID_IDX", "TBL_ID", "COLUMN_NAME", mysql_length={"COLUMN_NAME": 255}),  # OWN_KEYS
)

PART_COL_STATS = hive_table(
    "PART_COL_STATS",
    id_column("CS_ID"),
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

NOTIFICATION_LOG = hive_table(
    "NOTIFICATION_LOG",
    id_column("NL_ID"),
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

NOTIFICATION_SEQUENCE = hive_table(
    "NOTIFICATION_SEQUENCE",
    id_column("NNI_ID"),
    Column("NEXT_EVENT_ID", BigInteger, nullable=False),
)

# ---- transactions, write ids and locks (Hive's TxnHandler tables) ------------------------------------

TXNS = hive_table(  # Hive 4: the database numbers transactions (txn_ids.py); SQLite's rowid needs INTEGER
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

TXN_COMPONENTS = hive_table(
    "TXN_COMPONENTS",
    Column("TC_TXNID", BigInteger, nullable=False),
    Column("TC_DATABASE", String(128), nullable=False),
    Column("TC_TABLE", String(256)),
    Column("TC_PARTITION", String(767)),
    Column("TC_OPERATION_TYPE", CHAR(1), nullable=False),
    Column("TC_WRITEID", BigInteger),
    Index("TC_TXNID_INDEX", "TC_TXNID"),
)

COMPLETED_TXN_COMPONENTS = hive_table(
    "COMPLETED_TXN_COMPONENTS",
    Column("CTC_TXNID", BigInteger, nullable=False),
    Column("CTC_DATABASE", String(128), nullable=False),
    Column("CTC_TABLE", String(256)),
    Column("CTC_PARTITION", String(767)),
    Column("CTC_TIMESTAMP", TIMESTAMP, nullable=False, server_default=func.current_timestamp()),  # the commit time
    Column("CTC_WRITEID", BigInteger),
    Column("CTC_UPDATE_DELETE", CHAR(1), nullable=False),
)

WRITE_SET = hive_table(  # update/delete components of committed transactions, for write-conflict checks
    "WRITE_SET",
    Column("WS_DATABASE", String(128), nullable=False),
    Column("WS_TABLE", String(256), nullable=False),
    Column("WS_PARTITION", String(767)),
    Column("WS_TXNID", BigInteger, nullable=False),
    Column("WS_COMMIT_ID", BigInteger, nullable=False),
    Column("WS_OPERATION_TYPE", CHAR(1), nullable=False),
)

TXN_TO_WRITE_ID = hive_table(
    "TXN_TO_WRITE_ID",
    Column("T2W_TXNID", BigInteger, nullable=False),
    Column("T2W_DATABASE", String(128), nullable=False),
    Column("T2W_TABLE", String(256), nullable=False),
    Column("T2W_WRITEID", BigInteger, nullable=False),
    Index("TBL_TO_TXN_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_TXNID", unique=True),
    Index("TBL_TO_WRITE_ID_IDX", "T2W_DATABASE", "T2W_TABLE", "T2W_WRITEID", unique=True),
)

NEXT_WRITE_ID = hive_table(
    "NEXT_WRITE_ID",
    Column("NWI_DATABASE", String(128), nullable=False),
    Column("NWI_TABLE", String(256), nullable=False),
    Column("NWI_NEXT", BigInteger, nullable=False),
    PrimaryKeyConstraint("NWI_DATABASE", "NWI_TABLE"),
)

HIVE_LOCKS = hive_table(
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

NEXT_LOCK_ID = hive_table("NEXT_LOCK_ID", Column("NL_NEXT", BigInteger, primary_key=True, autoincrement=False))

# Hive 4's mutex for handing out transaction ids (txn_ids.py)
TXN_LOCK_TBL = hive_table(
    "TXN_LOCK_TBL",
    Column("TXN_LOCK", BigInteger, nullable=False),
)


# ---- Hive's other keys on these tables, as its scripts declare them (hive_only_tables.py: those on its tables) --
# Unique keys keep Hive's rules (one role of a name, one pool per path...) for any tool writing these tables.
# Of Hive's plain indexes, those its features look rows up by; the ones that only back a foreign key (*_N49,
# *_N50: hmsproxy declares no foreign keys) are left out, but for the two hmsproxy's listings use.
_HIVE_KEYS: list[tuple[Table, str, bool, tuple[str, ...]]] = [
    (CTLGS, "UNIQUE_CATALOG", True, ("NAME",)),
    (TBLS, "TBLS_N49", False, ("DB_ID",)),
    (TAB_COL_STATS, "TAB_COL_STATS_IDX", False, ("DB_NAME", "TABLE_NAME", "COLUMN_NAME", "CAT_NAME")),
    (PART_COL_STATS, "PCS_STATS_IDX", False, ("DB_NAME", "TABLE_NAME", "COLUMN_NAME", "PARTITION_NAME", "CAT_NAME")),
    (FUNCS, "FUNCS_N49", False, ("DB_ID",)),
    (COMPLETED_TXN_COMPONENTS, "COMPLETED_TXN_COMPONENTS_IDX", False, ("CTC_DATABASE", "CTC_TABLE", "CTC_PARTITION")),
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


def declare_keys(keys: list[tuple[Table, str, bool, tuple[str, ...]]]) -> None:
    """Declares keys as Hive's scripts do (table, name, unique, columns), a plain one over long text with the
    prefixes that fit it into an InnoDB key."""
    for keyed, name, unique, columns in keys:
        Index(name, *(keyed.c[column] for column in columns), unique=unique,
              mysql_length={} if unique else _mysql_prefixes(keyed, columns))


declare_keys(_HIVE_KEYS)

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
