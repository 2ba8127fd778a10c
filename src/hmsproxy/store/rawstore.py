"""The store interface, in three parts shaped by the metastore's domain: its metadata, its transactions and
locks, and its notification log. A RawStore offers all three to the handler.

SqlStore implements them on the database; the cache implements them by wrapping another RawStore, so the
handler never knows which one it has. Values in and out are the IDL's objects and store/domain.py's; an
object a store returns is shared and read-only (copy it before changing it). Each write is one database
transaction.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from hmsproxy.events.journal import Journal
from hmsproxy.events.messages import Event
from hmsproxy.hive.partition_filter import PartitionFilter
from hmsproxy.hive.write_ids import ValidTxnList, ValidWriteIdList
from hmsproxy.store.domain import (
    Catalog,
    ColumnStatistics,
    ColumnStatisticsObj,
    Database,
    DroppedTable,
    Function,
    Kept,
    LockComponent,
    LockOutcome,
    NotificationEvent,
    Partition,
    PartitionBatch,
    PartitionSink,
    ShowLocksResponseElement,
    Table,
    TableBundle,
    TableMeta,
    TableWrite,
    TxnInfo,
)
from hmsproxy.store.reader import Reader
from hmsproxy.store.ready import Held, Ready


class MetadataStore(Protocol):
    """Catalogs, databases, tables, partitions, functions and column statistics."""

    @property
    def keeps_write_ids(self) -> bool:
        """False on a schema from before Hive 3: its transactional tables have no write ids."""

    def kept(self, obj: Kept) -> Kept:
        """The object (as written) with the fields this store does not record reset, as reading it back gives
        them: an older Hive schema has no place for some (store/sql/layout.py)."""

    # catalogs and databases
    def get_catalog(self, name: str) -> Catalog: ...
    def get_catalog_names(self) -> list[str]: ...
    def create_database(self, database: Database, journal: Journal | None = None) -> None: ...
    def get_database(self, cat: str, name: str) -> Database: ...
    def get_database_names(self, cat: str) -> list[str]: ...
    def alter_database(self, cat: str, name: str, database: Database, journal: Journal | None = None) -> None: ...
    def drop_database(self, cat: str, name: str, cascade: bool,
                      journal: Journal | None = None) -> list[DroppedTable]: ...

    # tables
    def create_table(self, table: Table, journal: Journal | None = None) -> int: ...
    def get_table(self, cat: str, db_name: str, tbl_name: str) -> Table: ...
    def encoded_table(self, reader: Reader, cat: str, db_name: str, tbl_name: str) -> Ready | None:
        """The table's Thrift bytes when the store holds them ready for `reader` (a cache hit), else None: the
        caller then asks get_table. Never a database round trip; asked of the store itself, not of a serving view
        (the hot path of the commonest call makes no view)."""
    def ready_again(self, reader: Reader, held: Held) -> bool:
        """Whether bytes encoded_table gave, with `held`, are still the table's: they may be given `reader` again,
        counted as the cache hit they are."""
    def get_table_objects(self, cat: str, db_name: str, tbl_names: Sequence[str]) -> list[Table]: ...
    def get_table_names(self, cat: str, db_name: str, table_type: str | None = None) -> list[str]: ...
    def get_table_meta(self, cat: str) -> list[TableMeta]: ...
    def alter_table(self, cat: str, db_name: str, tbl_name: str, new_table: Table,
                    partition_location_moves: tuple[str, str] | None = None, cascade: bool = False,
                    expected_parameter: tuple[str, str] | None = None, journal: Journal | None = None) -> None: ...
    def drop_table(self, cat: str, db_name: str, tbl_name: str, journal: Journal | None = None) -> DroppedTable: ...
    def get_table_bundle(self, cat: str, db_name: str, tbl_name: str,
                         partition_sink: PartitionSink | None = None) -> TableBundle:
        """With a sink, the partitions go to it as (table, chunk, ids) and the bundle's list stays empty."""
    def get_table_bundles(self, cat: str, tables: Sequence[tuple[str, str]]) -> list[TableBundle]:
        """Bundles of many small tables, (database, table) each, read together; missing tables are left out."""
    def partition_counts(self, cat: str) -> dict[tuple[str, str], int] | None:
        """(database, table) -> partitions (tables with none left out), for grouping loads; None when the store
        cannot count cheaply."""

    # partitions
    def add_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[Partition],
                       if_not_exists: bool = False, journal: Journal | None = None) -> list[Partition]: ...
    def alter_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[Partition],
                         journal: Journal | None = None) -> None: ...
    def rename_partition(self, cat: str, db_name: str, tbl_name: str, old_values: Sequence[str],
                         part: Partition, journal: Journal | None = None) -> None: ...
    def drop_partitions(self, cat: str, db_name: str, tbl_name: str, names: Sequence[str],
                        if_exists: bool = False, journal: Journal | None = None) -> list[Partition]: ...
    def get_partitions(self, cat: str, db_name: str, tbl_name: str, max_parts: int = -1) -> Sequence[Partition]: ...
    def get_partitions_by_names(self, cat: str, db_name: str, tbl_name: str,
                                names: Sequence[str]) -> list[Partition]: ...
    def get_partition(self, cat: str, db_name: str, tbl_name: str, values: Sequence[str]) -> Partition: ...
    def get_partition_names(self, cat: str, db_name: str, tbl_name: str) -> list[str]: ...
    def get_partition_values(self, cat: str, db_name: str, tbl_name: str) -> list[tuple[str, list[str]]]: ...
    def get_partition_names_by_filter(self, cat: str, db_name: str, tbl_name: str,
                                      partition_filter: PartitionFilter) -> list[str]:
        """The names of the partitions the filter matches, sorted."""
    def encoded_partitions_by_filter(self, reader: Reader, cat: str, db_name: str, tbl_name: str, filter_text: str,
                                     max_parts: int, at_most: int) -> Ready | None:
        """get_partitions_by_filter's answer (the first `max_parts` matches, all where negative) as Thrift bytes, when
        the store selects them from what it holds ready for `reader` (a cache hit) and they are few; else None, also
        for a filter that does not compile or more than `at_most` partitions (where not negative): the caller then
        asks the ordinary way, which decides. Never a database round trip; asked of the store itself."""
    def get_partition_batch(self, cat: str, db_name: str, tbl_name: str, from_id: int, to_id: int, size: int,
                            predicate: Callable[[Sequence[str]], bool] | None, names_only: bool) -> PartitionBatch:
        ...

    # functions
    def create_function(self, function: Function, journal: Journal | None = None) -> None: ...
    def get_function(self, cat: str, db_name: str, name: str) -> Function: ...
    def get_functions(self, cat: str, db_name: str | None = None) -> list[Function]: ...
    def alter_function(self, cat: str, db_name: str, name: str, function: Function,
                       journal: Journal | None = None) -> None: ...
    def drop_function(self, cat: str, db_name: str, name: str, journal: Journal | None = None) -> None: ...

    # column statistics
    def update_table_column_statistics(self, cat: str, stats: ColumnStatistics,
                                       journal: Journal | None = None) -> None: ...
    def update_partition_column_statistics(self, cat: str, stats: ColumnStatistics, values: Sequence[str],
                                           journal: Journal | None = None) -> None:
        ...
    def get_table_column_statistics(self, cat: str, db_name: str, tbl_name: str,
                                    col_names: Sequence[str]) -> list[ColumnStatisticsObj]: ...
    def get_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_names: Sequence[str],
                                        col_names: Sequence[str]) -> dict[str, list[ColumnStatisticsObj]]: ...
    def statistics_analyzed_at(self, cat: str, db_name: str, tbl_name: str, part_name: str | None,
                               col_name: str) -> int | None: ...
    def delete_table_column_statistics(self, cat: str, db_name: str, tbl_name: str, col_name: str | None,
                                       journal: Journal | None = None) -> None: ...
    def delete_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_name: str,
                                           col_name: str | None, journal: Journal | None = None) -> None: ...


