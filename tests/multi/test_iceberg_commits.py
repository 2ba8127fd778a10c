"""Iceberg writers never lose a commit: several pyiceberg processes append to one table through two
hmsproxy instances on one database, retrying CommitFailedException as real writers do; the table then
holds exactly the acknowledged appends (rows and snapshots), none lost and none doubled."""
from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy_process
from support.instances import instances_on_one_database
from support.ports import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import iceberg_workload

WRITERS = 4
APPENDS = 8
MIXED_APPENDS = 4   # each writer's appends in the mixed-protocol test (3 servers per backend: kept short)


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_concurrent_appends_through_two_instances_are_all_kept(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path) as (url, servers), \
            start_hmsproxy_process(tmp_path / "oracle", url, "--no-cache") as oracle:
        warehouse = tmp_path / "iceberg"
        warehouse.mkdir()
        # what the database holds, read uncached: a cached read through one instance right after the last
        # commits through the other may be a poll interval old (README: consistency rules)
        report = iceberg_workload.run([s.uri for s in servers], str(warehouse), WRITERS, APPENDS,
                                      namespace=f"ice_{uuid.uuid4().hex[:6]}", table="events", rows_per_append=3,
                                      deadline_s=240, verify_uri=oracle.uri)
    assert report.errors == []
    assert report.acknowledged == WRITERS * APPENDS
    assert (report.missing, report.doubled) == ([], [])
    assert report.rows_found == report.rows_expected
    assert report.snapshots_found == report.acknowledged


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_rest_and_hive_catalog_writers_on_two_instances_keep_every_commit(backend, tmp_path):
    """Writers through the REST catalog and through HiveCatalog, on two instances, append to one table at once:
    the REST commits take the table lock the HiveCatalog writers take, so none overwrites another's."""
    rest_a, rest_b = free_port(), free_port()
    with fresh_database(backend, tmp_path) as url, \
            start_hmsproxy_process(tmp_path / "a", url, "--iceberg-rest-port", str(rest_a)) as a, \
            start_hmsproxy_process(tmp_path / "b", url, "--iceberg-rest-port", str(rest_b)) as b, \
            start_hmsproxy_process(tmp_path / "oracle", url, "--no-cache") as oracle:
        warehouse = tmp_path / "iceberg"
        warehouse.mkdir()
        uris = [_rest(rest_a), b.uri, _rest(rest_b), a.uri]   # writer i goes through uris[i % 4]
        report = iceberg_workload.run(uris, str(warehouse), WRITERS, MIXED_APPENDS,
                                      namespace=f"mix_{uuid.uuid4().hex[:6]}", table="events", rows_per_append=3,
                                      deadline_s=240, verify_uri=oracle.uri)
    assert report.errors == []
    assert report.acknowledged == WRITERS * MIXED_APPENDS
    assert (report.missing, report.doubled) == ([], [])
    assert report.rows_found == report.rows_expected
    assert report.snapshots_found == report.acknowledged


def _rest(port: int) -> str:
    return f"http://127.0.0.1:{port}/iceberg"
