"""Server-side scan planning (the REST spec's planTableScan and fetchScanTasks), answered from ManifestCache.

The Iceberg logic is pyiceberg's: its ManifestGroupPlanner builds the manifest, partition and metrics evaluators,
its residual_evaluator_of the residual ones, its DeleteFileIndex matches position deletes to data files by
partition, path bounds and sequence number, and its incremental-append rules pick the snapshots of an
incremental scan. What is done here is what pyiceberg does not offer apart from reading the manifests itself:
running those evaluators over entries that come from the cache, matching equality deletes (pyiceberg has none),
and writing the spec's JSON reply.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import ResidualEvaluator, residual_evaluator_of
from pyiceberg.io import FileIO
from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER, ManifestContent, ManifestEntryStatus, ManifestFile
from pyiceberg.schema import Schema
from pyiceberg.table import IncrementalAppendScan, ManifestGroupPlanner, _min_sequence_number
from pyiceberg.table.delete_file_index import DeleteFileIndex
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Operation, Snapshot, ancestors_between_ids
from pyiceberg.typedef import Record
from pyiceberg.types import IcebergType

from hmsproxy.iceberg.content_files import content_file_json
from hmsproxy.iceberg.expressions import PlanRequestError, expression_json, parse_filter
from hmsproxy.iceberg.manifest_cache import CachedEntry, ManifestCache
from hmsproxy.iceberg.manifest_reads import read_ahead
from hmsproxy.iceberg.metrics_eval import metrics_evaluator
from hmsproxy.iceberg.plan_tasks import PlanTasks, ScanTasksJson, UnknownPlan, UnknownPlanTask

__all__ = ["PlanRequestError", "PlanTasks", "UnknownPlan", "UnknownPlanTask", "fetch_tasks", "plan_scan"]

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2


@dataclass(frozen=True)
class _Scan:
    """A plan request, checked against the table."""

    metadata: TableMetadata          # with the schema the scan binds to made current (use-snapshot-schema)
    snapshot: Snapshot | None        # the snapshot to read; the end snapshot of an incremental scan
    start_snapshot_id: int | None    # set for an incremental scan (exclusive)
    row_filter: BooleanExpression
    case_sensitive: bool
    stats_ids: frozenset[int]


@dataclass(frozen=True)
class _Task:
    data_file: CachedEntry
    deletes: list[CachedEntry]
    residual: Any   # the residual filter's JSON


def plan_scan(metadata: TableMetadata, io: FileIO, request: dict[str, Any], cache: ManifestCache,
              tasks: PlanTasks) -> dict[str, Any]:
    """The spec's PlanTableScanResult (always "completed") for a PlanTableScanRequest's parsed JSON body.

    The first `tasks.tasks_per_chunk` file scan tasks are answered inline; the rest are kept in `tasks` and named
    as `plan-tasks` for fetch_tasks. Raises PlanRequestError for a request that cannot be planned as asked.
    """
    scan = _read_request(metadata, request)
    planned = _plan(scan, io, cache)
    size = tasks.tasks_per_chunk
    chunks = [_chunk_json(planned[start:start + size], scan) for start in range(0, len(planned), size)]
    first = chunks[0] if chunks else {"file-scan-tasks": [], "delete-files": []}
    plan_id, tokens = tasks.add(chunks[1:])
    reply: dict[str, Any] = {"status": "completed", "plan-id": plan_id, **first}
    if tokens:
        reply["plan-tasks"] = tokens
    return reply


def fetch_tasks(request: dict[str, Any], tasks: PlanTasks) -> ScanTasksJson:
    """The spec's FetchScanTasksResult for a FetchScanTasksRequest's parsed JSON body."""
    if not isinstance(request, dict) or not isinstance(request.get("plan-task"), str):
        raise PlanRequestError("plan-task: a FetchScanTasksRequest needs the plan task as a string")
    return tasks.fetch(request["plan-task"])


def _optional(request: dict[str, Any], key: str, kind: type, default: Any = None) -> Any:
    value = request.get(key, default)
    if value is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
        return value
    raise PlanRequestError(f"{key}: expected {kind.__name__}, got {value!r}")


def _names(request: dict[str, Any], key: str) -> list[str] | None:
    names: list[str] | None = _optional(request, key, list)
    if names is not None and not all(isinstance(name, str) for name in names):
        raise PlanRequestError(f"{key}: expected a list of field names")
    return names


def _snapshot(metadata: TableMetadata, snapshot_id: int, key: str) -> Snapshot:
    snapshot = metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise PlanRequestError(f"{key}: the table has no snapshot {snapshot_id}")
    return snapshot


def _read_request(metadata: TableMetadata, request: dict[str, Any]) -> _Scan:
    if not isinstance(request, dict):
        raise PlanRequestError("the body must be a PlanTableScanRequest JSON object")
    snapshot_id = _optional(request, "snapshot-id", int)
    start_id = _optional(request, "start-snapshot-id", int)
    end_id = _optional(request, "end-snapshot-id", int)
    case_sensitive = _optional(request, "case-sensitive", bool, True)
    use_snapshot_schema = _optional(request, "use-snapshot-schema", bool, False)
    _optional(request, "min-rows-requested", int)   # a hint; every matching file is planned
    select, stats_fields = _names(request, "select"), _names(request, "stats-fields")

    if start_id is not None and end_id is None:
        raise PlanRequestError("end-snapshot-id: required with start-snapshot-id")
    if end_id is not None and start_id is None:
        raise PlanRequestError("start-snapshot-id: required with end-snapshot-id")
    if snapshot_id is not None and end_id is not None:
        raise PlanRequestError("snapshot-id: cannot be combined with start-snapshot-id and end-snapshot-id")
    if end_id is not None:
        snapshot: Snapshot | None = _snapshot(metadata, end_id, "end-snapshot-id")
    elif snapshot_id is not None:
        snapshot = _snapshot(metadata, snapshot_id, "snapshot-id")
    else:
        snapshot = metadata.current_snapshot()

    if use_snapshot_schema and snapshot is not None and snapshot.schema_id is not None:
        if snapshot.schema_id not in {schema.schema_id for schema in metadata.schemas}:
            raise PlanRequestError(f"use-snapshot-schema: the table has no schema {snapshot.schema_id}")
        metadata = metadata.model_copy(update={"current_schema_id": snapshot.schema_id})
    schema = metadata.schema()

    if select is not None:
        _field_ids(schema, select, case_sensitive, "select")
    row_filter = (parse_filter(request["filter"], schema, case_sensitive)
                  if request.get("filter") is not None else AlwaysTrue())
    stats_ids = frozenset(_field_ids(schema, stats_fields or [], case_sensitive, "stats-fields"))
    if start_id is not None and end_id is not None:
        try:
            IncrementalAppendScan(metadata, cast(FileIO, None), from_snapshot_id=start_id,
                                  to_snapshot_id=end_id)._validate_and_resolve_snapshots()
        except ValueError as exc:
            raise PlanRequestError(f"start-snapshot-id: {exc}") from exc
    return _Scan(metadata, snapshot, start_id, row_filter, case_sensitive, stats_ids)


def _field_ids(schema: Schema, names: list[str], case_sensitive: bool, key: str) -> list[int]:
    ids = []
    for name in names:
        try:
            ids.append(schema.find_field(name, case_sensitive).field_id)
        except ValueError as exc:
            raise PlanRequestError(f"{key}: no field {name!r} in the table's schema") from exc
    return ids


def _plan(scan: _Scan, io: FileIO, cache: ManifestCache) -> list[_Task]:
    if scan.snapshot is None:
        return []
    planner = ManifestGroupPlanner(scan.metadata, io, scan.row_filter, scan.case_sensitive)
    manifests = cache.manifests(io, scan.snapshot.manifest_list)
    keep: Callable[[CachedEntry], bool] = lambda _: True   # noqa: E731
    if scan.start_snapshot_id is not None:
        manifests, keep = _incremental(scan, manifests, cache, io)
    residuals = _Residuals(scan)
    entries = _entries(planner, residuals, manifests, cache, io)
    return _match(residuals, scan, [entry for entry in entries if keep(entry)])


def _incremental(scan: _Scan, manifests: tuple[ManifestFile, ...], cache: ManifestCache,
                 io: FileIO) -> tuple[tuple[ManifestFile, ...], Callable[[CachedEntry], bool]]:
    """pyiceberg's IncrementalAppendScan: files added by the append snapshots after the start, up to the end."""
    assert scan.snapshot is not None
    between = ancestors_between_ids(from_snapshot_id_exclusive=scan.start_snapshot_id,
                                    to_snapshot_id_inclusive=scan.snapshot.snapshot_id, table_metadata=scan.metadata)
    appends = {snapshot.snapshot_id: snapshot for snapshot in between
               if snapshot.summary is not None and snapshot.summary.operation == Operation.APPEND}
    by_path = {manifest.manifest_path: manifest for snapshot in appends.values()
               for manifest in cache.manifests(io, snapshot.manifest_list)
               if manifest.content == ManifestContent.DATA and manifest.added_snapshot_id in appends}
    return tuple(by_path.values()), lambda entry: (entry.snapshot_id in appends
                                                   and entry.status == ManifestEntryStatus.ADDED)


