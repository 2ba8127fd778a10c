"""Shared fixtures: hmsproxy servers on each database backend and clients that talk to them."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from support.builders import connect_hive, connect_thrift
from support.databases import BACKENDS, fresh_database
from support.hive_schema import load_hive_script
from support.hmsproxy_server import start_hmsproxy
from support.running import RunningServer

HIVE_SCRIPTS = {"hive4": "4.0.0", "hive31": "3.1.0", "hive23": "2.3.0"}

# Hypothesis' default deadline (200 ms an example) is a wall-clock check: on a shared two-core machine an example
# that waits for the CPU fails as "too slow". Speed is measured under bench/, not in tests.
settings.register_profile("hmsproxy", deadline=None)
settings.load_profile("hmsproxy")


@pytest.fixture(scope="module", params=[*BACKENDS, "sqlite-nocache", *(
    f"{backend}-{variant}" for variant in HIVE_SCRIPTS for backend in ("mariadb", "postgres"))])
def backend_server(request, tmp_path_factory) -> Iterator[RunningServer]:
    """An hmsproxy (cache on) on a fresh database of each backend (sqlite, mariadb, postgres), one on SQLite
    with the cache off, and on each of MariaDB and PostgreSQL one whose schema Hive's own 4.0.0, 3.1.0 and 2.3.0
    scripts created (served in place)."""
    backend, _, variant = request.param.partition("-")
    workdir = tmp_path_factory.mktemp(f"hmsproxy-{request.param}")
    with fresh_database(backend, workdir) as url:
        if variant.startswith("hive"):
            load_hive_script(backend, url, HIVE_SCRIPTS[variant])
        server = start_hmsproxy(workdir, url, cache=variant != "nocache")
        server.hive_schema = HIVE_SCRIPTS.get(variant)
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def client(backend_server):
    """A thriftpy2 client (our IDL) to the backend server."""
    c = connect_thrift(backend_server)
    yield c
    c.close()


@pytest.fixture
def hclient(backend_server):
    """An hmsclient (Apache Thrift, generated from Hive's own IDL) to the backend server."""
    c = connect_hive(backend_server)
    yield c
    c.close()
