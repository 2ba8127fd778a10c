"""Server-side plans equal pyiceberg's own client-side plans, read back through pyiceberg's REST client models.

For random filters, snapshots and case sensitivity, plan_scan's reply (serialised to JSON, parsed by pyiceberg
0.12's PlanningResponse/ScanTasks models and turned into FileScanTasks by the client's own conversion, plan
tasks followed) must give exactly the data files, delete files per data file and residuals that
`table.scan(...).plan_files()` gives on the same table.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pyiceberg.catalog.rest.scan_planning import PlanningResponse, PlanTableScanRequest, ScanTasks
from pyiceberg.expressions import BooleanExpression
from pyiceberg.table import FileScanTask, Table

from hmsproxy.iceberg.expressions import expression_json
from hmsproxy.iceberg.manifest_cache import ManifestCache
from hmsproxy.iceberg.plan_tasks import PlanTasks
from hmsproxy.iceberg.planning import fetch_tasks, plan_scan
from support.iceberg_filters import filters
from support.iceberg_tables import build_table

PLANNING_RESPONSE: TypeAdapter[Any] = TypeAdapter(PlanningResponse)
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Table]:
    root = tmp_path_factory.mktemp("planning-parity")
    return {seed: build_table(root, seed) for seed in SEEDS}


@st.composite
def scans(draw: st.DrawFn) -> tuple[int, BooleanExpression, bool, int | None]:
    case_sensitive = draw(st.booleans())
    seed = draw(st.sampled_from(SEEDS))
    return seed, draw(filters(case_sensitive)), case_sensitive, draw(st.integers(0, 20))


def _shape(tasks: list[FileScanTask]) -> dict[str, tuple[list[str], Any]]:
    return {task.file.file_path: (sorted(delete.file_path for delete in task.delete_files),
                                  expression_json(task.residual)) for task in tasks}


# Shared by every example, so most plans read a warm cache, as a server's do.
CACHE = ManifestCache(50_000_000, None)


def _served(table: Table, request: dict[str, Any], chunk: int) -> list[FileScanTask]:
    """plan_scan's answer as pyiceberg's REST client reads it: JSON on the wire, its models, its conversion."""
    tasks = PlanTasks(max_plans=4, ttl_s=60, tasks_per_chunk=chunk)
    reply = plan_scan(table.metadata, table.io, request, CACHE, tasks)
    parsed = PLANNING_RESPONSE.validate_json(json.dumps(reply))
    planned = [FileScanTask.from_rest_response(task, parsed.delete_files) for task in parsed.file_scan_tasks]
    pending = list(parsed.plan_tasks)
    while pending:
        batch = ScanTasks.model_validate_json(json.dumps(fetch_tasks({"plan-task": pending.pop(0)}, tasks)))
        planned += [FileScanTask.from_rest_response(task, batch.delete_files) for task in batch.file_scan_tasks]
        pending += batch.plan_tasks
    return planned


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scan=scans())
def test_server_plan_equals_client_plan(tables: dict[int, Table], scan: tuple[int, Any, bool, int]) -> None:
    seed, row_filter, case_sensitive, snapshot_index = scan
    table = tables[seed]
    snapshots = table.metadata.snapshots
    snapshot_id = snapshots[snapshot_index % len(snapshots)].snapshot_id
    # The request as pyiceberg's client writes it (its own model and serialisation).
    request = json.loads(PlanTableScanRequest(snapshot_id=snapshot_id, filter=row_filter,
                                              case_sensitive=case_sensitive).model_dump_json(by_alias=True,
                                                                                             exclude_none=True))
    expected = _shape(list(table.scan(row_filter=row_filter, snapshot_id=snapshot_id,
                                      case_sensitive=case_sensitive).plan_files()))
    served = _served(table, request, chunk=1 + snapshot_index % 4)
    assert len(served) == len(expected)
    assert _shape(served) == expected


@pytest.mark.parametrize("seed", SEEDS)
def test_whole_table_with_deletes_and_chunks(tables: dict[int, Table], seed: int) -> None:
    """The current snapshot unfiltered: every live file, the position deletes the table holds matched."""
    table = tables[seed]
    expected = _shape(list(table.scan().plan_files()))
    assert any(deletes for deletes, _ in expected.values()), "the table should hold position deletes"
    for chunk in (1, 3, 1000):
        assert _shape(_served(table, {}, chunk)) == expected