class _Residuals:
    """The residual filter of each partition, as JSON, worked out once a partition per plan."""

    def __init__(self, scan: _Scan) -> None:
        self._scan = scan
        self._specs, self._schema = scan.metadata.specs(), scan.metadata.schema()
        self._evaluators: dict[int, ResidualEvaluator] = {}
        self._residuals: dict[tuple[int, tuple[Any, ...]], Any] = {}

    def of(self, entry: CachedEntry) -> Any:
        key = (entry.spec_id, entry.partition)
        if key not in self._residuals:
            if entry.spec_id not in self._evaluators:
                self._evaluators[entry.spec_id] = residual_evaluator_of(
                    spec=self._specs[entry.spec_id], expr=self._scan.row_filter,
                    case_sensitive=self._scan.case_sensitive, schema=self._schema)
            self._residuals[key] = self._residual(self._evaluators[entry.spec_id], entry.partition)
        return self._residuals[key]

    def _residual(self, evaluator: ResidualEvaluator, partition: tuple[Any, ...]) -> Any:
        """pyiceberg 0.12's residual evaluator compares a null partition value with the literal and raises
        TypeError; the whole filter is then the residual (always right: a residual only spares the reader work)."""
        try:
            return expression_json(evaluator.residual_for(cast(Record, partition)))
        except TypeError:
            return expression_json(self._scan.row_filter)


