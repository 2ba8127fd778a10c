"""The REST catalog's endpoints (Iceberg's REST spec, 1.10): each a function from a Call to its JSON answer.

`GET /v1/config` lists exactly the endpoints served here: pyiceberg and Java take that list as the whole set and
refuse an operation it lacks rather than call it and fail."""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import orjson
from pyiceberg.table.metadata import TableMetadata
from starlette.responses import Response

from hmsproxy.iceberg.errors import BadRequest, NoSuchPlanId, NoSuchPlanTask
from hmsproxy.iceberg.http import Call, Endpoint
from hmsproxy.iceberg.manifest_cache import ManifestCache
from hmsproxy.iceberg.names import TableName, namespace_from_path, one_level, table_from_path, table_identifier
from hmsproxy.iceberg.planning import PlanRequestError, PlanTasks, UnknownPlan, UnknownPlanTask, fetch_tasks, plan_scan
from hmsproxy.iceberg.tables import Loaded, Tables

PREFIX = "/v1/{prefix}"


@dataclass(frozen=True)
class Route:
    method: str
    path: str            # the spec's template after /v1/{prefix}; Starlette's path is the same without {prefix}/
    operation: str
    endpoint: Endpoint

    @property
    def advertised(self) -> str:
        return f"{self.method} {PREFIX}/{self.path}"

    @property
    def served(self) -> str:
        """The path as Starlette matches it (its parameters are identifiers: `plan-id` is `plan_id`)."""
        return "/v1/" + self.path.replace("{plan-id}", "{plan_id}")


def _metadata_json(metadata: TableMetadata) -> orjson.Fragment:
    return orjson.Fragment(metadata.model_dump_json())


def _loaded(loaded: Loaded) -> dict[str, object]:
    answer: dict[str, object] = {"metadata": _metadata_json(loaded.metadata), "config": {}}
    if loaded.metadata_location is not None:
        answer["metadata-location"] = loaded.metadata_location
    return answer


def _only_referenced(metadata: TableMetadata) -> TableMetadata:
    """`snapshots=refs`: the snapshots a branch or tag points at, as the spec's load-table allows."""
    kept = {ref.snapshot_id for ref in metadata.refs.values()}
    return metadata.model_copy(update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in kept]})


def _etag(metadata_location: str, snapshots: str) -> str:
    return '"' + hashlib.sha256(f"{metadata_location}\n{snapshots}".encode()).hexdigest()[:40] + '"'


