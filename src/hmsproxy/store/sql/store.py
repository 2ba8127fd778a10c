"""SqlStore: the RawStore on a relational database with the Hive metastore schema."""
from __future__ import annotations

from dataclasses import dataclass

from hmsproxy.store.domain import Kept, LockOutcome
from hmsproxy.store.reader import Reader
from hmsproxy.store.sql.bundles import BundleStore
from hmsproxy.store.sql.combiner import Combiner
from hmsproxy.store.sql.database import Database, retried
from hmsproxy.store.sql.databases import DatabaseStore
from hmsproxy.store.sql.functions import FunctionStore
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lock_waits import LockReleases
from hmsproxy.store.sql.locks import PendingLock
from hmsproxy.store.sql.notifications import NotificationStore
from hmsproxy.store.sql.partitions import PartitionStore
from hmsproxy.store.sql.remembered_tables import RememberedTables
from hmsproxy.store.sql.statistics import StatisticsStore
from hmsproxy.store.sql.tables import TableStore
from hmsproxy.store.sql.transactions import TransactionStore
from hmsproxy.store.sql.txn_ids import txn_ids_for


class SqlStore(BundleStore, DatabaseStore, TableStore, PartitionStore, FunctionStore, StatisticsStore,
               TransactionStore, NotificationStore):
    """Every method is one database transaction; objects in and out are the IDL's types."""

    def __init__(self, db: Database, *, txn_timeout_ms: int = TransactionStore.txn_timeout_ms,
                 check_lock_wait_s: float = TransactionStore.check_lock_wait_s) -> None:
        self.db = db
        self.txn_timeout_ms = txn_timeout_ms
        self.check_lock_wait_s = check_lock_wait_s
        self.remembered_tables = RememberedTables()
        db.adopt(Layout.read(db.engine))
        self.layout = db.layout
        self.txn_ids = txn_ids_for(self.layout)
        self.lock_releases = LockReleases()
        self.lock_requests: Combiner[PendingLock, LockOutcome] = Combiner(self._lock_batch)

    # Each call below is one or more whole database transactions, repeated whole when the database fails it with a
    # conflict (database.py). Not the bundle read (get_table_bundle): its partitions stream into the caller's
    # sink, which a repeat would fill twice. Not lock: its batches (several callers' requests in one
    # transaction) are repeated whole instead. Not kept, serving and close: they read no database.
    # TransactionStore
    abort_txns = retried(TransactionStore.abort_txns)
    allocate_write_ids = retried(TransactionStore.allocate_write_ids)
    check_lock = retried(TransactionStore.check_lock)
    commit_txn = retried(TransactionStore.commit_txn)
    current_txn_list = retried(TransactionStore.current_txn_list)
    get_open_txns = retried(TransactionStore.get_open_txns)
    heartbeat = retried(TransactionStore.heartbeat)
    heartbeat_txn_range = retried(TransactionStore.heartbeat_txn_range)
    open_txns = retried(TransactionStore.open_txns)
    reap_expired = retried(TransactionStore.reap_expired)
    show_locks = retried(TransactionStore.show_locks)
    txn_writes = retried(TransactionStore.txn_writes)
    unlock = retried(TransactionStore.unlock)
    valid_write_ids = retried(TransactionStore.valid_write_ids)
    # NotificationStore
    add_events = retried(NotificationStore.add_events)
    clean_events = retried(NotificationStore.clean_events)
    count_events = retried(NotificationStore.count_events)
    current_event_id = retried(NotificationStore.current_event_id)
    get_events = retried(NotificationStore.get_events)
    oldest_event_id = retried(NotificationStore.oldest_event_id)
    table_version = retried(NotificationStore.table_version)
    # PartitionStore
    add_partitions = retried(PartitionStore.add_partitions)
    alter_partitions = retried(PartitionStore.alter_partitions)
    drop_partitions = retried(PartitionStore.drop_partitions)
    get_partition = retried(PartitionStore.get_partition)
    get_partition_batch = retried(PartitionStore.get_partition_batch)
    get_partition_names = retried(PartitionStore.get_partition_names)
    get_partition_names_by_filter = retried(PartitionStore.get_partition_names_by_filter)
    get_partition_values = retried(PartitionStore.get_partition_values)
    get_partitions = retried(PartitionStore.get_partitions)
    get_partitions_by_names = retried(PartitionStore.get_partitions_by_names)
    rename_partition = retried(PartitionStore.rename_partition)
    # DatabaseStore
    alter_database = retried(DatabaseStore.alter_database)
    create_database = retried(DatabaseStore.create_database)
    drop_database = retried(DatabaseStore.drop_database)
    get_catalog = retried(DatabaseStore.get_catalog)
    get_catalog_names = retried(DatabaseStore.get_catalog_names)
    get_database = retried(DatabaseStore.get_database)
    get_database_names = retried(DatabaseStore.get_database_names)
    # FunctionStore
    alter_function = retried(FunctionStore.alter_function)
    create_function = retried(FunctionStore.create_function)
    drop_function = retried(FunctionStore.drop_function)
    get_function = retried(FunctionStore.get_function)
    get_functions = retried(FunctionStore.get_functions)
    # TableStore
    alter_table = retried(TableStore.alter_table)
    alter_tables = retried(TableStore.alter_tables)
    create_table = retried(TableStore.create_table)
    drop_table = retried(TableStore.drop_table)
    get_table = retried(TableStore.get_table)
    get_table_meta = retried(TableStore.get_table_meta)
    get_table_names = retried(TableStore.get_table_names)
    get_table_objects = retried(TableStore.get_table_objects)
    # StatisticsStore
    delete_partition_column_statistics = retried(StatisticsStore.delete_partition_column_statistics)
    delete_table_column_statistics = retried(StatisticsStore.delete_table_column_statistics)
    get_partition_column_statistics = retried(StatisticsStore.get_partition_column_statistics)
    get_table_column_statistics = retried(StatisticsStore.get_table_column_statistics)
    statistics_analyzed_at = retried(StatisticsStore.statistics_analyzed_at)
    update_partition_column_statistics = retried(StatisticsStore.update_partition_column_statistics)
    update_table_column_statistics = retried(StatisticsStore.update_table_column_statistics)
    # BundleStore
    get_table_bundles = retried(BundleStore.get_table_bundles)
    partition_counts = retried(BundleStore.partition_counts)

    @property
    def keeps_write_ids(self) -> bool:
        return self.layout.write_ids

    def kept(self, obj: Kept) -> Kept:
        return self.layout.forget(obj)

    def serving(self, reader: Reader) -> SqlStore:
        return self

    def close(self) -> None:
        self.db.dispose()


@dataclass(frozen=True)
class DatabaseAccess:
    """What another process (a prewarm worker) needs to open the server's database as the server did."""

    url: str
    added_latency_ms: float = 0.0
    connect_timeout_s: float = 10.0
    statement_timeout_s: float = 60.0

    def open(self) -> SqlStore:
        db = Database(self.url, pool_size=1, added_latency_ms=self.added_latency_ms,
                      connect_timeout_s=self.connect_timeout_s, statement_timeout_s=self.statement_timeout_s)
        return SqlStore(db)
