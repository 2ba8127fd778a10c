"""Two (or more) hmsproxy processes on one fresh database of a backend: the scale-out deployment."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import thriftpy2.rpc

from hmsproxy.idl import hms
from support.databases import fresh_database
from support.hive_schema import load_hive_script
from support.hmsproxy_server import start_hmsproxy_process
from support.running import RunningServer


@contextlib.contextmanager
def instances_on_one_database(backend: str, workdir: Path, count: int = 2, *extra_args: str,
                              hive_schema: str | None = None) -> Iterator[tuple[str, list[RunningServer]]]:
    """Yields (database URL, servers): `count` hmsproxy processes sharing one new database of the backend
    (sqlite, mariadb or postgres; skipped when that server is unreachable), stopped afterwards. With
    `hive_schema` (a version), the database is first laid out by Hive's own script of that version."""
    with fresh_database(backend, workdir) as url:
        if hive_schema:
            load_hive_script(backend, url, hive_schema)
        servers: list[RunningServer] = []
        try:
            for i in range(count):
                servers.append(start_hmsproxy_process(workdir / f"instance-{i}", url, *extra_args))
            yield url, servers
        finally:
            for server in servers:
                server.stop()


def connect(server: RunningServer, timeout_ms: int = 60000):
    """A thriftpy2 client (our IDL) to one server."""
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=timeout_ms)
