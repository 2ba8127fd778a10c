"""The tables of Hive 4.0.0's schema that hmsproxy creates but does not read or write (privileges, compaction,
replication, constraints, workload management, materialized views, scheduled queries, ...), with their keys.

They are created as Hive's script creates them, column for column, so that a schema hmsproxy creates is one Hive's
own tools (schematool, a Java HMS) can work with. Types as Hive declares them on MySQL and PostgreSQL; primary keys
as Hive's, but no secondary indexes beyond the keys below. Apart from schema.py, so that it shows only the tables
hmsproxy uses; they share its MetaData, and HIVE_SCHEMA below is the whole schema (what is created, validated and
upgraded).
"""
from __future__ import annotations

from sqlalchemy import (
    CHAR,
    BigInteger,
    Boolean,
    Column,
    Float,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Text,
    text,
)
from sqlalchemy.dialects import mysql

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.schema import HiveFlag, HiveInt, LongText, MediumText, hive_table

# A binary that Hive's MySQL script declares varbinary(2048), PostgreSQL bytea (compaction META_INFO).
MetaInfo = LargeBinary().with_variant(mysql.VARBINARY(2048), "mysql", "mariadb")
# A flag Hive declares bit(1) on MySQL but smallint on PostgreSQL (WM_TRIGGER.IS_IN_UNMANAGED).
SMALLINT_OR_BIT = SmallInteger().with_variant(mysql.BIT(1), "mysql", "mariadb")

AUX_TABLE = hive_table(
    "AUX_TABLE",
    Column("MT_KEY1", String(128), nullable=False),
    Column("MT_KEY2", BigInteger, nullable=False),
    Column("MT_COMMENT", String(255)),
    PrimaryKeyConstraint("MT_KEY1", "MT_KEY2"),
)

COMPACTION_METRICS_CACHE = hive_table(
    "COMPACTION_METRICS_CACHE",
    Column("CMC_DATABASE", String(128), nullable=False),
    Column("CMC_TABLE", String(256), nullable=False),
    Column("CMC_PARTITION", String(767)),
    Column("CMC_METRIC_TYPE", String(128), nullable=False),
    Column("CMC_METRIC_VALUE", Integer, nullable=False),
    Column("CMC_VERSION", Integer, nullable=False),
)