def _entries(planner: ManifestGroupPlanner, residuals: _Residuals, manifests: Iterable[ManifestFile],
             cache: ManifestCache, io: FileIO) -> list[CachedEntry]:
    """ManifestGroupPlanner.plan_manifest_entries over cached entries: manifests pruned by their partition
    summaries, delete manifests older than every data file skipped, entries by partition and column metrics.

    Three shortcuts, each exact: manifests with the same partition summaries are evaluated once a plan (the
    manifest evaluator reads nothing else of them; daily appends give many manifests one day's summary); a
    partition is evaluated once a plan, not once a file; and a data file whose partition leaves no residual
    (every row matches) skips the metrics check, which could only confirm it (ruling out only empty files, as it
    does)."""
    manifest_evaluators: dict[int, Callable[[ManifestFile], bool]] = {}
    partition_evaluators: dict[int, Callable[[Any], bool]] = {}
    summaries_kept: dict[tuple[Any, ...], bool] = {}
    survivors = []
    for manifest in manifests:
        spec_id = manifest.partition_spec_id
        if spec_id not in manifest_evaluators:
            manifest_evaluators[spec_id] = planner._build_manifest_evaluator(spec_id)
            partition_evaluators[spec_id] = planner._build_partition_evaluator(spec_id)
        summaries = (spec_id, *((field.contains_null, field.contains_nan, field.lower_bound, field.upper_bound)
                                for field in manifest.partitions or ()))
        if summaries not in summaries_kept:
            summaries_kept[summaries] = manifest_evaluators[spec_id](manifest)
        if summaries_kept[summaries]:
            survivors.append(manifest)
    min_sequence_number = _min_sequence_number(survivors)
    unfiltered = isinstance(planner.row_filter, AlwaysTrue)
    metrics = metrics_evaluator(planner._build_metrics_evaluator())
    # By partition: None if the partition evaluator rules it out, else whether every row of it matches.
    partitions: dict[tuple[int, tuple[Any, ...]], bool | None] = {}
    kept: list[CachedEntry] = []
    wanted = [m for m in survivors if planner._check_sequence_number(min_sequence_number, m)]
    for manifest, entries in zip(wanted, _read(cache, io, wanted)):
        if unfiltered:
            kept.extend(entry for entry in entries if entry.record_count != 0)
            continue
        in_partition = partition_evaluators[manifest.partition_spec_id]
        for entry in entries:
            key = (entry.spec_id, entry.partition)
            if key not in partitions:
                partitions[key] = residuals.of(entry) is True if in_partition(entry) else None
            all_rows = partitions[key]
            if all_rows is None:
                continue
            if all_rows and entry.content == DATA:
                if entry.record_count != 0:
                    kept.append(entry)
            elif metrics(cast(Any, entry.metrics())):
                kept.append(entry)
    return kept


