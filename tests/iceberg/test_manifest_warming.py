"""--iceberg-warm-manifests: after prewarm the manifest cache holds every Iceberg table's current manifests, so the
first plan after a start reads none of them from storage."""
from __future__ import annotations

import json
import urllib.request

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support.hmsproxy_server import start_hmsproxy
from support.polling import wait_for
from support.ports import free_port
from support.scrape import metric

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def _restarted(workdir, warm: bool):
    return start_hmsproxy(workdir, iceberg_rest_port=free_port(), metrics_port=free_port(),
                          iceberg_warm_manifests=warm)


def _plan(server, table: str) -> None:
    request = urllib.request.Request(f"{server.rest_uri}/v1/namespaces/warm/tables/{table}/plan", data=b"{}",
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert json.loads(reply.read())["status"] == "completed"


def test_a_restarted_server_plans_its_first_scans_from_warmed_manifests(tmp_path):
    with _restarted(tmp_path, warm=False) as server:
        rest = RestCatalog("rest", uri=server.rest_uri)
        rest.create_namespace("warm")
        for name in ("a", "b"):
            table = rest.create_table(f"warm.{name}", SCHEMA)
            for first in (1, 10, 20):
                table.append(pa.table({"id": [first, first + 1]}))
        rest.create_table("warm.empty", SCHEMA)

    with _restarted(tmp_path, warm=True) as server:
        wait_for(lambda: metric(server, "hmsproxy_iceberg_manifest_cache_entries") == 6, "six files' entries warmed",
                 timeout=60)
        assert metric(server, "hmsproxy_iceberg_manifest_cache_misses_total", kind="manifest") == 6
        for name in ("a", "b", "empty"):
            _plan(server, name)
        assert metric(server, "hmsproxy_iceberg_manifest_cache_misses_total", kind="manifest") == 6
        assert metric(server, "hmsproxy_iceberg_manifest_cache_hits_total", kind="manifest") == 6

    with _restarted(tmp_path, warm=False) as server:   # without the flag the first plans read the manifests
        _plan(server, "a")
        assert metric(server, "hmsproxy_iceberg_manifest_cache_misses_total", kind="manifest") == 3