def _properties(value: object, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequest(f"{field}: expected an object of strings")
    return value


def _strings(value: object, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{field}: expected a list of strings")
    return value


class Catalog:
    """The endpoint functions over one catalog's tables, and its scan planning over the manifest cache."""

    def __init__(self, tables: Tables, manifests: ManifestCache, plans: PlanTasks) -> None:
        self.tables = tables
        self.namespaces = tables.namespaces
        self.manifests = manifests
        self.plans = plans

    def _table(self, call: Call) -> TableName:
        return table_from_path(call.path["namespace"], call.path["table"])

    def list_namespaces(self, call: Call) -> object:
        parent = call.query.get("parent")
        names, token = self.namespaces.listed(namespace_from_path(parent) if parent else None,
                                            call.query.get("pageToken"), call.query_int("pageSize"))
        return {"namespaces": [[name] for name in names], "next-page-token": token}

    def create_namespace(self, call: Call) -> object:
        body = call.json()
        namespace = _strings(body.get("namespace"), "namespace")
        name = one_level(namespace)
        properties = self.namespaces.create(name, _properties(body.get("properties"), "properties"))
        return {"namespace": [name], "properties": properties}

    def load_namespace(self, call: Call) -> object:
        name = namespace_from_path(call.path["namespace"])
        return {"namespace": [name], "properties": self.namespaces.properties(name)}

    def namespace_exists(self, call: Call) -> object:
        self.namespaces.database(namespace_from_path(call.path["namespace"]))
        return None

    def drop_namespace(self, call: Call) -> object:
        self.namespaces.drop(namespace_from_path(call.path["namespace"]))
        return None

    def update_namespace_properties(self, call: Call) -> object:
        body = call.json()
        return self.namespaces.update(namespace_from_path(call.path["namespace"]),
                                      _strings(body.get("removals"), "removals"),
                                      _properties(body.get("updates"), "updates"))

    def list_tables(self, call: Call) -> object:
        database = namespace_from_path(call.path["namespace"])
        names, token = self.tables.listed(database, call.query.get("pageToken"), call.query_int("pageSize"))
        return {"identifiers": [{"namespace": [database], "name": name} for name in names],
                "next-page-token": token}

    def create_table(self, call: Call) -> object:
        return _loaded(self.tables.create(namespace_from_path(call.path["namespace"]), call.json()))

    def register_table(self, call: Call) -> object:
        return _loaded(self.tables.register(namespace_from_path(call.path["namespace"]), call.json()))

    def load_table(self, call: Call) -> object:
        snapshots = call.query.get("snapshots", "all")
        if snapshots not in ("all", "refs"):
            raise BadRequest(f"snapshots: expected all or refs, got {snapshots!r}")
        table = self._table(call)
        location = self.tables.metadata_location(table)
        etag = _etag(location, snapshots)
        if etag in _tags(call.headers):
            return Response(status_code=304, headers={"ETag": etag})
        metadata = self.tables.files.read(location)   # the location read above: the table is read once
        loaded = Loaded(_only_referenced(metadata) if snapshots == "refs" else metadata, location)
        return Response(orjson.dumps(_loaded(loaded)), media_type="application/json", headers={"ETag": etag})

    def table_exists(self, call: Call) -> object:
        self.tables.hms_table(self._table(call))
        return None

    def commit_table(self, call: Call) -> object:
        body = call.json()
        table = self._table(call)
        if body.get("identifier") is not None and table_identifier(body["identifier"], "identifier") != table:
            raise BadRequest("identifier: names another table than the path")
        committed = self.tables.commit(table, body)
        return {"metadata-location": committed.metadata_location, "metadata": _metadata_json(committed.metadata)}

    def drop_table(self, call: Call) -> object:
        purge = call.query.get("purgeRequested", "false").lower() == "true"
        self.tables.drop(self._table(call), purge)
        return None

    def rename_table(self, call: Call) -> object:
        body = call.json()
        self.tables.rename(table_identifier(body.get("source"), "source"),
                           table_identifier(body.get("destination"), "destination"))
        return None

    def commit_transaction(self, call: Call) -> object:
        changes = call.json().get("table-changes")
        if not isinstance(changes, list) or not changes:
            raise BadRequest("table-changes: expected a non-empty list")
        named: list[tuple[TableName, dict[str, object]]] = []
        for index, change in enumerate(changes):
            if not isinstance(change, dict):
                raise BadRequest(f"table-changes[{index}]: expected an object")
            named.append((table_identifier(change.get("identifier"), f"table-changes[{index}].identifier"), change))
        self.tables.commit_all(named)
        return None

    def plan_table_scan(self, call: Call) -> object:
        loaded = self.tables.load(self._table(call))
        try:
            return plan_scan(loaded.metadata, self.tables.files.io, call.json(), self.manifests, self.plans)
        except PlanRequestError as wrong:
            raise BadRequest(str(wrong)) from None

    def fetch_scan_tasks(self, call: Call) -> object:
        self.tables.hms_table(self._table(call))
        try:
            return fetch_tasks(call.json(), self.plans)
        except PlanRequestError as wrong:
            raise BadRequest(str(wrong)) from None
        except UnknownPlanTask:
            raise NoSuchPlanTask("The plan task is unknown: its plan finished, expired or was cancelled") from None

    def plan_status(self, call: Call) -> object:
        self.tables.hms_table(self._table(call))
        try:
            return self.plans.get(call.path["plan_id"])
        except UnknownPlan:
            raise NoSuchPlanId(f"No plan {call.path['plan_id']}: it expired, was cancelled or never was") from None

    def cancel_plan(self, call: Call) -> object:
        self.tables.hms_table(self._table(call))
        try:
            self.plans.cancel(call.path["plan_id"])
        except UnknownPlan:
            raise NoSuchPlanId(f"No plan {call.path['plan_id']}: it expired, was cancelled or never was") from None
        return None

    def routes(self) -> list[Route]:
        return [
            Route("GET", "namespaces", "list_namespaces", self.list_namespaces),
            Route("POST", "namespaces", "create_namespace", self.create_namespace),
            Route("GET", "namespaces/{namespace}", "load_namespace", self.load_namespace),
            Route("HEAD", "namespaces/{namespace}", "namespace_exists", self.namespace_exists),
            Route("DELETE", "namespaces/{namespace}", "drop_namespace", self.drop_namespace),
            Route("POST", "namespaces/{namespace}/properties", "update_namespace_properties",
                  self.update_namespace_properties),
            Route("GET", "namespaces/{namespace}/tables", "list_tables", self.list_tables),
            Route("POST", "namespaces/{namespace}/tables", "create_table", self.create_table),
            Route("POST", "namespaces/{namespace}/register", "register_table", self.register_table),
            Route("GET", "namespaces/{namespace}/tables/{table}", "load_table", self.load_table),
            Route("HEAD", "namespaces/{namespace}/tables/{table}", "table_exists", self.table_exists),
            Route("POST", "namespaces/{namespace}/tables/{table}", "commit_table", self.commit_table),
            Route("DELETE", "namespaces/{namespace}/tables/{table}", "drop_table", self.drop_table),
            Route("POST", "tables/rename", "rename_table", self.rename_table),
            Route("POST", "transactions/commit", "commit_transaction", self.commit_transaction),
            Route("POST", "namespaces/{namespace}/tables/{table}/plan", "plan_table_scan", self.plan_table_scan),
            Route("GET", "namespaces/{namespace}/tables/{table}/plan/{plan-id}", "plan_status", self.plan_status),
            Route("DELETE", "namespaces/{namespace}/tables/{table}/plan/{plan-id}", "cancel_plan", self.cancel_plan),
            Route("POST", "namespaces/{namespace}/tables/{table}/tasks", "fetch_scan_tasks", self.fetch_scan_tasks),
        ]


def _tags(headers: Mapping[str, str]) -> set[str]:
    return {tag.strip() for tag in headers.get("if-none-match", "").split(",") if tag.strip()}


# pyiceberg plans on the server only when the plan endpoint is listed and the catalog's properties say so; a
# server's defaults may (the client's own setting wins)
DEFAULTS = {"scan-planning-mode": "server"}


def config_answer(routes: list[Route]) -> dict[str, object]:
    return {"defaults": DEFAULTS, "overrides": {}, "endpoints": [route.advertised for route in routes]}
