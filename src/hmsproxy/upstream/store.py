"""UpstreamStore: the RawStore on an upstream Hive Metastore (a Java HMS 2.3, 3.x or 4.x, or another hmsproxy).

hmsproxy in front of an existing metastore: each method is one Thrift call upstream, or a few, through UpstreamPool
(calls.py says how failures come back). The upstream decides everything (defaults, locations, ids, transactions,
locks, events), and what it answers is returned as it came: objects from Hive 2.3 carry no catalog name and no
table id. The calls are Hive 2.3's, which every upstream answers; a feature that needs a newer call (write ids,
event counts, partition batches) tries it once, and without it the store does without or refuses with a
MetaException, as SqlStore does on Hive 2.3's schema.

Where Hive's API cannot give what the store interface promises:

* Catalogs: only `hive`, the one Hive 2.3 implies; the 2.3 calls cannot name another catalog of a newer upstream.
* A listing of a missing database or table (tables, partition names) is an empty list or a failure upstream: the
  owner is then looked up, which raises the NoSuchObjectException the interface promises.
* Nothing is one snapshot: a bundle or a drop's report is read in several calls (see get_table_bundle).
* Transactions say nothing of their writes upstream: commit and abort return no TableWrite (the cache cannot learn
  from them which entries became valid), and expired transactions and locks are the upstream's to reap.
* The notification log is the upstream's: nothing is added to it or cleaned here (a write's journal stays as it
  was handed in: the upstream logs its own events), and a table's version is looked for among the newest events
  only (table_version).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

from hmsproxy.client import decode_bitset
from hmsproxy.events.journal import Journal
from hmsproxy.events.messages import Event
from hmsproxy.hive.names import DEFAULT_CATALOG, parse_partition_name
from hmsproxy.hive.partition_filter import PartitionFilter, names_matching
from hmsproxy.hive.write_ids import LONG_MAX, ValidTxnList, ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
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
    TableChange,
    TableMeta,
    TableWrite,
    TxnInfo,
    is_transactional,
)
from hmsproxy.store.rawstore import RawStore
from hmsproxy.store.reader import Reader
from hmsproxy.upstream.calls import UpstreamCalls
from hmsproxy.upstream.pool import UpstreamPool

PARTITION_CHUNK = 1000   # partitions per get_partitions_by_names call when a whole table is read
EVENT_PAGE = 1000        # events per get_next_notification call
VERSION_WINDOW = 1000    # how many of the newest events table_version looks through
I16_MAX = 32767          # get_partitions' max_parts is a Thrift i16
ENGINE = "hive"          # the statistics engine newer Hives ask for (Hive 2.3 has only this one)


def upstream_store(pool: UpstreamPool) -> RawStore:
    """The store on the upstream metastores of `pool`, as the server holds it: a RawStore."""
    return UpstreamStore(pool)


class UpstreamStore:
    """Objects in and out are the IDL's types, as the upstream answers them; `close` closes the pool."""

    def __init__(self, pool: UpstreamPool) -> None:
        self.upstream = UpstreamCalls(pool)
        self._keeps_write_ids: bool | None = None

    @property
    def keeps_write_ids(self) -> bool:
        """Whether the upstream keeps table write ids (Hive 3+): asked once, with a request for no table."""
        if self._keeps_write_ids is None:
            probe = hms.GetValidWriteIdsRequest(fullTableNames=[], validTxnList=str(ValidTxnList(high_watermark=0)))
            self._keeps_write_ids = self.upstream.optional("get_valid_write_ids", probe) is not None
        return self._keeps_write_ids

    def kept(self, obj: Kept) -> Kept:
        """The object unchanged. What the upstream keeps of a write (and what it adds) is its own decision, which a
        cache has to read back from it: no schema here says what would be lost."""
        return obj

    def serving(self, reader: Reader) -> UpstreamStore:
        return self

    def close(self) -> None:
        self.upstream.close()

    # ---- catalogs and databases --------------------------------------------------------------------

    def get_catalog(self, name: str) -> Catalog:
        """The implied catalog of Hive 2.3, where its default database is (as SqlStore on that schema)."""
        _check_catalog(name)
        location = self.upstream.call("get_database", "default").locationUri
        return hms.Catalog(name=DEFAULT_CATALOG, description="Default catalog for Hive", locationUri=location)

    def get_catalog_names(self) -> list[str]:
        return [DEFAULT_CATALOG]

    def create_database(self, database: Database, journal: Journal | None = None) -> None:
        _check_catalog(database.catalogName or DEFAULT_CATALOG)
        self.upstream.call("create_database", database, write=True)

    def get_database(self, cat: str, name: str) -> Database:
        _check_catalog(cat)
        return cast(Database, self.upstream.call("get_database", name))

    def get_database_names(self, cat: str) -> list[str]:
        return sorted(self.upstream.call("get_all_databases")) if cat == DEFAULT_CATALOG else []

    def alter_database(self, cat: str, name: str, database: Database, journal: Journal | None = None) -> None:
        self.get_database(cat, name)  # Hive 2.3 ignores the alter of a missing database
        self.upstream.call("alter_database", name, database, write=True)

    def drop_database(self, cat: str, name: str, cascade: bool, journal: Journal | None = None) -> list[DroppedTable]:
        """With cascade, the tables it held, read just before the drop (one created meanwhile is not listed)."""
        self.get_database(cat, name)  # Hive 2.3 answers the drop of a missing one with a NullPointerException
        dropped = [self._dropped(cat, name, table) for table in self.get_table_names(cat, name)] if cascade else []
        self.upstream.call("drop_database", name, False, cascade, write=True)
        return dropped

    # ---- tables ------------------------------------------------------------------------------------

    def create_table(self, table: Table, journal: Journal | None = None) -> int:
        """The new table's id as the upstream reads it back: 0 from Hive 2.3, whose tables have none."""
        _check_catalog(table.catName or DEFAULT_CATALOG)
        self.upstream.call("create_table", table, write=True)
        return self.upstream.call("get_table", table.dbName, table.tableName).id or 0

    def get_table(self, cat: str, db_name: str, tbl_name: str) -> Table:
        _check_catalog(cat)
        return cast(Table, self.upstream.call("get_table", db_name, tbl_name))

    def get_table_objects(self, cat: str, db_name: str, tbl_names: Sequence[str]) -> list[Table]:
        _check_catalog(cat)
        tables = self._listing((db_name,), "get_table_objects_by_name", db_name, sorted(set(tbl_names)))
        return sorted(tables, key=lambda table: table.tableName)

    def get_table_names(self, cat: str, db_name: str, table_type: str | None = None) -> list[str]:
        _check_catalog(cat)
        if table_type is None:
            return sorted(self._listing((db_name,), "get_all_tables", db_name))
        return sorted(self._listing((db_name,), "get_tables_by_type", db_name, "*", table_type))

    def get_table_meta(self, cat: str) -> list[TableMeta]:
        if cat != DEFAULT_CATALOG:
            return []
        return sorted((m.dbName, m.tableName, m.tableType, m.comments)
                      for m in self.upstream.call("get_table_meta", "*", "*", None))

    def alter_table(self, cat: str, db_name: str, tbl_name: str, new_table: Table,
                    partition_location_moves: tuple[str, str] | None = None, cascade: bool = False,
                    expected_parameter: tuple[str, str] | None = None, journal: Journal | None = None) -> None:
        """The upstream moves a renamed table's partition locations itself (`partition_location_moves` is not
        needed). A compare-and-set (`expected_parameter`) is refused: Hive before 4.0 ignores the expected value,
        which travels in the environment context, and would change the table whatever it holds."""
        _check_catalog(cat)
        if expected_parameter is not None:
            raise hms.MetaException(message=f"the upstream HMS cannot alter {db_name}.{tbl_name} only if its "
                                            f"parameter {expected_parameter[0]!r} still holds the expected value "
                                            "(Hive 2.3 has no compare-and-set); lock the table instead")
        context = hms.EnvironmentContext(properties={"CASCADE": "true"}) if cascade else None
        self.upstream.call("alter_table_with_environment_context", db_name, tbl_name, new_table, context, write=True)

    def alter_tables(self, cat: str, changes: Sequence[TableChange], journal: Journal | None = None) -> None:
        raise hms.MetaException(message="the upstream HMS cannot alter several tables in one transaction")

    def drop_table(self, cat: str, db_name: str, tbl_name: str, journal: Journal | None = None) -> DroppedTable:
        """What the drop removes, read just before it: Hive's drop answers nothing."""
        dropped = self._dropped(cat, db_name, tbl_name)
        self.upstream.call("drop_table", db_name, tbl_name, False, write=True)
        return dropped

    def get_table_bundles(self, cat: str, tables: Sequence[tuple[str, str]]) -> list[TableBundle]:
        """One table after the other: the upstream has no call that reads many at once."""
        bundles = []
        for db_name, tbl_name in tables:
            try:
                bundles.append(self.get_table_bundle(cat, db_name, tbl_name))
            except hms.NoSuchObjectException:
                pass
        return bundles

    def partition_counts(self, cat: str) -> dict[tuple[str, str], int] | None:
        return None   # a call per table to find out: the loader then loads tables one by one

    def _dropped(self, cat: str, db_name: str, tbl_name: str) -> DroppedTable:
        table = self.get_table(cat, db_name, tbl_name)
        names = self.get_partition_names(cat, db_name, tbl_name) if table.partitionKeys else []
        return DroppedTable(table, [p.sd.location for chunk in self._partition_chunks(db_name, tbl_name, names)
                                    for p in chunk if p.sd is not None and p.sd.location])

    def get_table_bundle(self, cat: str, db_name: str, tbl_name: str,
                         partition_sink: PartitionSink | None = None) -> TableBundle:
        """The table with its partitions (PARTITION_CHUNK at a time) and the statistics of all their columns.

        Read in many calls, not as one snapshot, so the version (the upstream's newest event id: 0 without a log)
        is read first, and the write ids of a transactional table before the table is read again: the content is
        never older than what the bundle claims, only possibly newer (which is safe to serve)."""
        version = self.current_event_id()
        table = self.get_table(cat, db_name, tbl_name)
        write_ids = None
        if is_transactional(table) and self.keeps_write_ids:
            [write_ids] = self.valid_write_ids([f"{db_name}.{tbl_name}"], None)
            table = self.get_table(cat, db_name, tbl_name)
        table_columns = [present(c.name) for c in table.sd.cols or []] if table.sd is not None else []
        columns = dict.fromkeys(table_columns)   # of the partitions too: theirs may differ from the table's
        partitions: list[Partition] = []
        names = self.get_partition_names(cat, db_name, tbl_name) if table.partitionKeys else []
        for chunk in self._partition_chunks(db_name, tbl_name, names):
            columns.update((present(c.name), None) for p in chunk if p.sd is not None for c in p.sd.cols or [])
            if partition_sink is None:
                partitions += chunk
            else:
                partition_sink(table, chunk, None)   # the HMS API tells no partition ids
        table_stats = {o.colName: o for o in self.get_table_column_statistics(cat, db_name, tbl_name, table_columns)}
        partition_stats: dict[str, dict[str, ColumnStatisticsObj]] = {}
        for start in range(0, len(names), PARTITION_CHUNK):
            found = self.get_partition_column_statistics(cat, db_name, tbl_name, names[start:start + PARTITION_CHUNK],
                                                         list(columns))
            partition_stats.update({name: {o.colName: o for o in objs} for name, objs in found.items()})
        return TableBundle(table, partitions, table_stats, partition_stats, write_ids, version)

    # ---- partitions --------------------------------------------------------------------------------

    def add_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[Partition],
                       if_not_exists: bool = False, journal: Journal | None = None) -> list[Partition]:
        """The partitions added, as the upstream stored them (locations and parameters filled in)."""
        _check_catalog(cat)
        request = hms.AddPartitionsRequest(dbName=db_name, tblName=tbl_name, parts=list(parts),
                                           ifNotExists=if_not_exists, needResult=True)
        return self.upstream.call("add_partitions_req", request, write=True).partitions or []

    def alter_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[Partition],
                         journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("alter_partitions", db_name, tbl_name, list(parts), write=True)

    def rename_partition(self, cat: str, db_name: str, tbl_name: str, old_values: Sequence[str],
                         part: Partition, journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("rename_partition", db_name, tbl_name, list(old_values), part, write=True)

    def drop_partitions(self, cat: str, db_name: str, tbl_name: str, names: Sequence[str],
                        if_exists: bool = False, journal: Journal | None = None) -> list[Partition]:
        _check_catalog(cat)
        request = hms.DropPartitionsRequest(dbName=db_name, tblName=tbl_name, deleteData=False, ifExists=if_exists,
                                            parts=hms.RequestPartsSpec(names=list(names)), needResult=True)
        return self.upstream.call("drop_partitions_req", request, write=True).partitions or []

    def get_partitions(self, cat: str, db_name: str, tbl_name: str, max_parts: int = -1) -> list[Partition]:
        _check_catalog(cat)
        limit = max_parts if max_parts <= I16_MAX else -1
        parts: list[Partition] = self.upstream.call("get_partitions", db_name, tbl_name, limit)
        return parts[:max_parts] if max_parts >= 0 else parts

    def get_partitions_by_names(self, cat: str, db_name: str, tbl_name: str, names: Sequence[str]) -> list[Partition]:
        _check_catalog(cat)
        return cast("list[Partition]", self.upstream.call("get_partitions_by_names", db_name, tbl_name,
                                                         list(dict.fromkeys(names))))

    def get_partition(self, cat: str, db_name: str, tbl_name: str, values: Sequence[str]) -> Partition:
        _check_catalog(cat)
        return cast(Partition, self.upstream.call("get_partition", db_name, tbl_name, list(values)))

    def get_partition_names(self, cat: str, db_name: str, tbl_name: str) -> list[str]:
        _check_catalog(cat)
        return sorted(self._listing((db_name, tbl_name), "get_partition_names", db_name, tbl_name, -1))

    def get_partition_values(self, cat: str, db_name: str, tbl_name: str) -> list[tuple[str, list[str]]]:
        """From the names: one call instead of every partition. A partition whose value is "" reads as
        __HIVE_DEFAULT_PARTITION__, the name Hive gives it."""
        return [(name, _values(name)) for name in self.get_partition_names(cat, db_name, tbl_name)]

    def get_partition_names_by_filter(self, cat: str, db_name: str, tbl_name: str,
                                      partition_filter: PartitionFilter) -> list[str]:
        """From the names, as get_partition_values: Hive 2.3's calls have no filter that answers names only."""
        return names_matching(self.get_partition_values(cat, db_name, tbl_name), partition_filter)

    def get_partition_batch(self, cat: str, db_name: str, tbl_name: str, from_id: int, to_id: int, size: int,
                            predicate: Callable[[Sequence[str]], bool] | None, names_only: bool) -> PartitionBatch:
        """Through hmsproxy's batch calls when the upstream has them; Hive has no partition ids to page by (list
        positions would skip partitions when others are dropped meanwhile), so it is refused there. The
        predicate is applied here to a batch of `size`: a selective one gives short batches, as the interface
        allows."""
        _check_catalog(cat)
        request = hms.PartitionBatchRequest(dbName=db_name, tblName=tbl_name, fromPartitionId=from_id,
                                            toPartitionId=to_id, batchSize=size)
        response = self.upstream.optional("get_partition_names_batch" if names_only else "get_partitions_batch",
                                          request)
        if response is None:
            raise hms.MetaException(message="the upstream HMS has no partition ids to read batches by; list "
                                            "the partitions with get_partition_names and get_partitions_by_names")
        items: Sequence[Partition] | list[str]
        if names_only:
            items = [n for n in response.names if predicate is None or predicate(_values(n))]
        else:
            items = [p for p in response.partitions if predicate is None or predicate(p.values)]
        return PartitionBatch(items, response.nextPartitionId, response.minPartitionId, response.maxPartitionId)

    def _partition_chunks(self, db_name: str, tbl_name: str, names: Sequence[str]) -> Iterator[list[Partition]]:
        for start in range(0, len(names), PARTITION_CHUNK):
            yield self.upstream.call("get_partitions_by_names", db_name, tbl_name,
                                     list(names[start:start + PARTITION_CHUNK]))

    def _listing(self, owner: tuple[str] | tuple[str, str], method: str, *args: object) -> Any:
        """A listing of a database's tables or a table's partitions. Hive answers one of a missing database or
        table with an empty list or a failure, not NoSuchObjectException: then the owner is looked up, which
        raises it when it is missing."""
        look_up = "get_database" if len(owner) == 1 else "get_table"
        try:
            found = self.upstream.call(method, *args)
        except hms.MetaException:
            self.upstream.call(look_up, *owner)
            raise
        if not found:
            self.upstream.call(look_up, *owner)
        return found

    # ---- functions ---------------------------------------------------------------------------------

    def create_function(self, function: Function, journal: Journal | None = None) -> None:
        _check_catalog(function.catName or DEFAULT_CATALOG)
        self.upstream.call("create_function", function, write=True)

    def get_function(self, cat: str, db_name: str, name: str) -> Function:
        _check_catalog(cat)
        return cast(Function, self.upstream.call("get_function", db_name, name))

    def get_functions(self, cat: str, db_name: str | None = None) -> list[Function]:
        """From one get_all_functions (Hive lists only names per database), sorted by database and name."""
        if cat != DEFAULT_CATALOG:
            return []
        functions = self.upstream.call("get_all_functions").functions or []
        return sorted((f for f in functions if db_name is None or f.dbName == db_name),
                      key=lambda f: (f.dbName, f.functionName))

    def alter_function(self, cat: str, db_name: str, name: str, function: Function,
                       journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("alter_function", db_name, name, function, write=True)

    def drop_function(self, cat: str, db_name: str, name: str, journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("drop_function", db_name, name, write=True)

    # ---- column statistics -------------------------------------------------------------------------

    def update_table_column_statistics(self, cat: str, stats: ColumnStatistics, journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("update_table_column_statistics", stats, write=True)

    def update_partition_column_statistics(self, cat: str, stats: ColumnStatistics, values: Sequence[str],
                                           journal: Journal | None = None) -> None:
        """Hive finds the partition by the statistics' partName (the same partition as `values`)."""
        _check_catalog(cat)
        self.upstream.call("update_partition_column_statistics", stats, write=True)

    def get_table_column_statistics(self, cat: str, db_name: str, tbl_name: str,
                                    col_names: Sequence[str]) -> list[ColumnStatisticsObj]:
        _check_catalog(cat)
        request = hms.TableStatsRequest(dbName=db_name, tblName=tbl_name, colNames=list(col_names), engine=ENGINE)
        return _in_order(self.upstream.call("get_table_statistics_req", request).tableStats, col_names)

    def get_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_names: Sequence[str],
                                        col_names: Sequence[str]) -> dict[str, list[ColumnStatisticsObj]]:
        _check_catalog(cat)
        request = hms.PartitionsStatsRequest(dbName=db_name, tblName=tbl_name, colNames=list(col_names),
                                             partNames=list(part_names), engine=ENGINE)
        found = self.upstream.call("get_partitions_statistics_req", request).partStats or {}
        return {name: objs for name, objs in ((n, _in_order(o, col_names)) for n, o in found.items()) if objs}

    def statistics_analyzed_at(self, cat: str, db_name: str, tbl_name: str, part_name: str | None,
                               col_name: str) -> int | None:
        """The upstream's lastAnalyzed; None without statistics, which Hive 2.3 answers with a null and newer
        metastores with NoSuchObjectException."""
        _check_catalog(cat)
        try:
            if part_name is None:
                stats = self.upstream.call("get_table_column_statistics", db_name, tbl_name, col_name, null_ok=True)
            else:
                stats = self.upstream.call("get_partition_column_statistics", db_name, tbl_name, part_name, col_name,
                                           null_ok=True)
        except hms.NoSuchObjectException:
            return None
        return None if stats is None else stats.statsDesc.lastAnalyzed

    def delete_table_column_statistics(self, cat: str, db_name: str, tbl_name: str, col_name: str | None,
                                       journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("delete_table_column_statistics", db_name, tbl_name, col_name, ENGINE, write=True)

    def delete_partition_column_statistics(self, cat: str, db_name: str, tbl_name: str, part_name: str,
                                           col_name: str | None, journal: Journal | None = None) -> None:
        _check_catalog(cat)
        self.upstream.call("delete_partition_column_statistics", db_name, tbl_name, part_name, col_name, ENGINE,
                           write=True)

    # ---- transactions and write ids ----------------------------------------------------------------

    def open_txns(self, count: int, user: str, host: str, agent: str | None, txn_type: int | None) -> list[int]:
        request = hms.OpenTxnRequest(num_txns=count, user=user, hostname=host, agentInfo=agent, txn_type=txn_type)
        response: hms.OpenTxnsResponse = self.upstream.call("open_txns", request, write=True)
        return response.txn_ids

    def commit_txn(self, txn_id: int) -> list[TableWrite]:
        """No writes are returned: the upstream does not say which write ids the transaction allocated."""
        self.upstream.call("commit_txn", hms.CommitTxnRequest(txnid=txn_id), write=True)
        return []

    def abort_txns(self, txn_ids: Sequence[int], skip_unknown: bool = False) -> list[TableWrite]:
        """No writes are returned (see commit_txn). Hive's abort_txns passes over unknown ids, its abort_txn
        refuses one: without `skip_unknown` each is aborted on its own, so an unknown one fails the call."""
        if skip_unknown:
            self.upstream.call("abort_txns", hms.AbortTxnsRequest(txn_ids=list(txn_ids)), write=True)
        else:
            for txn_id in txn_ids:
                self.upstream.call("abort_txn", hms.AbortTxnRequest(txnid=txn_id), write=True)
        return []

    def txn_writes(self, txn_id: int) -> list[TableWrite]:
        """None known (see commit_txn)."""
        return []

    def get_open_txns(self) -> tuple[int, list[TxnInfo]]:
        """From get_open_txns_info: Hive 2.3's get_open_txns says nothing of which transactions are aborted."""
        info = self.upstream.call("get_open_txns_info")
        high = info.txn_high_water_mark
        return high, sorted((t for t in info.open_txns or [] if t.id <= high), key=lambda t: t.id)

    def current_txn_list(self) -> ValidTxnList:
        high, txns = self.get_open_txns()
        open_ids = tuple(t.id for t in txns if t.state == hms.TxnState.OPEN)
        return ValidTxnList(high_watermark=high, min_open_id=min(open_ids, default=LONG_MAX), open_ids=open_ids,
                            aborted_ids=tuple(t.id for t in txns if t.state == hms.TxnState.ABORTED))

    def allocate_write_ids(self, db_name: str, table: str, txn_ids: Sequence[int],
                           journal: Journal | None = None) -> list[tuple[int, int]]:
        request = hms.AllocateTableWriteIdsRequest(dbName=db_name, tableName=table, txnIds=list(txn_ids))
        response = self.upstream.optional("allocate_table_write_ids", request, write=True)
        if response is None:
            raise _no_write_ids()
        allocated = {a.txnId: a.writeId for a in response.txnToWriteIds}
        return [(txn_id, allocated[txn_id]) for txn_id in txn_ids]

    def valid_write_ids(self, full_names: Sequence[str], snapshot: ValidTxnList | None) -> list[ValidWriteIdList]:
        """As of the snapshot, else of the current transactions (Hive 3.1 would take a missing one as "all
        committed")."""
        snapshot = snapshot or self.current_txn_list()
        request = hms.GetValidWriteIdsRequest(fullTableNames=list(full_names), validTxnList=str(snapshot))
        response = self.upstream.optional("get_valid_write_ids", request)
        if response is None:
            raise _no_write_ids()
        return [_write_id_list(ids) for ids in response.tblValidWriteIds]

    # ---- locks -------------------------------------------------------------------------------------

    def lock(self, components: Sequence[LockComponent], txn_id: int | None, user: str, host: str,
             agent: str | None) -> LockOutcome:
        request = hms.LockRequest(component=list(components), txnid=txn_id, user=user, hostname=host, agentInfo=agent)
        response = self.upstream.call("lock", request, write=True)
        return self._outcome(response, [(c.dbname, c.tablename) for c in components])

    def check_lock(self, lock_id: int) -> LockOutcome:
        """A grant's scopes come from show_locks: Hive's answer names only the lock."""
        response = self.upstream.call("check_lock", hms.CheckLockRequest(lockid=lock_id))
        held = self.show_locks(None, None, None, None) if response.state == hms.LockState.ACQUIRED else []
        return self._outcome(response, [(e.dbname, e.tablename) for e in held if e.lockid == lock_id])

    def _outcome(self, response: hms.LockResponse, scopes: list[tuple[str, str | None]]) -> LockOutcome:
        """A grant with its (db, table) scopes, lower-cased as Hive records them, and the log's head read after
        it: every event committed before the grant is at or below it."""
        if response.state != hms.LockState.ACQUIRED:
            return LockOutcome(response.lockid, response.state)
        lowered = tuple(dict.fromkeys((db.lower(), table.lower() if table else None) for db, table in scopes))
        return LockOutcome(response.lockid, response.state, lowered, self.current_event_id())

    def unlock(self, lock_id: int) -> None:
        self.upstream.call("unlock", hms.UnlockRequest(lockid=lock_id), write=True)

    def show_locks(self, db_name: str | None, table: str | None, partition: str | None,
                   txn_id: int | None) -> list[ShowLocksResponseElement]:
        """In the upstream's order (Hive's); the transaction is looked for here too, as Hive 2.3 has no such filter."""
        request = hms.ShowLocksRequest(dbname=db_name, tablename=table, partname=partition, txnid=txn_id)
        locks = self.upstream.call("show_locks", request).locks or []
        return [e for e in locks if not txn_id or e.txnid == txn_id]

    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None:
        self.upstream.call("heartbeat", hms.HeartbeatRequest(lockid=lock_id, txnid=txn_id))

    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]:
        response = self.upstream.call("heartbeat_txn_range", hms.HeartbeatTxnRangeRequest(min=low, max=high))
        return set(response.aborted or ()), set(response.nosuch or ())

    def reap_expired(self) -> list[TableWrite]:
        """Nothing to do: the upstream reaps its own transactions and locks."""
        return []

    # ---- the notification log ----------------------------------------------------------------------

    def get_events(self, after: int, limit: int | None = None, *, skip_types: Sequence[str] = (),
                   cat: str | None = None, db: str | None = None,
                   tables: Sequence[str] | None = None) -> list[NotificationEvent]:
        limit = limit if limit is not None and limit > 0 else None
        filtered = bool(skip_types or cat or db or tables)   # an upstream may not filter: read whole pages then
        page = EVENT_PAGE if limit is None or filtered else min(limit, EVENT_PAGE)
        events = self._events(after, page, skip_types=skip_types, cat=cat, db=db, tables=tables)
        return list(itertools.islice(events, limit))

    def _events(self, after: int, page: int, until: int | None = None, *, skip_types: Sequence[str] = (),
                cat: str | None = None, db: str | None = None,
                tables: Sequence[str] | None = None) -> Iterator[NotificationEvent]:
        """The events in (after, until] that pass the filters, read `page` at a time as they are consumed. The
        filters are sent, and applied again here: Hive 2.3's request has only lastEvent and maxEvents. An event
        without a catalog (Hive 2.3's) is in the default one."""
        request = hms.NotificationEventRequest(lastEvent=after, maxEvents=page, eventTypeSkipList=list(skip_types),
                                               catName=cat, dbName=db, tableNames=list(tables) if tables else None)
        while True:
            events = self.upstream.call("get_next_notification", request).events or []
            yield from (e for e in events if (until is None or e.eventId <= until) and e.eventType not in skip_types
                        and (not cat or (e.catName or DEFAULT_CATALOG) == cat) and (not db or e.dbName == db)
                        and (not tables or e.tableName in tables))
            if len(events) < page or (until is not None and events[-1].eventId >= until):
                return
            request.lastEvent = events[-1].eventId

    def current_event_id(self) -> int:
        """0 when the upstream keeps no notification log (a Hive without DbNotificationListener)."""
        current: hms.CurrentNotificationEventId = self.upstream.call("get_current_notificationEventId")
        return current.eventId

    def table_version(self, db_name: str, tbl_name: str) -> int:
        """The newest event about the table among the last VERSION_WINDOW events; when none is, the window's
        start: the table's newest event is no newer, and an upper bound is what a version may safely be (content
        claimed that new is at least that new). 0 without a log. Two calls, one of up to VERSION_WINDOW events
        (Hive 2.3 does not filter them): not for every read."""
        head = self.current_event_id()
        if head == 0:
            return 0
        newest = max(0, head - VERSION_WINDOW)
        for event in self._events(newest, VERSION_WINDOW, head, db=db_name, tables=[tbl_name]):
            newest = event.eventId
        return newest

    def count_events(self, after: int, db: str, cat: str | None = None, up_to: int | None = None) -> int:
        """Counted upstream by get_notification_events_count (Hive 3+) when there is no upper bound (Hive 3.1
        ignores one); else, or without that call, the events are read and counted here."""
        bounded = up_to is not None and up_to > 0
        if not bounded:
            request = hms.NotificationEventsCountRequest(fromEventId=after, dbName=db, catName=cat)
            response: hms.NotificationEventsCountResponse | None = self.upstream.optional(
                "get_notification_events_count", request)
            if response is not None:
                return response.eventsCount
        return sum(1 for _ in self._events(after, EVENT_PAGE, up_to if bounded else None, cat=cat, db=db))

    def oldest_event_id(self) -> int | None:
        request = hms.NotificationEventRequest(lastEvent=0, maxEvents=1)
        events = self.upstream.call("get_next_notification", request).events
        return events[0].eventId if events else None

    def add_events(self, events: Sequence[Event]) -> list[int]:
        raise hms.MetaException(message="the upstream HMS writes its own notification log; "
                                        "events cannot be added to it through hmsproxy")

    def clean_events(self, older_than_s: int) -> int:
        """Nothing to do: the upstream cleans its own log."""
        return 0


def _check_catalog(cat: str) -> None:
    if cat != DEFAULT_CATALOG:
        raise hms.NoSuchObjectException(message=f"catalog {cat} does not exist")


def _values(partition_name: str) -> list[str]:
    return [value for _, value in parse_partition_name(partition_name)]


def _in_order(objs: Sequence[ColumnStatisticsObj] | None, col_names: Sequence[str]) -> list[ColumnStatisticsObj]:
    """The statistics of the asked columns that exist, in the asked order (as SqlStore answers)."""
    by_name = {o.colName: o for o in objs or []}
    return [by_name[c] for c in col_names if c in by_name]


def _write_id_list(ids: hms.TableValidWriteIds) -> ValidWriteIdList:
    """A TableValidWriteIds answer as Hive's reader reads it: abortedBits marks the aborted invalid ids."""
    invalid = list(ids.invalidWriteIds or [])
    marked = list(zip(invalid, decode_bitset(ids.abortedBits, len(invalid))))
    return ValidWriteIdList.of(ids.fullTableName, ids.writeIdHighWaterMark, [w for w, aborted in marked if not aborted],
                               [w for w, aborted in marked if aborted])


def _no_write_ids() -> Exception:
    return hms.MetaException(message="the upstream HMS has no table write ids (Hive 3 brought them)")