def _read(cache: ManifestCache, io: FileIO, manifests: list[ManifestFile]) -> Iterator[tuple[CachedEntry, ...]]:
    """The manifests' entries, in order. Those the cache lacks cost a read each from storage, a round trip that an
    object store makes tens of milliseconds long: they are read ahead, several at once, while earlier ones decode."""
    missing = [manifest for manifest in manifests if not cache.holds(manifest)]
    contents = read_ahead(io, [manifest.manifest_path for manifest in missing])
    read = {manifest.manifest_path for manifest in missing}
    for manifest in manifests:
        yield cache.entries(io, manifest, next(contents) if manifest.manifest_path in read else None)


class _EqualityDeletes:
    """Equality deletes apply to older data (lower sequence number) of their partition, or of every partition
    when written with an unpartitioned spec (spec: "Scan Planning")."""

    def __init__(self, metadata: TableMetadata) -> None:
        self._unpartitioned = {spec_id for spec_id, spec in metadata.specs().items() if spec.is_unpartitioned()}
        self._by_partition: dict[tuple[int, tuple[Any, ...]], list[tuple[int, CachedEntry]]] = {}
        self._global: list[tuple[int, CachedEntry]] = []

    def add(self, entry: CachedEntry) -> None:
        sequence_number = entry.sequence_number or INITIAL_SEQUENCE_NUMBER
        if entry.spec_id in self._unpartitioned:
            self._global.append((sequence_number, entry))
        else:
            self._by_partition.setdefault((entry.spec_id, entry.partition), []).append((sequence_number, entry))

    def for_data_file(self, sequence_number: int, data_file: CachedEntry) -> list[CachedEntry]:
        if not self._global and not self._by_partition:
            return []
        candidates = self._global + self._by_partition.get((data_file.spec_id, data_file.partition), [])
        return [entry for delete_sequence, entry in candidates if delete_sequence > sequence_number]


def _match(residuals: _Residuals, scan: _Scan, entries: list[CachedEntry]) -> list[_Task]:
    """ManifestGroupPlanner.plan_files' second half: each data file with its deletes and residual."""
    positions = DeleteFileIndex()
    equalities = _EqualityDeletes(scan.metadata)
    data: list[CachedEntry] = []
    for entry in entries:
        if entry.content == DATA:
            data.append(entry)
        elif entry.content == POSITION_DELETES:
            positions.add_delete_file(cast(Any, entry), partition_key=cast(Any, entry.partition))
        else:
            equalities.add(entry)
    planned = []
    for entry in data:
        sequence_number = entry.sequence_number or INITIAL_SEQUENCE_NUMBER
        deletes = positions.for_data_file(sequence_number, cast(Any, entry), partition_key=cast(Any, entry.partition))
        matched = sorted(cast(set[CachedEntry], deletes), key=lambda delete: delete.file_path)
        matched += equalities.for_data_file(sequence_number, entry)
        planned.append(_Task(entry, matched, residuals.of(entry)))
    return planned


def _chunk_json(chunk: list[_Task], scan: _Scan) -> ScanTasksJson:
    """One ScanTasks object: its file scan tasks and the delete files they reference, by index into its own list."""
    schema = scan.metadata.schema()
    specs = scan.metadata.specs()
    partition_types: dict[int, tuple[IcebergType, ...]] = {}

    def types_of(spec_id: int) -> tuple[IcebergType, ...]:
        if spec_id not in partition_types:
            partition_types[spec_id] = tuple(field.field_type for field in specs[spec_id].partition_type(schema).fields)
        return partition_types[spec_id]

    delete_index: dict[str, int] = {}
    delete_files: list[dict[str, Any]] = []
    scan_tasks: list[dict[str, Any]] = []
    for task in chunk:
        references = []
        for delete in task.deletes:
            if delete.file_path not in delete_index:
                delete_index[delete.file_path] = len(delete_files)
                delete_files.append(content_file_json(delete, types_of(delete.spec_id), (), schema))
            references.append(delete_index[delete.file_path])
        scan_task: dict[str, Any] = {
            "data-file": content_file_json(task.data_file, types_of(task.data_file.spec_id), scan.stats_ids, schema),
            "residual-filter": task.residual}
        if references:
            scan_task["delete-file-references"] = references
        scan_tasks.append(scan_task)
    return {"file-scan-tasks": scan_tasks, "delete-files": delete_files}
