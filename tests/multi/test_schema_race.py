"""Instances started at one moment on an empty database (the first `up` of a scaled deployment) all come up: the
schema is created once, whole, by one of them under the schema lock while the others wait and then serve
(issue 52). `hmsproxy schema upgrade` takes the same lock, so an instance started during an upgrade waits for it."""
from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, select

from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.hive_only_tables import HIVE_SCHEMA
from hmsproxy.store.sql.schema_setup import schema_lock
from support.builders import connect_thrift
from support.cli import run_hmsproxy
from support.databases import BACKENDS, fresh_database
from support.hive_schema import load_hive_3_0
from support.hmsproxy_server import start_hmsproxy_process, start_hmsproxy_processes

INSTANCES = 3
WAITING = "waiting for another instance to create or upgrade the schema"


def _schema_created_once_and_whole(url: str) -> None:
    """One VERSION row, one default catalog and one `default` database, every table of the model, and nothing
    `hmsproxy schema validate` finds missing."""
    engine = create_engine(url)
    try:
        assert set(HIVE_SCHEMA.tables) <= set(inspect(engine).get_table_names())
        with engine.connect() as conn:
            assert conn.execute(select(s.VERSION.c.SCHEMA_VERSION)).scalars().all() == [s.SCHEMA_VERSION]
            assert conn.execute(select(s.CTLGS.c.NAME)).scalars().all() == ["hive"]
            assert conn.execute(select(s.DBS.c.NAME).where(s.DBS.c.NAME == "default")).scalars().all() == ["default"]
    finally:
        engine.dispose()
    code, lines = run_hmsproxy("schema", "validate", "--db", url, cwd=Path.cwd())
    assert code == 0, lines


def _every_instance_serves(servers: list) -> None:
    """A database created through the first instance is read through each."""
    clients = [connect_thrift(server) for server in servers]
    try:
        clients[0].create_database(hms.Database(name="raced", parameters={}))
        for client in clients:
            assert client.get_database("raced").name == "raced"
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("round_", [1, 2, 3])
def test_instances_started_together_on_an_empty_database_all_serve(backend, round_, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        servers = start_hmsproxy_processes([tmp_path / f"instance-{i}" for i in range(INSTANCES)], url)
        try:
            _every_instance_serves(servers)
        finally:
            for server in servers:
                server.stop()
        _schema_created_once_and_whole(url)


def _log_of(workdir: Path) -> str:
    return "".join(path.read_text() for path in workdir.glob("hmsproxy-*.log"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_start_waits_while_another_holds_the_schema_lock_and_says_so(backend, tmp_path):
    """While the lock is held (here by the test, through hmsproxy's own code), a starting instance logs that it
    waits and creates nothing; once it is released, the instance creates the schema and serves."""
    with fresh_database(backend, tmp_path) as url, ThreadPoolExecutor(1) as pool:
        holder = Database(url)
        try:
            with schema_lock(holder):
                starting = pool.submit(start_hmsproxy_process, tmp_path / "waiter", url)
                deadline = time.monotonic() + 60
                while WAITING not in _log_of(tmp_path / "waiter"):
                    assert time.monotonic() < deadline and not starting.done(), _log_of(tmp_path / "waiter")
                    time.sleep(0.05)   # polling the child's log, bounded by the deadline
                assert not inspect(holder.engine).has_table("VERSION")
            with starting.result() as server:
                _every_instance_serves([server])
        finally:
            holder.dispose()
        _schema_created_once_and_whole(url)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_start_gives_up_after_the_schema_wait_and_says_why(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        holder = Database(url)
        try:
            with schema_lock(holder):
                code, lines = run_hmsproxy("serve", "--port", "0", "--metrics-port", "0", "--db", url,
                                           "--warehouse", str(tmp_path / "warehouse"), "--db-schema-wait-s", "1",
                                           cwd=tmp_path)
        finally:
            holder.dispose()
        assert code == 2, lines
        assert "held this database's schema lock for more than 1 s" in lines[-1] and "--db-schema-wait-s" in lines[-1]
        assert any(WAITING in line for line in lines)


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])   # `schema upgrade` refuses SQLite
def test_an_instance_started_during_an_upgrade_waits_for_it_and_serves_the_upgraded_schema(backend, tmp_path):
    """Hive 3.0.0's schema, which `serve` refuses: started while `hmsproxy schema upgrade` runs, an instance waits
    for the upgrade (it would otherwise find 3.0.0 and refuse, or a half-upgraded schema) and serves Hive 4's."""
    with fresh_database(backend, tmp_path) as url:
        load_hive_3_0(backend, url)
        upgrading = subprocess.Popen([sys.executable, "-m", "hmsproxy.cli", "schema", "upgrade", "--db", url],
                                     cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            printed = ""
            while not printed.endswith("statements)\n"):   # a step, printed once the upgrade holds the lock
                line = upgrading.stdout.readline()
                assert line, printed
                printed += line
            with start_hmsproxy_process(tmp_path / "during", url) as server:
                rest = upgrading.communicate(timeout=300)[0]
                assert upgrading.returncode == 0 and rest.splitlines()[-1] == "upgraded schema 3.0.0 to 4.0.0", rest
                _every_instance_serves([server])
        finally:
            if upgrading.poll() is None:
                upgrading.kill()
        _schema_created_once_and_whole(url)
