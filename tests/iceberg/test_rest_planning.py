"""Server-side scan planning through the REST catalog: pyiceberg's REST client plans on the server (the config's
defaults ask it to), follows plan tasks, and reads the same rows HiveCatalog's client-side planning reads."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from support.hmsproxy_server import start_hmsproxy
from support.ports import free_port
from support.scrape import metric

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="cat"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # one file scan task per chunk: every plan of more than one file goes through plan tasks
    with start_hmsproxy(tmp_path_factory.mktemp("plans"), iceberg_rest_port=free_port(), metrics_port=free_port(),
                        iceberg_plan_chunk_tasks=1) as running:
        yield running


@pytest.fixture(scope="module")
def events(server) -> str:
    rest = RestCatalog("rest", uri=server.rest_uri)
    rest.create_namespace("plans")
    table = rest.create_table("plans.events", SCHEMA, partition_spec=SPEC)
    for first, cat in ((1, "a"), (10, "b"), (20, "a"), (30, "c")):
        table.append(pa.table({"id": list(range(first, first + 5)), "cat": [cat] * 5}))
    return "plans.events"


def post(server, path: str, body: object) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(server.rest_uri + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    return _send(request)


def _send(request: urllib.request.Request) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            raw = reply.read()
            return reply.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


@pytest.mark.parametrize("row_filter, expected", [
    ("cat = 'a'", [1, 2, 3, 4, 5, 20, 21, 22, 23, 24]),
    ("id >= 22 and id < 32", [22, 23, 24, 30, 31]),
    ("cat = 'zzz'", []),
    ("id > 0", list(range(1, 6)) + list(range(10, 15)) + list(range(20, 25)) + list(range(30, 35))),
])
def test_pyiceberg_plans_on_the_server_and_reads_what_client_side_planning_reads(server, events, row_filter,
                                                                                 expected):
    planned_before = metric(server, "hmsproxy_iceberg_requests_total", operation="plan_table_scan", code="200")
    rest_table = RestCatalog("rest", uri=server.rest_uri).load_table(events)
    rest_files = sorted(task.file.file_path for task in rest_table.scan(row_filter=row_filter).plan_files())
    hive_table = HiveCatalog("hive", uri=server.uri).load_table(events)
    hive_files = sorted(task.file.file_path for task in hive_table.scan(row_filter=row_filter).plan_files())
    assert rest_files == hive_files
    assert sorted(rest_table.scan(row_filter=row_filter).to_arrow()["id"].to_pylist()) == expected
    assert metric(server, "hmsproxy_iceberg_requests_total", operation="plan_table_scan",
                  code="200") >= planned_before + 2


def test_plans_are_followed_through_plan_tasks_and_can_be_cancelled(server, events):
    namespace, table = events.split(".")
    base = f"/v1/namespaces/{namespace}/tables/{table}"
    status, plan = post(server, base + "/plan", {})
    assert status == 200 and plan["status"] == "completed"
    assert len(plan["file-scan-tasks"]) == 1 and len(plan["plan-tasks"]) == 3
    fetched = [post(server, base + "/tasks", {"plan-task": token}) for token in plan["plan-tasks"]]
    assert all(status == 200 and len(tasks["file-scan-tasks"]) == 1 for status, tasks in fetched)
    paths = {t["data-file"]["file-path"] for t in plan["file-scan-tasks"]} | {
        t["data-file"]["file-path"] for _, tasks in fetched for t in tasks["file-scan-tasks"]}
    assert len(paths) == 4

    status_request = urllib.request.Request(server.rest_uri + base + f"/plan/{plan['plan-id']}", method="GET")
    assert _send(status_request)[0] == 200
    cancel = urllib.request.Request(server.rest_uri + base + f"/plan/{plan['plan-id']}", method="DELETE")
    assert _send(cancel)[0] == 204
    status, error = _send(status_request)
    assert status == 404 and error["error"]["type"] == "NoSuchPlanIdException"
    status, error = post(server, base + "/tasks", {"plan-task": plan["plan-tasks"][0]})
    assert status == 404 and error["error"]["type"] == "NoSuchPlanTaskException"


@pytest.mark.parametrize("body", [
    {"filter": {"type": "no-such-op", "term": "id", "value": 1}},
    {"filter": {"type": "eq", "term": "nope", "value": 1}},
    {"snapshot-id": 12345}, {"select": "id"}, {"case-sensitive": "yes"}, {"stats-fields": ["nope"]},
])
def test_a_malformed_plan_request_is_refused_with_400(server, events, body):
    namespace, table = events.split(".")
    status, error = post(server, f"/v1/namespaces/{namespace}/tables/{table}/plan", body)
    assert status == 400 and error["error"]["type"] == "BadRequestException"


def test_the_manifest_cache_serves_repeated_plans(server, events):
    namespace, table = events.split(".")
    post(server, f"/v1/namespaces/{namespace}/tables/{table}/plan", {})
    hits_before = metric(server, "hmsproxy_iceberg_manifest_cache_hits_total", kind="manifest")
    misses_before = metric(server, "hmsproxy_iceberg_manifest_cache_misses_total", kind="manifest")
    post(server, f"/v1/namespaces/{namespace}/tables/{table}/plan", {})
    assert metric(server, "hmsproxy_iceberg_manifest_cache_hits_total", kind="manifest") >= hits_before + 4
    assert metric(server, "hmsproxy_iceberg_manifest_cache_misses_total", kind="manifest") == misses_before