COMPACTION_QUEUE = hive_table(
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

COMPLETED_COMPACTIONS = hive_table(
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

DATACONNECTORS = hive_table(
    "DATACONNECTORS",
    Column("NAME", String(128), primary_key=True),
    Column("TYPE", String(32), nullable=False),
    Column("URL", String(4000), nullable=False),
    Column("COMMENT", String(256)),
    Column("OWNER_NAME", String(256)),
    Column("OWNER_TYPE", String(10)),
    Column("CREATE_TIME", Integer, nullable=False),
)

DATACONNECTOR_PARAMS = hive_table(
    "DATACONNECTOR_PARAMS",
    Column("NAME", String(128), nullable=False),
    Column("PARAM_KEY", String(180), nullable=False),
    Column("PARAM_VALUE", String(4000)),
    PrimaryKeyConstraint("NAME", "PARAM_KEY"),
)

DB_PRIVS = hive_table(
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

DC_PRIVS = hive_table(
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

DELEGATION_TOKENS = hive_table(
    "DELEGATION_TOKENS",
    Column("TOKEN_IDENT", String(767), primary_key=True),
    Column("TOKEN", String(767)),
)

GLOBAL_PRIVS = hive_table(
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

I_SCHEMA = hive_table(
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

KEY_CONSTRAINTS = hive_table(
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

MASTER_KEYS = hive_table(
    "MASTER_KEYS",
    Column("KEY_ID", Integer, primary_key=True, autoincrement=False),
    Column("MASTER_KEY", String(767)),
)

MATERIALIZATION_REBUILD_LOCKS = hive_table(
    "MATERIALIZATION_REBUILD_LOCKS",
    Column("MRL_TXN_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("MRL_DB_NAME", String(128), nullable=False),
    Column("MRL_TBL_NAME", String(256), nullable=False),
    Column("MRL_LAST_HEARTBEAT", BigInteger, nullable=False),
)

METASTORE_DB_PROPERTIES = hive_table(
    "METASTORE_DB_PROPERTIES",
    Column("PROPERTY_KEY", String(255), primary_key=True),
    Column("PROPERTY_VALUE", String(1000), nullable=False),
    Column("DESCRIPTION", String(1000)),
    Column("PROPERTYCONTENT", LargeBinary),
)

MIN_HISTORY_LEVEL = hive_table(
    "MIN_HISTORY_LEVEL",
    Column("MHL_TXNID", BigInteger, primary_key=True, autoincrement=False),
    Column("MHL_MIN_OPEN_TXNID", BigInteger, nullable=False),
)

MIN_HISTORY_WRITE_ID = hive_table(
    "MIN_HISTORY_WRITE_ID",
    Column("MH_TXNID", BigInteger, nullable=False),
    Column("MH_DATABASE", String(128), nullable=False),
    Column("MH_TABLE", String(256), nullable=False),
    Column("MH_WRITEID", BigInteger, nullable=False),
)

MV_CREATION_METADATA = hive_table(
    "MV_CREATION_METADATA",
    Column("MV_CREATION_METADATA_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CAT_NAME", String(256), nullable=False),
    Column("DB_NAME", String(128), nullable=False),
    Column("TBL_NAME", String(256), nullable=False),
    Column("TXN_LIST", Text),
    Column("MATERIALIZATION_TIME", BigInteger, nullable=False),
)

MV_TABLES_USED = hive_table(
    "MV_TABLES_USED",
    Column("MV_CREATION_METADATA_ID", BigInteger, nullable=False),
    Column("TBL_ID", BigInteger, nullable=False),
    Column("INSERTED_COUNT", BigInteger, nullable=False, server_default=text('0')),
    Column("UPDATED_COUNT", BigInteger, nullable=False, server_default=text('0')),
    Column("DELETED_COUNT", BigInteger, nullable=False, server_default=text('0')),
    PrimaryKeyConstraint("TBL_ID", "MV_CREATION_METADATA_ID"),
)

NEXT_COMPACTION_QUEUE_ID = hive_table(
    "NEXT_COMPACTION_QUEUE_ID",
    Column("NCQ_NEXT", BigInteger, nullable=False),
)

NUCLEUS_TABLES = hive_table(
    "NUCLEUS_TABLES",
    Column("CLASS_NAME", String(128), primary_key=True),
    Column("TABLE_NAME", String(128), nullable=False),
    Column("TYPE", String(4), nullable=False),
    Column("OWNER", String(2), nullable=False),
    Column("VERSION", String(20), nullable=False),
    Column("INTERFACE_NAME", String(255)),
)

PACKAGES = hive_table(
    "PACKAGES",
    Column("PKG_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger, nullable=False),
    Column("NAME", String(256), nullable=False),
    Column("OWNER_NAME", String(128), nullable=False),
    Column("HEADER", LongText, nullable=False),
    Column("BODY", LongText, nullable=False),
)

PARTITION_EVENTS = hive_table(
    "PARTITION_EVENTS",
    Column("PART_NAME_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CAT_NAME", String(256)),
    Column("DB_NAME", String(128)),
    Column("EVENT_TIME", BigInteger, nullable=False),
    Column("EVENT_TYPE", Integer, nullable=False),
    Column("PARTITION_NAME", String(767)),
    Column("TBL_NAME", String(256)),
)

PART_COL_PRIVS = hive_table(
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

PART_PRIVS = hive_table(
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

REPLICATION_METRICS = hive_table(
    "REPLICATION_METRICS",
    Column("RM_SCHEDULED_EXECUTION_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RM_POLICY", String(256), nullable=False),
    Column("RM_DUMP_EXECUTION_ID", BigInteger, nullable=False),
    Column("RM_METADATA", String(4000)),
    Column("RM_PROGRESS", String(10000)),
    Column("RM_START_TIME", Integer, nullable=False),
    Column("MESSAGE_FORMAT", String(16), server_default=text("'json-0.2'")),
)

REPL_TXN_MAP = hive_table(
    "REPL_TXN_MAP",
    Column("RTM_REPL_POLICY", String(256), nullable=False),
    Column("RTM_SRC_TXN_ID", BigInteger, nullable=False),
    Column("RTM_TARGET_TXN_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("RTM_REPL_POLICY", "RTM_SRC_TXN_ID"),
)

ROLES = hive_table(
    "ROLES",
    Column("ROLE_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", HiveInt, nullable=False),
    Column("OWNER_NAME", String(128)),
    Column("ROLE_NAME", String(128)),
)

ROLE_MAP = hive_table(
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

RUNTIME_STATS = hive_table(
    "RUNTIME_STATS",
    Column("RS_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", BigInteger, nullable=False),
    Column("WEIGHT", BigInteger, nullable=False),
    Column("PAYLOAD", LargeBinary),
)

SCHEDULED_EXECUTIONS = hive_table(
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

SCHEDULED_QUERIES = hive_table(
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

SCHEMA_VERSIONS = hive_table(  # Hive's schema registry (I_SCHEMA versions), not our VERSION
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

STORED_PROCS = hive_table(
    "STORED_PROCS",
    Column("SP_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("CREATE_TIME", Integer, nullable=False),
    Column("DB_ID", BigInteger, nullable=False),
    Column("NAME", String(256), nullable=False),
    Column("OWNER_NAME", String(128), nullable=False),
    Column("SOURCE", LongText, nullable=False),
)

TBL_COL_PRIVS = hive_table(
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

TBL_PRIVS = hive_table(
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


TXN_WRITE_NOTIFICATION_LOG = hive_table(
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

TYPES = hive_table(
    "TYPES",
    Column("TYPES_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("TYPE_NAME", String(128)),
    Column("TYPE1", String(767)),
    Column("TYPE2", String(767)),
)

TYPE_FIELDS = hive_table(
    "TYPE_FIELDS",
    Column("TYPE_NAME", BigInteger, nullable=False),
    Column("COMMENT", String(256)),
    Column("FIELD_NAME", String(128), nullable=False),
    Column("FIELD_TYPE", String(767), nullable=False),
    Column("INTEGER_IDX", HiveInt, nullable=False),
    PrimaryKeyConstraint("TYPE_NAME", "FIELD_NAME"),
)

WM_MAPPING = hive_table(
    "WM_MAPPING",
    Column("MAPPING_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("ENTITY_TYPE", String(128), nullable=False),
    Column("ENTITY_NAME", String(128), nullable=False),
    Column("POOL_ID", BigInteger),
    Column("ORDERING", Integer),
)

WM_POOL = hive_table(
    "WM_POOL",
    Column("POOL_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("PATH", String(767).with_variant(String(1024), "postgresql"), nullable=False),
    Column("ALLOC_FRACTION", Float(53)),
    Column("QUERY_PARALLELISM", Integer),
    Column("SCHEDULING_POLICY", String(767).with_variant(String(1024), "postgresql")),
)

WM_POOL_TO_TRIGGER = hive_table(
    "WM_POOL_TO_TRIGGER",
    Column("POOL_ID", BigInteger, nullable=False),
    Column("TRIGGER_ID", BigInteger, nullable=False),
    PrimaryKeyConstraint("POOL_ID", "TRIGGER_ID"),
)

WM_RESOURCEPLAN = hive_table(
    "WM_RESOURCEPLAN",
    Column("RP_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("NAME", String(128), nullable=False),
    Column("NS", String(128)),
    Column("QUERY_PARALLELISM", Integer),
    Column("STATUS", String(20), nullable=False),
    Column("DEFAULT_POOL_ID", BigInteger),
)

WM_TRIGGER = hive_table(
    "WM_TRIGGER",
    Column("TRIGGER_ID", BigInteger, primary_key=True, autoincrement=False),
    Column("RP_ID", BigInteger, nullable=False),
    Column("NAME", String(128), nullable=False),
    Column("TRIGGER_EXPRESSION", String(1024)),
    Column("ACTION_EXPRESSION", String(1024)),
    Column("IS_IN_UNMANAGED", SMALLINT_OR_BIT, nullable=False),
)


# Hive's keys on these tables (schema.py's comment on Hive's keys says which are declared).
s.declare_keys([
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
    (I_SCHEMA, "UNIQUE_NAME", False, ("NAME",)),
    (SCHEMA_VERSIONS, "UNIQUE_VERSION", False, ("SCHEMA_ID", "VERSION")),
])

# Hive 4.0.0's whole schema as hmsproxy creates, validates and upgrades it: schema.py's tables and these, in one
# MetaData, so that its tables are ordered and created together.
HIVE_SCHEMA = s.metadata
