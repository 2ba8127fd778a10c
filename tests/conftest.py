"""Shared fixtures: hmsproxy servers on each database backend and clients that talk to them."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
import thriftpy2.rpc
from hmsclient import hmsclient

from hmsproxy.idl import hms
from support.databases import BACKENDS, fresh_database
from support.hmsproxy_server import start_hmsproxy
from support.running import RunningServer


@pytest.fixture(scope="module", params=BACKENDS)
def backend_server(request, tmp_path_factory) -> Iterator[RunningServer]:
    """An hmsproxy on a fresh database of each backend (sqlite, mariadb, postgres)."""
    workdir = tmp_path_factory.mktemp(f"hmsproxy-{request.param}")
    with fresh_database(request.param, workdir) as url:
        server = start_hmsproxy(workdir, url)
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="module")
def hmsproxy_server(tmp_path_factory) -> Iterator[RunningServer]:
    """An hmsproxy on the embedded SQLite default."""
    server = start_hmsproxy(tmp_path_factory.mktemp("hmsproxy"))
    yield server
    server.stop()


def thrift_client(server: RunningServer):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=60000)


def hive_client(server: RunningServer) -> hmsclient.HMSClient:
    client = hmsclient.HMSClient(host=server.host, port=server.port)
    client.open()
    return client


@pytest.fixture
def client(backend_server):
    """A thriftpy2 client (our IDL) to the backend server."""
    c = thrift_client(backend_server)
    yield c
    c.close()


@pytest.fixture
def hclient(backend_server):
    """An hmsclient (Apache Thrift, generated from Hive's own IDL) to the backend server."""
    c = hive_client(backend_server)
    yield c
    c.close()
