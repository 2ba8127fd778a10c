"""What Hive's own schema scripts of the versions served in place (3.1.0, 2.3.0) lack of Hive 4.0.0's layout
(schema.py, hive_only_tables.py): facts read from Hive's hive-schema scripts for MySQL and PostgreSQL, which agree
on them.
`schema validate` holds such a database to the rest of the layout; store/sql/layout.py serves what is there."""
from __future__ import annotations

from dataclasses import dataclass

from hmsproxy.store.sql import schema as s

HIVE_2_3, HIVE_3_1 = "2.3.0", "3.1.0"


@dataclass(frozen=True)
class Lacks:
    """What an older Hive's own schema script lacks of Hive 4.0.0's layout."""

    tables: frozenset[str]
    columns: dict[str, tuple[str, ...]]
    keys: frozenset[tuple[str, str]]  # (table, key name as schema.py declares it)
    rows: frozenset[str] = frozenset()  # counter tables left empty, their row added by the first writer

    def column(self, table: str, column: str) -> bool:
        return table in self.tables or column in self.columns.get(table, ())


HIVE_3_1_LACKS = Lacks(
    tables=frozenset({"COMPACTION_METRICS_CACHE", "DATACONNECTORS", "DATACONNECTOR_PARAMS", "DC_PRIVS",
                      "MIN_HISTORY_WRITE_ID", "PACKAGES", "REPLICATION_METRICS", "SCHEDULED_EXECUTIONS",
                      "SCHEDULED_QUERIES", "STORED_PROCS", "TXN_LOCK_TBL", "TXN_WRITE_NOTIFICATION_LOG"}),
    columns={
        "COMPACTION_QUEUE": ("CQ_ENQUEUE_TIME", "CQ_ERROR_MESSAGE", "CQ_NEXT_TXN_ID", "CQ_TXN_ID", "CQ_COMMIT_TIME",
                             "CQ_INITIATOR_ID", "CQ_INITIATOR_VERSION", "CQ_WORKER_VERSION", "CQ_CLEANER_START",
                             "CQ_RETRY_RETENTION", "CQ_POOL_NAME", "CQ_NUMBER_OF_BUCKETS", "CQ_ORDER_BY"),
        "COMPLETED_COMPACTIONS": ("CC_ENQUEUE_TIME", "CC_ERROR_MESSAGE", "CC_NEXT_TXN_ID", "CC_TXN_ID",
                                  "CC_COMMIT_TIME", "CC_INITIATOR_ID", "CC_INITIATOR_VERSION", "CC_WORKER_VERSION",
                                  "CC_POOL_NAME", "CC_NUMBER_OF_BUCKETS", "CC_ORDER_BY"),
        "CTLGS": ("CREATE_TIME",),
        "DBS": ("CREATE_TIME", "DB_MANAGED_LOCATION_URI", "TYPE", "DATACONNECTOR_NAME", "REMOTE_DBNAME"),
        "METASTORE_DB_PROPERTIES": ("PROPERTYCONTENT",),
        "MV_TABLES_USED": ("INSERTED_COUNT", "UPDATED_COUNT", "DELETED_COUNT"),
        "PARTITIONS": ("WRITE_ID",), "TBLS": ("WRITE_ID",),
        "PART_COL_STATS": ("HISTOGRAM", "ENGINE"), "TAB_COL_STATS": ("HISTOGRAM", "ENGINE"),
        "WM_RESOURCEPLAN": ("NS",),
    },
    keys=frozenset({("COMPLETED_COMPACTIONS", "COMPLETED_COMPACTIONS_RES"), ("KEY_CONSTRAINTS", "primary key"),
                    ("MV_TABLES_USED", "primary key"), ("NOTIFICATION_LOG", "NOTIFICATION_LOG_EVENT_ID"),
                    ("PART_COL_STATS", "PCS_STATS_IDX"), ("TAB_COL_STATS", "TAB_COL_STATS_IDX"),
                    ("WM_RESOURCEPLAN", "UNIQUE_WM_RESOURCEPLAN")}),
)
HIVE_2_3_LACKS = Lacks(
    tables=frozenset({"COMPACTION_METRICS_CACHE", "CTLGS", "DATACONNECTORS", "DATACONNECTOR_PARAMS", "DC_PRIVS",
                      "I_SCHEMA", "MATERIALIZATION_REBUILD_LOCKS", "METASTORE_DB_PROPERTIES", "MIN_HISTORY_LEVEL",
                      "MIN_HISTORY_WRITE_ID", "MV_CREATION_METADATA", "MV_TABLES_USED", "NEXT_WRITE_ID", "PACKAGES",
                      "REPLICATION_METRICS", "REPL_TXN_MAP", "RUNTIME_STATS", "SCHEDULED_EXECUTIONS",
                      "SCHEDULED_QUERIES", "SCHEMA_VERSION", "STORED_PROCS", "TXN_LOCK_TBL", "TXN_TO_WRITE_ID",
                      "TXN_WRITE_NOTIFICATION_LOG", "WM_MAPPING", "WM_POOL", "WM_POOL_TO_TRIGGER", "WM_RESOURCEPLAN",
                      "WM_TRIGGER"}),
    columns={
        "COMPACTION_QUEUE": ("CQ_HIGHEST_WRITE_ID", *HIVE_3_1_LACKS.columns["COMPACTION_QUEUE"]),
        "COMPLETED_COMPACTIONS": ("CC_HIGHEST_WRITE_ID", *HIVE_3_1_LACKS.columns["COMPLETED_COMPACTIONS"]),
        "COMPLETED_TXN_COMPONENTS": ("CTC_TIMESTAMP", "CTC_WRITEID", "CTC_UPDATE_DELETE"),
        "DBS": ("CTLG_NAME", *HIVE_3_1_LACKS.columns["DBS"]),
        "KEY_CONSTRAINTS": ("DEFAULT_VALUE",),
        "NOTIFICATION_LOG": ("CAT_NAME",), "PARTITION_EVENTS": ("CAT_NAME",),
        "PARTITIONS": ("WRITE_ID",), "TBLS": ("OWNER_TYPE", "WRITE_ID"),
        "PART_COL_STATS": ("CAT_NAME", "BIT_VECTOR", "HISTOGRAM", "ENGINE"),
        "TAB_COL_STATS": ("CAT_NAME", "BIT_VECTOR", "HISTOGRAM", "ENGINE"),
        "SERDES": ("DESCRIPTION", "SERIALIZER_CLASS", "DESERIALIZER_CLASS", "SERDE_TYPE"),
        "TXNS": ("TXN_TYPE",), "TXN_COMPONENTS": ("TC_WRITEID",),
        **{table: ("AUTHORIZER",) for table in ("DB_PRIVS", "GLOBAL_PRIVS", "PART_COL_PRIVS", "PART_PRIVS",
                                                "TBL_COL_PRIVS", "TBL_PRIVS")},
    },
    keys=frozenset({("COMPLETED_COMPACTIONS", "COMPLETED_COMPACTIONS_RES"),
                    ("COMPLETED_TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS_IDX"), ("DBS", "UNIQUE_DATABASE"),
                    ("DB_PRIVS", "DBPRIVILEGEINDEX"), ("GLOBAL_PRIVS", "GLOBALPRIVILEGEINDEX"),
                    ("KEY_CONSTRAINTS", "CONSTRAINTS_CONSTRAINT_TYPE_INDEX"), ("KEY_CONSTRAINTS", "primary key"),
                    ("NOTIFICATION_LOG", "NOTIFICATION_LOG_EVENT_ID"),
                    ("PART_COL_PRIVS", "PARTITIONCOLUMNPRIVILEGEINDEX"), ("PART_PRIVS", "PARTPRIVILEGEINDEX"),
                    ("TAB_COL_STATS", "TAB_COL_STATS_IDX"), ("TBL_COL_PRIVS", "TABLECOLUMNPRIVILEGEINDEX"),
                    ("TBL_PRIVS", "TABLEPRIVILEGEINDEX")}),
    rows=frozenset({"NOTIFICATION_SEQUENCE"}),  # `serve` adds it (database.init_schema), as the Java HMS would
)
NOTHING_LACKING = Lacks(frozenset(), {}, frozenset())
# Per schema version served in place.
LACKS = {s.SCHEMA_VERSION: NOTHING_LACKING, HIVE_3_1: HIVE_3_1_LACKS, HIVE_2_3: HIVE_2_3_LACKS}
SERVED_VERSIONS = f"{s.SCHEMA_VERSION}, {HIVE_3_1} or {HIVE_2_3}"
