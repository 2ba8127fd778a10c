"""Thrift calls on partitions: add/append, read by values/names/partial spec/filter, alter, rename, drop."""
from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import cast

from thriftpy2.thrift import TApplicationException

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.handler.common import (
    DDL_TIME,
    Calls,
    check_partition_values,
    checked_location,
    env_properties,
    lower,
    now,
    split_catalog,
    table_name,
    with_snapshot,
)
from hmsproxy.handler.quick_stats import (
    update_added_partitions_stats,
    update_altered_partition_stats,
    update_quick_stats,
)
from hmsproxy.handler.tables import is_external, is_view
from hmsproxy.hive.names import (
    make_partition_name,
    parse_partition_name,
    partition_exists_message,
    partition_missing_message,
    unescape_path_name,
)
from hmsproxy.hive.partition_filter import FilterError, FilterTypeMismatch, compile_filter, compile_partition_filter
from hmsproxy.hive.partition_limits import first_parts, over_request_limit
from hmsproxy.hive.partitions_to_add import check_new_and_distinct
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.storage.locations import join
from hmsproxy.storage.warehouse import DirectoryWork
from hmsproxy.store.domain import PartitionBatch, partition_key_types
from hmsproxy.store.reader import shallow_copy

MAX_BATCH_SIZE = 10_000
PATH_COMPONENT = re.compile(r"([^/]+)=([^/]+)")  # key=value; the key runs to the last '='
ZERO = re.compile(r"[+-]?0+")  # a DDL time Hive reads as 0 (Integer.parseInt), so replaces with the time of the alter


def _spec_matches(values: Sequence[str], spec: Sequence[str]) -> bool:
    """A partial spec: a prefix of the values, where an empty string matches any value."""
    return all(s == "" or s == v for s, v in zip(spec, values))


def _filter_refused(error: FilterError) -> hms.MetaException:
    """HMS's answer to a filter it cannot use: its own text for a type mismatch, else what and where."""
    if isinstance(error, FilterTypeMismatch):
        return hms.MetaException(message=str(error))
    return hms.MetaException(message=f"Error parsing partition filter: {error}")


