"""plan_scan's request handling on real tables: malformed requests, snapshots, schemas, stats, incremental scans,
equality deletes, null partitions and plan tasks."""
from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.rest.scan_planning import PlanCompleted
from pyiceberg.expressions import EqualTo
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.table import Table
from pyiceberg.transforms import TruncateTransform
from pyiceberg.typedef import Record
from pyiceberg.types import BinaryType

from hmsproxy.iceberg.expressions import PlanRequestError
from hmsproxy.iceberg.manifest_cache import ManifestCache
from hmsproxy.iceberg.plan_tasks import PlanTasks, UnknownPlan, UnknownPlanTask
from hmsproxy.iceberg.planning import fetch_tasks, plan_scan
from support.iceberg_tables import SCHEMA, build_table, catalog, commit_delete_files, rows


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return build_table(tmp_path_factory.mktemp("planning-requests"), seed=7)


def _plan(table: Table, request: dict[str, Any], tasks: PlanTasks | None = None) -> dict[str, Any]:
    return plan_scan(table.metadata, table.io, request, ManifestCache(10_000_000, None),
                     tasks if tasks is not None else PlanTasks(max_plans=4, ttl_s=60))


def _paths(reply: dict[str, Any]) -> set[str]:
    return {task["data-file"]["file-path"] for task in reply["file-scan-tasks"]}


@pytest.mark.parametrize(("request_body", "field"), [
    ([], "body"),
    ({"snapshot-id": "1"}, "snapshot-id"),
    ({"snapshot-id": True}, "snapshot-id"),
    ({"snapshot-id": 42}, "snapshot-id"),
    ({"case-sensitive": "yes"}, "case-sensitive"),
    ({"select": "id"}, "select"),
    ({"select": ["nope"]}, "select"),
    ({"stats-fields": ["id", 3]}, "stats-fields"),
    ({"stats-fields": ["nope"]}, "stats-fields"),
    ({"filter": {"type": "bogus", "term": "id", "value": 1}}, "filter"),
    ({"filter": {"type": "eq", "term": "nope", "value": 1}}, "filter.value"),
    ({"filter": {"type": "eq", "term": "id"}}, "filter"),
    ({"filter": {"type": "eq", "term": "id", "value": "ten"}}, "filter"),
    ({"filter": {"type": "eq", "term": "id", "value": [1]}}, "filter.value"),
    ({"filter": {"type": "in", "term": "cat", "values": "ab"}}, "filter.values"),
    ({"filter": {"type": "and", "left": True}}, "filter"),
    ({"filter": {"type": "not", "child": {"type": "is-null", "term": 7}}}, "filter.child.term"),
    ({"filter": {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "d"}, "value": 1}},
     "filter.term"),
    ({"filter": "id > 1"}, "filter"),
    ({"filter": {"type": "starts-with", "term": "id", "value": "1"}}, "filter"),
    ({"start-snapshot-id": 1}, "end-snapshot-id"),
    ({"end-snapshot-id": 1}, "start-snapshot-id"),
    ({"min-rows-requested": "many"}, "min-rows-requested"),
])
def test_malformed_requests_name_their_field(table: Table, request_body: Any, field: str) -> None:
    with pytest.raises(PlanRequestError) as raised:
        _plan(table, request_body)
    assert str(raised.value).startswith(field) or field == "body"


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=12),
                        st.sampled_from(["2024-01-02", "2024-01-02T10:00:00", "1.5", "CAFE", "a", "beta"]))