class TxnStore(Protocol):
    """Transactions, table write ids and locks, with Hive's semantics (txn/)."""

    def open_txns(self, count: int, user: str, host: str, agent: str | None, txn_type: int | None) -> list[int]: ...
    def commit_txn(self, txn_id: int) -> list[TableWrite]: ...
    def abort_txns(self, txn_ids: Sequence[int], skip_unknown: bool = False) -> list[TableWrite]: ...
    def txn_writes(self, txn_id: int) -> list[TableWrite]: ...
    def get_open_txns(self) -> tuple[int, list[TxnInfo]]:
        """(high watermark, the open and aborted transactions below it, by id)."""
    def current_txn_list(self) -> ValidTxnList: ...
    def allocate_write_ids(self, db_name: str, table: str, txn_ids: Sequence[int],
                           journal: Journal | None = None) -> list[tuple[int, int]]: ...
    def valid_write_ids(self, full_names: Sequence[str], snapshot: ValidTxnList | None) -> list[ValidWriteIdList]:
        ...
    def lock(self, components: Sequence[LockComponent], txn_id: int | None, user: str, host: str,
             agent: str | None) -> LockOutcome: ...
    def check_lock(self, lock_id: int) -> LockOutcome: ...
    def unlock(self, lock_id: int) -> None: ...
    def show_locks(self, db_name: str | None, table: str | None, partition: str | None,
                   txn_id: int | None) -> list[ShowLocksResponseElement]:
        """The lock components, in Hive's order (acquired first, least restrictive type first, then by id)."""
    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None: ...
    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]: ...
    def reap_expired(self) -> list[TableWrite]:
        """Aborts transactions and releases locks past the timeout; returns the aborted transactions' writes."""


class EventLog(Protocol):
    """The notification log: what other instances, caches and replication tools follow."""

    def get_events(self, after: int, limit: int | None = None, *, skip_types: Sequence[str] = (),
                   cat: str | None = None, db: str | None = None,
                   tables: Sequence[str] | None = None) -> list[NotificationEvent]: ...
    def current_event_id(self) -> int: ...
    def table_version(self, db_name: str, tbl_name: str) -> int:
        """The id of the newest event about the table: its version, as far as readers are concerned."""
    def count_events(self, after: int, db: str, cat: str | None = None, up_to: int | None = None) -> int: ...
    def oldest_event_id(self) -> int | None: ...
    def add_events(self, events: Sequence[Event]) -> list[int]: ...
    def clean_events(self, older_than_s: int) -> int: ...


class RawStore(MetadataStore, TxnStore, EventLog, Protocol):
    def serving(self, reader: Reader) -> RawStore:
        """This store for one call's reads: a store that answers from memory checks the reader's snapshot
        and counts its lookups under the reader's method; the database is always current and returns itself."""

    def close(self) -> None: ...


STORE_PARTS = (MetadataStore, TxnStore, EventLog)