class PartitionCalls(Calls):

    # ---- helpers -----------------------------------------------------------------------------------

    def _table(self, db: str, tbl: str, cat: str | None = None) -> tuple[str, str, hms.Table]:
        catalog, db_name, tbl_name = table_name(db, tbl, cat)
        return catalog, db_name, self.ctx.store.get_table(catalog, db_name, tbl_name)

    def _values_from_name(self, table: hms.Table, part_name: str) -> list[str]:
        """As HMS's getPartValsFromName: components in any order, extra ones ignored, a missing key (or an
        unparseable name) is NoSuchObjectException."""
        try:
            spec = {k.lower(): v for k, v in parse_partition_name(part_name or "")}
        except ValueError:
            spec = {}
        for key in table.partitionKeys or []:
            if key.name not in spec:
                raise hms.NoSuchObjectException(message=f"incomplete partition name - missing {key.name}")
        return [spec[present(k.name)] for k in cast("list[hms.FieldSchema]", table.partitionKeys)]

    def _name(self, table: hms.Table, values: Sequence[str]) -> str:
        keys = cast("list[hms.FieldSchema]", table.partitionKeys)
        return make_partition_name([present(k.name) for k in keys], values)

    # ---- add ---------------------------------------------------------------------------------------

    def _prepare_partition(self, table: hms.Table, part: hms.Partition, work: DirectoryWork) -> hms.Partition:
        """Fills defaults (location, SD, times), plans the directory; returns the partition
        to store. Only the partition and its storage descriptor are copied, the two objects changed here (a deep
        copy of each partition was a sixth of adding a thousand; copy.copy costs three times shallow_copy)."""
        part = shallow_copy(part, sd=None if part.sd is None else shallow_copy(part.sd))
        part.values = check_partition_values(table, part.values)
        part.dbName, part.tableName, part.catName = table.dbName, table.tableName, table.catName
        if part.sd is None:
            part.sd = copy.deepcopy(present(table.sd))
            part.sd.location = None
        part.sd.location = checked_location(part.sd.location, hms.InvalidObjectException) or \
            join(cast(str, present(table.sd).location), self._name(table, part.values))
        part.parameters = dict(part.parameters or {})
        part.createTime = now()
        part.lastAccessTime = part.lastAccessTime or 0
        part.parameters.setdefault(DDL_TIME, str(part.createTime))
        if not is_view(table):
            work.plan_mkdirs(part.sd.location)
        return part

    def _add_partitions(self, db: str, tbl: str, cat: str | None, parts: Sequence[hms.Partition],
                        if_not_exists: bool) -> list[hms.Partition]:
        try:
            catalog, db_name, table = self._table(db, tbl, cat)
        except hms.NoSuchObjectException:
            raise hms.InvalidObjectException(
                message=f"Unable to add partitions because table or database {db}.{tbl} do not exist") from None
        if not table.partitionKeys:
            raise hms.MetaException(message=f"table {db_name}.{table.tableName} is not partitioned")
        for part in parts:
            if part is None:
                raise hms.MetaException(message="partition must not be null")
            part_db = split_catalog(part.dbName or db_name)[1]
            if part_db != db_name or (part.tableName or present(table.tableName)).lower() != table.tableName:
                raise hms.MetaException(
                    message=f"Partition does not belong to target table {db_name}.{table.tableName}: "
                            f"{part.dbName}.{part.tableName}")
        names = [self._name(table, check_partition_values(table, p.values)) for p in parts]
        # Without if_not_exists an existing partition fails the call, which the store's transaction finds (and the
        # directories made meanwhile are removed): asking first would cost a read of the table on every add. A
        # request naming one twice asks anyway: Hive refuses an existing partition before a repeated one.
        must_ask = if_not_exists or len(set(names)) < len(names)
        existing = self._existing_names(catalog, db_name, table, names) if must_ask else set()
        check_new_and_distinct(names, parts, existing, if_not_exists)
        try:
            with self.ctx.warehouse.changes() as work:
                prepared = [self._prepare_partition(table, part, work)
                            for name, part in zip(names, parts) if name not in existing]
                if not is_view(table):   # Hive 2.3 lists them whatever the context or DO_NOT_UPDATE_STATS say
                    update_added_partitions_stats(self.ctx.warehouse, prepared)
                work.start_planned()   # made while the event is built and the rows are written
                # With if_not_exists the store announces what it adds: another writer may add some meanwhile.
                events = [messages.add_partition(table, prepared)] if prepared and not if_not_exists else []
                return self.ctx.store.add_partitions(catalog, db_name, present(table.tableName), prepared,
                                                     if_not_exists,
                                                     journal=Journal(events, before_commit=work.wait))
        except hms.AlreadyExistsException:
            # Refused as Hive refuses it: naming the partition as the client sent it, not as it was prepared.
            check_new_and_distinct(names, parts, self._existing_names(catalog, db_name, table, names), False)
            raise

    def _existing_names(self, catalog: str, db_name: str, table: hms.Table, names: Sequence[str]) -> set[str]:
        """Which of these partitions exist (looked up by name: adding to a huge table stays cheap)."""
        if not names:
            return set()
        found = self.ctx.store.get_partitions_by_names(catalog, db_name, present(table.tableName), names)
        return {self._name(table, present(p.values)) for p in found}

    def add_partition(self, new_part: hms.Partition) -> hms.Partition:
        return self._add_one(new_part)

    def add_partition_with_environment_context(self, new_part: hms.Partition,
                                               environment_context: hms.EnvironmentContext) -> hms.Partition:
        return self._add_one(new_part)   # Hive 2.3 adds as add_partition does, whatever the context says

    def _add_one(self, part: hms.Partition) -> hms.Partition:
        if part is None:
            raise hms.InvalidObjectException(message="partition must not be null")
        added = self._add_partitions(part.dbName or "", part.tableName or "", part.catName, [part], False)
        return added[0]

    def add_partitions(self, new_parts: Sequence[hms.Partition]) -> int:
        if not new_parts:
            return 0
        first = new_parts[0]
        return len(self._add_partitions(first.dbName or "", first.tableName or "", first.catName, new_parts, False))

    def add_partitions_req(self, request: hms.AddPartitionsRequest) -> hms.AddPartitionsResult:
        added = self._add_partitions(request.dbName, request.tblName, request.catName, request.parts or [],
                                     bool(request.ifNotExists))
        return hms.AddPartitionsResult(partitions=added if request.needResult is not False else None)

    def append_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str]) -> hms.Partition:
        return self._append(db_name, tbl_name, list(part_vals or []))

    def append_partition_with_environment_context(self, db_name: str, tbl_name: str, part_vals: Sequence[str],
                                                  environment_context: hms.EnvironmentContext) -> hms.Partition:
        return self._append(db_name, tbl_name, list(part_vals or []))

    def append_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> hms.Partition:
        _, _, table = self._table(db_name, tbl_name)
        try:
            values = self._values_from_name(table, part_name)
        except hms.NoSuchObjectException as exc:
            raise hms.InvalidObjectException(message=exc.message) from None
        return self._append(db_name, tbl_name, values)

    def append_partition_by_name_with_environment_context(self, db_name: str, tbl_name: str, part_name: str,
                                                          environment_context: hms.EnvironmentContext) -> hms.Partition:
        return self.append_partition_by_name(db_name, tbl_name, part_name)

    def _append(self, db: str, tbl: str, values: list[str]) -> hms.Partition:
        part = hms.Partition(values=values, dbName=split_catalog(db)[1], tableName=lower(tbl, "table"),
                             parameters={}, sd=None)
        return self._add_partitions(db, tbl, None, [part], False)[0]

    # ---- read --------------------------------------------------------------------------------------

    def get_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str]) -> hms.Partition:
        catalog, db, table = self._table(db_name, tbl_name)
        return self._partition_as_asked(catalog, db, table, check_partition_values(table, part_vals))

    @with_snapshot
    def get_partition_req(self, req: hms.GetPartitionRequest) -> hms.GetPartitionResponse:
        catalog, db, table = self._table(req.dbName, req.tblName, req.catName)
        part = self._partition_as_asked(catalog, db, table, check_partition_values(table, req.partVals))
        return hms.GetPartitionResponse(partition=part)

    def _partition_as_asked(self, catalog: str, db: str, table: hms.Table, values: list[str]) -> hms.Partition:
        """The partition with the values it was asked by, as Hive answers: asked by `""` or by
        __HIVE_DEFAULT_PARTITION__ (the same partition), it answers with the asker's spelling."""
        return shallow_copy(self.ctx.store.get_partition(catalog, db, present(table.tableName), values), values=values)

    def get_partition_with_auth(self, db_name: str, tbl_name: str, part_vals: Sequence[str], user_name: str,
                                group_names: Sequence[str]) -> hms.Partition:
        return self.get_partition(db_name, tbl_name, part_vals)

    def get_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> hms.Partition:
        catalog, db, table = self._table(db_name, tbl_name)
        return self._partition_as_asked(catalog, db, table, self._values_from_name(table, part_name))

    def _check_limit(self, table: hms.Table, count: int) -> None:
        """metastore.limit.partition.request: refuse, never truncate, a listing that is too large."""
        limit = self.ctx.partition_request_limit
        if over_request_limit(count, limit):
            raise hms.MetaException(
                message=f"Number of partitions scanned (={count}) on table '{table.dbName}.{table.tableName}' "
                        f"exceeds limit (={limit}). This is controlled on the metastore server by "
                        f"metastore.limit.partition.request; fetch them in batches with get_partitions_batch.")

    def _all_partitions(self, catalog: str, db: str, table: hms.Table,
                        max_parts: int | None) -> list[hms.Partition]:
        if self.ctx.partition_request_limit >= 0:
            count = len(self.ctx.store.get_partition_names(catalog, db, present(table.tableName)))
            self._check_limit(table, len(first_parts(range(count), max_parts)))
        found = self.ctx.store.get_partitions(catalog, db, present(table.tableName),
                                              -1 if max_parts is None else max_parts)
        return cast("list[hms.Partition]", found)   # any sequence: the Thrift codec only iterates the list

    def _partitions_named(self, catalog: str, db: str, table: hms.Table, names: Sequence[str]) -> list[hms.Partition]:
        self._check_limit(table, len(names))
        return self.ctx.store.get_partitions_by_names(catalog, db, present(table.tableName), names)

    def get_partitions(self, db_name: str, tbl_name: str, max_parts: int = -1) -> list[hms.Partition]:
        catalog, db, table = self._table(db_name, tbl_name)
        return self._all_partitions(catalog, db, table, max_parts)

    def get_partitions_with_auth(self, db_name: str, tbl_name: str, max_parts: int = -1, user_name: str = "",
                                 group_names: Sequence[str] = ()) -> list[hms.Partition]:
        return self.get_partitions(db_name, tbl_name, max_parts)

    @with_snapshot
    def get_partitions_req(self, req: hms.PartitionsRequest) -> hms.PartitionsResponse:
        catalog, db, table = self._table(req.dbName, req.tblName, req.catName)
        return hms.PartitionsResponse(partitions=self._all_partitions(catalog, db, table, req.maxParts))

    def get_partition_names(self, db_name: str, tbl_name: str, max_parts: int = -1) -> list[str]:
        catalog, db, table = self._table(db_name, tbl_name)
        return first_parts(self.ctx.store.get_partition_names(catalog, db, present(table.tableName)), max_parts)

    def _names_by_spec(self, catalog: str, db: str, table: hms.Table, spec: Sequence[str] | None) -> list[str]:
        spec = list(spec or [])
        if len(spec) > len(table.partitionKeys or []):
            raise hms.MetaException(
                message=f"Incorrect number of partition values: {spec} for keys "
                        f"{[k.name for k in cast('list[hms.FieldSchema]', table.partitionKeys)]}")
        return [name for name, values in self.ctx.store.get_partition_values(catalog, db, present(table.tableName))
                if _spec_matches(values, spec)]

    def _partitions_by_spec(self, db_name: str, tbl_name: str, cat: str | None, spec: Sequence[str] | None,
                            max_parts: int | None) -> list[hms.Partition]:
        catalog, db, table = self._table(db_name, tbl_name, cat)
        names = first_parts(self._names_by_spec(catalog, db, table, spec), max_parts)
        return self._partitions_named(catalog, db, table, names)

    def get_partitions_ps(self, db_name: str, tbl_name: str, part_vals: Sequence[str],
                          max_parts: int = -1) -> list[hms.Partition]:
        return self._partitions_by_spec(db_name, tbl_name, None, part_vals, max_parts)

    def get_partitions_ps_with_auth(self, db_name: str, tbl_name: str, part_vals: Sequence[str], max_parts: int = -1,
                                    user_name: str = "", group_names: Sequence[str] = ()) -> list[hms.Partition]:
        return self._partitions_by_spec(db_name, tbl_name, None, part_vals, max_parts)

    @with_snapshot
    def get_partitions_ps_with_auth_req(
            self, req: hms.GetPartitionsPsWithAuthRequest) -> hms.GetPartitionsPsWithAuthResponse:
        parts = self._partitions_by_spec(req.dbName, req.tblName, req.catName, req.partVals, req.maxParts)
        return hms.GetPartitionsPsWithAuthResponse(partitions=parts)

    def get_partition_names_ps(self, db_name: str, tbl_name: str, part_vals: Sequence[str],
                               max_parts: int = -1) -> list[str]:
        catalog, db, table = self._table(db_name, tbl_name)
        return first_parts(self._names_by_spec(catalog, db, table, part_vals), max_parts)

    @with_snapshot
    def get_partition_names_ps_req(self, req: hms.GetPartitionNamesPsRequest) -> hms.GetPartitionNamesPsResponse:
        catalog, db, table = self._table(req.dbName, req.tblName, req.catName)
        return hms.GetPartitionNamesPsResponse(
            names=first_parts(self._names_by_spec(catalog, db, table, req.partValues), req.maxParts))

    def _names_by_filter(self, catalog: str, db: str, table: hms.Table, filter_text: str | None) -> list[str]:
        keys = partition_key_types(table)
        try:
            partition_filter = compile_partition_filter(filter_text or "", keys)
        except FilterError as exc:
            raise _filter_refused(exc) from None
        return self.ctx.store.get_partition_names_by_filter(catalog, db, present(table.tableName), partition_filter)

    def get_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str,
                                 max_parts: int = -1) -> list[hms.Partition]:
        """The ordinary tier: a few partitions of a cached table are answered before it (handler/ready.py)."""
        catalog, db, table = self._table(db_name, tbl_name)
        names = first_parts(self._names_by_filter(catalog, db, table, filter), max_parts)
        return self._partitions_named(catalog, db, table, names)

    def get_num_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str) -> int:
        catalog, db, table = self._table(db_name, tbl_name)
        return len(self._names_by_filter(catalog, db, table, filter))

    # ---- batches (hmsproxy extension) --------------------------------------------------------------

    def get_partitions_batch(self, req: hms.PartitionBatchRequest) -> hms.PartitionBatchResponse:
        batch = self._batch(req, names_only=False)
        return hms.PartitionBatchResponse(partitions=cast("list[hms.Partition]", batch.items),
                                          nextPartitionId=batch.next_id,
                                          minPartitionId=batch.min_id, maxPartitionId=batch.max_id)

    def get_partition_names_batch(self, req: hms.PartitionBatchRequest) -> hms.PartitionNameBatchResponse:
        batch = self._batch(req, names_only=True)
        return hms.PartitionNameBatchResponse(names=cast("list[str]", batch.items), nextPartitionId=batch.next_id,
                                              minPartitionId=batch.min_id, maxPartitionId=batch.max_id)

    def _batch(self, req: hms.PartitionBatchRequest, names_only: bool) -> PartitionBatch:
        catalog, db, table = self._table(req.dbName, req.tblName, req.catName)
        size = req.batchSize if req.batchSize is not None else 1000
        if not 1 <= size <= MAX_BATCH_SIZE:
            raise hms.MetaException(message=f"batchSize must be between 1 and {MAX_BATCH_SIZE}, got {size}")
        predicate = None
        if req.filter:
            try:
                predicate = compile_filter(req.filter, partition_key_types(table))
            except FilterError as exc:
                raise _filter_refused(exc) from None
        from_id = req.fromPartitionId if req.fromPartitionId is not None else 0
        to_id = req.toPartitionId if req.toPartitionId is not None else -1
        return self.ctx.store.get_partition_batch(catalog, db, present(table.tableName), from_id, to_id, size,
                                                  predicate, names_only)

    def get_partitions_by_expr(self, req: hms.PartitionsByExprRequest) -> hms.PartitionsByExprResult:
        """Not served: the expression is a Kryo-serialised Java object tree. Answered as a metastore without
        the method answers (UNKNOWN_METHOD), which Hive's client takes as its cue to fetch the partition
        names and prune them itself (HiveMetaStoreClient.listPartitionsByExpr raises
        IncompatibleMetastoreException, which PartitionPruner catches); a MetaException would fail the query."""
        raise TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                    "get_partitions_by_expr is not supported by hmsproxy; use get_partitions_by_filter")

    def get_partitions_by_names(self, db_name: str, tbl_name: str, names: Sequence[str]) -> list[hms.Partition]:
        catalog, db, table = self._table(db_name, tbl_name)
        return self._partitions_named(catalog, db, table, list(names or []))

    @with_snapshot
    def get_partitions_by_names_req(self, req: hms.GetPartitionsByNamesRequest) -> hms.GetPartitionsByNamesResult:
        catalog, db, table = self._table(req.db_name, req.tbl_name)
        parts = self._partitions_named(catalog, db, table, list(req.names or []))
        return hms.GetPartitionsByNamesResult(partitions=parts)

    # ---- alter / rename ----------------------------------------------------------------------------

    def alter_partition(self, db_name: str, tbl_name: str, new_part: hms.Partition) -> None:
        self._alter_partitions(db_name, tbl_name, None, [new_part], None)

    def alter_partition_with_environment_context(self, db_name: str, tbl_name: str, new_part: hms.Partition,
                                                 environment_context: hms.EnvironmentContext) -> None:
        self._alter_partitions(db_name, tbl_name, None, [new_part], environment_context)

    def alter_partitions(self, db_name: str, tbl_name: str, new_parts: Sequence[hms.Partition]) -> None:
        self._alter_partitions(db_name, tbl_name, None, new_parts, None)

    def alter_partitions_with_environment_context(self, db_name: str, tbl_name: str, new_parts: Sequence[hms.Partition],
                                                  environment_context: hms.EnvironmentContext) -> None:
        self._alter_partitions(db_name, tbl_name, None, new_parts, environment_context)

    def alter_partitions_req(self, req: hms.AlterPartitionsRequest) -> hms.AlterPartitionsResponse:
        parts = list(req.partitions or [])
        if req.writeId is not None and req.writeId > 0:
            parts = [shallow_copy(p, writeId=req.writeId) for p in parts]
        self._alter_partitions(req.dbName, req.tableName, req.catName, parts, req.environmentContext)
        return hms.AlterPartitionsResponse()

    def _alter_partitions(self, db_name: str, tbl_name: str, cat: str | None, new_parts: Sequence[hms.Partition],
                          env: hms.EnvironmentContext | None) -> None:
        try:
            catalog, db, table = self._table(db_name, tbl_name, cat)
        except hms.NoSuchObjectException as exc:
            raise hms.InvalidOperationException(message=exc.message) from None
        props = env_properties(env)
        olds = self._partitions_to_alter(catalog, db, table, new_parts or [])
        prepared = []
        for part, (values, old) in zip(new_parts, olds):
            part = copy.deepcopy(part)
            part.values = values
            part.dbName, part.tableName, part.catName = db, table.tableName, catalog
            part.createTime = old.createTime
            sd = present(part.sd)  # _partitions_to_alter refused a part without one
            sd.location = checked_location(sd.location, hms.InvalidOperationException) or present(old.sd).location
            part.parameters = dict(part.parameters or {})
            if ZERO.fullmatch(part.parameters.get(DDL_TIME, "0")):
                part.parameters[DDL_TIME] = str(now())
            if not is_view(table):
                update_altered_partition_stats(self.ctx.warehouse, old.parameters or {}, part.parameters,
                                               sd.location, props)
            prepared.append(part)
        events = [messages.alter_partition(table, old, new) for (_, old), new in zip(olds, prepared)]
        self.ctx.store.alter_partitions(catalog, db, present(table.tableName), prepared, journal=Journal(events))

    def _partitions_to_alter(self, catalog: str, db: str, table: hms.Table,
                             new_parts: Sequence[hms.Partition]) -> list[tuple[list[str], hms.Partition]]:
        """The checked values of each new partition and the stored one it replaces, read in one call; the first
        part that cannot be altered (malformed, bad values, missing) refuses the whole call, as in Hive."""
        keys = [present(k.name) for k in table.partitionKeys or []]
        values: list[list[str] | Exception] = []
        for part in new_parts:
            if part is None or part.sd is None:
                values.append(hms.InvalidOperationException(
                    message="partition and its storage descriptor must be given"))
                continue
            try:
                values.append(check_partition_values(table, part.values))
            except hms.MetaException as exc:
                values.append(hms.InvalidOperationException(message=f"alter is not possible: {exc.message}"))
        names = [make_partition_name(keys, v) for v in values if not isinstance(v, Exception)]
        stored = {make_partition_name(keys, present(p.values)): p
                  for p in self.ctx.store.get_partitions_by_names(catalog, db, present(table.tableName), names)
                  } if names else {}
        olds = []
        for checked in values:
            if isinstance(checked, Exception):
                raise checked
            old = stored.get(make_partition_name(keys, checked))
            if old is None:
                raise hms.InvalidOperationException(
                    message=f"alter is not possible: {partition_missing_message(checked)}")
            olds.append((checked, old))
        return olds

    def rename_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str], new_part: hms.Partition) -> None:
        self._rename_partition(db_name, tbl_name, None, part_vals, new_part)

    def rename_partition_req(self, req: hms.RenamePartitionRequest) -> hms.RenamePartitionResponse:
        self._rename_partition(req.dbName, req.tableName, req.catName, req.partVals, req.newPart)
        return hms.RenamePartitionResponse()

    def _rename_partition(self, db_name: str, tbl_name: str, cat: str | None, part_vals: Sequence[str],
                          new_part: hms.Partition) -> None:
        if not part_vals:
            return self._alter_partitions(db_name, tbl_name, cat, [new_part], None)
        try:
            catalog, db, table = self._table(db_name, tbl_name, cat)
            old_values = check_partition_values(table, part_vals)
            old = self.ctx.store.get_partition(catalog, db, present(table.tableName), old_values)
        except (hms.NoSuchObjectException, hms.MetaException) as exc:
            raise hms.InvalidOperationException(message=f"Unable to rename partition: {exc.message}") from None
        if new_part is None:
            raise hms.InvalidOperationException(message="new partition must be given")
        part = copy.deepcopy(new_part)
        try:
            part.values = check_partition_values(table, part.values)
        except hms.MetaException as exc:
            raise hms.InvalidOperationException(message=exc.message) from None
        part.dbName, part.tableName, part.catName = db, table.tableName, catalog
        tbl = present(table.tableName)
        if self.ctx.store.get_partitions_by_names(catalog, db, tbl, [self._name(table, part.values)]):
            raise hms.InvalidOperationException(message=partition_exists_message(db, tbl, part.values))
        part.sd = part.sd or copy.deepcopy(present(old.sd))
        part.parameters = dict(part.parameters or {})
        part.parameters[DDL_TIME] = str(now())
        part.createTime = old.createTime
        move: tuple[str | None, str] | None = None
        if is_external(table):
            part.sd.location = present(old.sd).location
        else:
            part.sd.location = join(cast(str, present(table.sd).location), self._name(table, part.values))
            move = (present(old.sd).location, part.sd.location)
        with self.ctx.warehouse.changes() as work:
            if move:
                try:
                    work.move(*move)
                except (FileExistsError, PermissionError) as exc:
                    raise hms.InvalidOperationException(message=str(exc)) from None
            # HMS computes them when the new partition lacks them, but before it moves the data (0 files, 0
            # bytes); here after the move, so that they are true (README: Hive 2.3 or Hive 4)
            update_quick_stats(self.ctx.warehouse, part.parameters, part.sd.location, new_dir=False, force=False,
                               env={})
            self.ctx.store.rename_partition(catalog, db, present(table.tableName), old_values, part,
                                            journal=Journal.of(messages.alter_partition(table, old, part)))
        return None

    # ---- drop --------------------------------------------------------------------------------------

    def drop_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str], deleteData: bool) -> bool:
        catalog, db, table = self._table(db_name, tbl_name)
        return self._drop_by_names(catalog, db, table, [self._name(table, check_partition_values(table, part_vals))],
                                   bool(deleteData), if_exists=False) is not None

    def drop_partition_with_environment_context(self, db_name: str, tbl_name: str, part_vals: Sequence[str],
                                                deleteData: bool, environment_context: hms.EnvironmentContext) -> bool:
        return self.drop_partition(db_name, tbl_name, part_vals, deleteData)

    def drop_partition_by_name(self, db_name: str, tbl_name: str, part_name: str, deleteData: bool) -> bool:
        catalog, db, table = self._table(db_name, tbl_name)
        name = self._name(table, self._values_from_name(table, part_name))
        return self._drop_by_names(catalog, db, table, [name], bool(deleteData), if_exists=False) is not None

    def drop_partition_by_name_with_environment_context(self, db_name: str, tbl_name: str, part_name: str,
                                                        deleteData: bool,
                                                        environment_context: hms.EnvironmentContext) -> bool:
        return self.drop_partition_by_name(db_name, tbl_name, part_name, deleteData)

    def drop_partitions_req(self, req: hms.DropPartitionsRequest) -> hms.DropPartitionsResult:
        catalog, db, table = self._table(req.dbName, req.tblName, req.catName)
        spec = req.parts
        if spec is None or (spec.names is None and not spec.exprs):
            raise hms.MetaException(message="drop_partitions_req needs partition names")
        if spec.exprs:
            raise hms.MetaException(message="dropping partitions by expression is not supported by hmsproxy; "
                                            "pass partition names")
        names = []
        for name in present(spec.names):
            try:
                names.append(self._name(table, self._values_from_name(table, name)))
            except hms.NoSuchObjectException:
                names.append(name)  # names no partition: missing, as HMS sees it
        dropped = self._drop_by_names(catalog, db, table, names, bool(req.deleteData),
                                      if_exists=req.ifExists is not False)
        return hms.DropPartitionsResult(partitions=dropped if req.needResult is not False else None)

    def _drop_by_names(self, catalog: str, db: str, table: hms.Table, names: Sequence[str], delete_data: bool,
                       if_exists: bool) -> list[hms.Partition]:
        dropped = self.ctx.store.drop_partitions(catalog, db, present(table.tableName), names,
                                                 if_exists)  # logs its event
        if delete_data and not is_external(table):
            for part in dropped:
                self.ctx.warehouse.remove(part.sd.location if part.sd else None)
        return dropped

    # ---- name utilities ----------------------------------------------------------------------------

    def partition_name_has_valid_characters(self, part_vals: Sequence[str], throw_exception: bool) -> bool:
        return True

    def partition_name_to_vals(self, part_name: str) -> list[str]:
        return list(self.partition_name_to_spec(part_name).values())

    def partition_name_to_spec(self, part_name: str) -> dict[str, str]:
        """Hive's reading (Warehouse.makeSpecFromName): every path component of the form key=value with both
        sides non-empty (the key up to the last `=`), the others skipped; a repeated key keeps its first
        place and its last value. So `garbage` is {} and `k=1/garbage` is {k: 1}, never an error."""
        spec: dict[str, str] = {}
        for component in (part_name or "").split("/"):
            match = PATH_COMPONENT.fullmatch(component)
            if match:
                spec[unescape_path_name(match.group(1))] = unescape_path_name(match.group(2))
        return spec