@st.composite
def loose_expressions(draw: st.DrawFn, depth: int = 2) -> Any:
    """Expression-shaped JSON, often wrong: any type name, term, value or child."""
    kind = draw(st.sampled_from(["true", "false", "and", "or", "not", "eq", "not-eq", "lt", "lt-eq", "gt", "gt-eq",
                                 "starts-with", "not-starts-with", "in", "not-in", "is-null", "not-null", "is-nan",
                                 "not-nan", "bogus"]))
    body: dict[str, Any] = {"type": kind}
    if depth > 0 and kind in ("and", "or", "not"):
        for key in (["child"] if kind == "not" else ["left", "right"]):
            if draw(st.integers(0, 9)):
                body[key] = draw(loose_expressions(depth - 1))
    body["term"] = draw(st.sampled_from(["id", "cat", "d", "amount", "name", "ID", "nope", 3]))
    if draw(st.booleans()):
        body["value"] = draw(JSON_VALUES)
    if draw(st.booleans()):
        body["values"] = draw(st.one_of(st.lists(JSON_VALUES, max_size=3), JSON_VALUES))
    return body if draw(st.integers(0, 9)) else draw(JSON_VALUES)


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter_json=loose_expressions(), case_sensitive=st.booleans())
def test_any_filter_plans_or_is_a_request_error(table: Table, filter_json: Any, case_sensitive: bool) -> None:
    try:
        reply = _plan(table, {"filter": filter_json, "case-sensitive": case_sensitive})
    except PlanRequestError:
        return
    PlanCompleted.model_validate_json(json.dumps(reply))


def test_case_insensitive_names_bind_only_when_asked(table: Table) -> None:
    request = {"filter": {"type": "eq", "term": "CAT", "value": "a"}, "select": ["ID"]}
    with pytest.raises(PlanRequestError):
        _plan(table, request)
    expected = {task.file.file_path for task in table.scan(row_filter=EqualTo("cat", "a")).plan_files()}
    assert _paths(_plan(table, {**request, "case-sensitive": False})) == expected


def test_spec_true_false_forms(table: Table) -> None:
    everything = _paths(_plan(table, {}))
    assert everything
    assert _paths(_plan(table, {"filter": {"type": "true"}})) == everything
    assert _paths(_plan(table, {"filter": {"type": "false"}})) == set()
    assert _paths(_plan(table, {"filter": False})) == set()


def test_unknown_incremental_range_is_a_request_error(table: Table) -> None:
    snapshots = table.metadata.snapshots
    with pytest.raises(PlanRequestError, match="start-snapshot-id"):
        _plan(table, {"start-snapshot-id": snapshots[-1].snapshot_id, "end-snapshot-id": snapshots[0].snapshot_id})


def test_incremental_append_scan_matches_pyiceberg(table: Table) -> None:
    snapshots = table.metadata.snapshots
    for start, end in ((0, len(snapshots) - 1), (1, 3), (2, len(snapshots) - 1)):
        start_id, end_id = snapshots[start].snapshot_id, snapshots[end].snapshot_id
        expected = {task.file.file_path for task in table.incremental_append_scan(
            from_snapshot_id_exclusive=start_id, to_snapshot_id_inclusive=end_id).plan_files()}
        reply = _plan(table, {"start-snapshot-id": start_id, "end-snapshot-id": end_id})
        assert _paths(reply) == expected
        assert all("delete-file-references" not in task for task in reply["file-scan-tasks"])


