"""Starts the REST catalog beside the Thrift port, on the same handler (store, cache, warehouse) and metrics."""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from hmsproxy.handler import Handler
from hmsproxy.iceberg.app import RestServer, build_app
from hmsproxy.iceberg.http import Limits
from hmsproxy.iceberg.manifest_cache import ManifestCache
from hmsproxy.iceberg.metadata_io import MetadataFiles
from hmsproxy.iceberg.plan_tasks import PlanTasks
from hmsproxy.iceberg.routes import Catalog
from hmsproxy.iceberg.tables import Tables
from hmsproxy.iceberg.warming import warm_after
from hmsproxy.ops.audit import AuditLog
from hmsproxy.ops.config import Settings
from hmsproxy.ops.metrics import Metrics
from hmsproxy.rpc.tls import server_context
from hmsproxy.storage.object_store import ObjectStores

log = logging.getLogger(__name__)


def read_tokens(path: str) -> frozenset[str]:
    """The accepted bearer tokens: the file's non-empty lines; a file naming none is refused (an empty set would
    leave the catalog open, which the operator who gave a file did not mean)."""
    tokens = frozenset(line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip())
    if not tokens:
        raise ValueError(f"setting 'iceberg_rest_tokens_file': {path} holds no token")
    return tokens


def start_rest(settings: Settings, handler: Handler, stores: ObjectStores, metrics: Metrics,
               audit: AuditLog | None, prewarmed: threading.Event | None) -> RestServer:
    tokens = read_tokens(settings.iceberg_rest_tokens_file) if settings.iceberg_rest_tokens_file else frozenset()
    tables = Tables(handler, MetadataFiles.of(stores.settings), settings.iceberg_lock_wait_s)
    manifests = ManifestCache(settings.iceberg_manifest_cache_bytes, metrics.registry)
    plans = PlanTasks(settings.iceberg_max_plans, settings.iceberg_plan_ttl_s, settings.iceberg_plan_chunk_tasks)
    routes = Catalog(tables, manifests, plans).routes()
    app = build_app(settings.iceberg_rest_path, routes, Limits(settings.iceberg_max_request_bytes, tokens),
                    metrics, audit)
    tls = server_context(settings.tls_cert, settings.tls_key, settings.tls_client_ca) if settings.tls else None
    server = RestServer(app, settings.host, settings.iceberg_rest_port, tls, settings.iceberg_max_requests)
    server.start()
    if settings.iceberg_warm_manifests:
        warm_after(prewarmed, tables, manifests)
    log.info("Iceberg REST catalog at %s://%s:%d/%s", server.scheme, settings.host, server.port,
             settings.iceberg_rest_path.strip("/"))
    return server