def test_table_without_snapshot_plans_nothing(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    cat.create_namespace("ns")
    empty = cat.create_table("ns.empty", SCHEMA)
    reply = _plan(empty, {"filter": {"type": "eq", "term": "id", "value": 1}})
    assert reply["status"] == "completed" and reply["file-scan-tasks"] == [] and "plan-tasks" not in reply
    PlanCompleted.model_validate_json(json.dumps(reply))


def test_stats_fields_send_only_those_columns_in_spec_encoding(table: Table) -> None:
    reply = _plan(table, {"stats-fields": ["id", "d"], "filter": {"type": "gt-eq", "term": "id", "value": 0}})
    parsed = PlanCompleted.model_validate_json(json.dumps(reply))
    assert all(task.data_file.value_counts is not None for task in parsed.file_scan_tasks)
    data_files = [task["data-file"] for task in reply["file-scan-tasks"]]
    assert data_files
    expected = {task.file.file_path: task.file for task in table.scan().plan_files()}
    for data_file in data_files:
        original = expected[data_file["file-path"]]
        assert data_file["value-counts"]["keys"] == [1, 3]
        assert data_file["value-counts"]["values"] == [original.value_counts[1], original.value_counts[3]]
        lower = dict(zip(data_file["lower-bounds"]["keys"], data_file["lower-bounds"]["values"]))
        assert set(lower) == {1, 3}
        assert isinstance(lower[1], int) and lower[1] == int.from_bytes(original.lower_bounds[1], "little")
        assert lower[3].startswith("2024-01-0")   # a date as the spec's ISO string
    plain = _plan(table, {})
    assert all("value-counts" not in task["data-file"] and "lower-bounds" not in task["data-file"]
               for task in plain["file-scan-tasks"])


def test_use_snapshot_schema_binds_to_the_snapshot_schema(tmp_path: Path) -> None:
    table = build_table(tmp_path, seed=3, appends=2)
    old_snapshot = table.metadata.current_snapshot()
    assert old_snapshot is not None
    with table.update_schema() as update:
        update.add_column("extra", BinaryType())
    filter_on_new = {"type": "eq", "term": "extra", "value": "CAFE"}
    request = {"snapshot-id": old_snapshot.snapshot_id, "filter": filter_on_new}
    current = _plan(table, request)   # the current schema has the column: binary values are hex
    assert _paths(current) == {task.file.file_path for task in table.scan(
        snapshot_id=old_snapshot.snapshot_id, row_filter=EqualTo("extra", bytes.fromhex("CAFE"))).plan_files()}
    with pytest.raises(PlanRequestError, match="no column 'extra'"):
        _plan(table, {**request, "use-snapshot-schema": True})
    with pytest.raises(PlanRequestError, match="not hexadecimal"):
        _plan(table, {"filter": {**filter_on_new, "value": "xyz"}})


def test_null_partition_values_are_json_null_and_the_filter_stays_whole(tmp_path: Path) -> None:
    """pyiceberg 0.12's client refuses null partition values and its residual evaluator raises on them: the
    server still answers, with JSON null and the full filter as the residual of those files."""
    cat = catalog(tmp_path)
    cat.create_namespace("ns")
    spec = PartitionSpec(PartitionField(5, 1000, TruncateTransform(1), "name_trunc"))
    table = cat.create_table("ns.nulls", SCHEMA, partition_spec=spec)
    table.append(rows(random.Random(5), 0, 40))
    name_filter = {"type": "or", "left": {"type": "is-null", "term": "name"},
                   "right": {"type": "lt", "term": "name", "value": "c"}}
    reply = _plan(table, {"filter": name_filter})
    by_partition = {tuple(task["data-file"]["partition"]): task["residual-filter"] for task in reply["file-scan-tasks"]}
    assert by_partition[(None,)] == name_filter
    assert by_partition[("a",)] is True
    expected = {task.file.file_path for task in table.scan(row_filter=EqualTo("id", 3)).plan_files()}
    assert _paths(_plan(table, {"filter": {"type": "eq", "term": "id", "value": 3}})) == expected


def test_equality_deletes_apply_to_older_data_of_their_partition(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    cat.create_namespace("ns")
    spec = PartitionSpec(PartitionField(2, 1000, TruncateTransform(1), "cat_trunc"))
    table = cat.create_table("ns.eq", SCHEMA, partition_spec=spec, properties={"format-version": "2"})
    table.append(pa.Table.from_pylist([{"id": 1, "cat": "a"}, {"id": 2, "cat": "b"}], schema=rows(
        random.Random(1), 0, 1).schema))
    older = {task.file.partition[0]: task.file.file_path for task in table.scan().plan_files()}
    deletes = []
    for value in ("a", "b"):
        delete_file = DataFile.from_args(
            content=DataFileContent.EQUALITY_DELETES, file_path=f"{table.location()}/data/{uuid.uuid4()}-eq.parquet",
            file_format=FileFormat.PARQUET, partition=Record(value), record_count=1, file_size_in_bytes=10,
            equality_ids=[1])
        delete_file.spec_id = table.spec().spec_id
        deletes.append(delete_file)
    commit_delete_files(table, deletes[:1])
    table.append(pa.Table.from_pylist([{"id": 3, "cat": "a"}], schema=rows(random.Random(1), 0, 1).schema))
    appended = table.current_snapshot()
    assert appended is not None
    newer = {entry.data_file.file_path for manifest in appended.manifests(table.io)
             if manifest.added_snapshot_id == appended.snapshot_id for entry in manifest.fetch_manifest_entry(table.io)}
    same_commit = DataFile.from_args(
        content=DataFileContent.DATA, file_path=f"{table.location()}/data/{uuid.uuid4()}.parquet",
        file_format=FileFormat.PARQUET, partition=Record("b"), record_count=1, file_size_in_bytes=10)
    same_commit.spec_id = table.spec().spec_id
    commit_delete_files(table, deletes[1:], data_files=(same_commit,))   # same sequence number: not applied
    reply = _plan(table, {})
    PlanCompleted.model_validate_json(json.dumps(reply))
    assert all(delete["content"] == "equality-deletes" and delete["equality-ids"] == [1]
               for delete in reply["delete-files"])
    delete_paths = [delete["file-path"] for delete in reply["delete-files"]]
    by_file = {task["data-file"]["file-path"]: [delete_paths[i] for i in task.get("delete-file-references", [])]
               for task in reply["file-scan-tasks"]}
    assert by_file == {older["a"]: [deletes[0].file_path], older["b"]: [deletes[1].file_path], newer.pop(): [],
                       same_commit.file_path: []}


def test_plan_tasks_chunk_fetch_get_cancel_and_expire(table: Table) -> None:
    now = [1000.0]
    tasks = PlanTasks(max_plans=2, ttl_s=30, tasks_per_chunk=2, clock=lambda: now[0])
    reply = _plan(table, {}, tasks)
    assert len(reply["file-scan-tasks"]) == 2
    fetched = [fetch_tasks({"plan-task": token}, tasks) for token in reply["plan-tasks"]]
    assert all(1 <= len(chunk["file-scan-tasks"]) <= 2 for chunk in fetched)
    assert _paths(reply) | {task["data-file"]["file-path"] for chunk in fetched for task in chunk["file-scan-tasks"]} \
        == _paths(_plan(table, {}))
    assert fetch_tasks({"plan-task": reply["plan-tasks"][0]}, tasks) == fetched[0]   # a retried fetch
    assert tasks.get(reply["plan-id"]) == {"status": "completed", "plan-tasks": reply["plan-tasks"]}
    with pytest.raises(UnknownPlanTask):
        fetch_tasks({"plan-task": reply["plan-id"] + "-999"}, tasks)
    with pytest.raises(PlanRequestError):
        fetch_tasks({"plan-task": 5}, tasks)
    tasks.cancel(reply["plan-id"])
    with pytest.raises(UnknownPlan):
        tasks.get(reply["plan-id"])
    with pytest.raises(UnknownPlanTask):
        fetch_tasks({"plan-task": reply["plan-tasks"][0]}, tasks)
    with pytest.raises(UnknownPlan):
        tasks.cancel(reply["plan-id"])

    first, second, third = (_plan(table, {}, tasks)["plan-id"] for _ in range(3))
    with pytest.raises(UnknownPlan):
        tasks.get(first)   # evicted: at most two plans kept
    assert tasks.get(second)["status"] == tasks.get(third)["status"] == "completed"
    now[0] += 31
    with pytest.raises(UnknownPlan):
        tasks.get(third)   # expired
    assert len(tasks) == 0
