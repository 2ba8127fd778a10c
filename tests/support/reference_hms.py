"""Starts the real Java Hive Metastore 2.3.10 (shared/reference-hms/start.sh) for comparison tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from support.databases import MARIADB_ADMIN
from support.ports import free_port
from support.running import RunningServer

# /work/main/tests/support/reference_hms.py -> parents[3] == /work
START_SH = Path(__file__).resolve().parents[3] / "shared" / "reference-hms" / "start.sh"
# hive-site.xml properties of the reference serving a database Hive's own 2.3.0 script laid out: the schema as it
# is (checked against its VERSION), with Hive's transaction manager.
ON_HIVES_2_3_SCHEMA = {"datanucleus.schema.autoCreateAll": "false", "hive.metastore.schema.verification": "true",
                       "hive.support.concurrency": "true",
                       "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours is not alive
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def _stop_pid(pid: int, timeout: float = 20.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def start_reference_hms(workdir: Path, *, attempts: int = 3, timeout: float = 120.0,
                        txn: bool = False, env: dict[str, str] | None = None) -> RunningServer:
    """Starts the reference HMS on a free 127.0.0.1 port with its Derby database under workdir
    (with Hive's transaction and lock tables too when txn, see REF_HMS_TXN in start.sh; `env` adds start.sh's other
    options, such as REF_HMS_JDBC).

    The metastore's warehouse (hive.metastore.warehouse.dir in start.sh's hive-site.xml) is
    workdir/warehouse; its audit log of Thrift calls is workdir/hms-audit.log.
    """
    if not START_SH.is_file():
        raise FileNotFoundError(f"reference HMS start script not found: {START_SH}")
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    last_error = ""
    for _ in range(attempts):  # a port taken between free_port() and the bind: try another
        port = free_port()
        proc = subprocess.run(
            ["bash", str(START_SH), str(port), str(workdir), sys.executable],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {}), **({"REF_HMS_TXN": "1"} if txn else {})},
        )
        pid_file = workdir / "hms.pid"
        if proc.returncode == 0:
            pid = int(pid_file.read_text().strip())
            return RunningServer(
                host="127.0.0.1",
                port=port,
                warehouse=workdir / "warehouse",
                workdir=workdir,
                _stop=lambda pid=pid: _stop_pid(pid),
            )
        last_error = proc.stdout
        if pid_file.exists():  # start.sh gave up waiting: make sure nothing is left behind
            _stop_pid(int(pid_file.read_text().strip()))
    raise RuntimeError(f"reference HMS did not start in {workdir}:\n{last_error}")


MARIADB_JDBC_JAR = Path("/usr/share/java/mariadb-java-client.jar")
JAVA_DB_USER = "hmsreference"  # a TCP user with a password: Hive replaces an empty one with its default


def start_reference_hms_on_mariadb(workdir: Path, url: str, properties: dict[str, str]) -> RunningServer:
    """The reference HMS on the MariaDB database at `url` (hmsproxy's SQLAlchemy URL, reached as root) with more
    hive-site.xml `properties`; skips the test where Java or MariaDB's JDBC driver is missing."""
    if shutil.which("java") is None:
        pytest.skip("the reference Hive Metastore needs Java 17 (`java` is not on PATH)")
    if not MARIADB_JDBC_JAR.is_file():
        pytest.skip(f"the reference HMS on MariaDB needs Debian's libmariadb-java ({MARIADB_JDBC_JAR} missing)")
    name = url.rsplit("/", 1)[1]
    admin = create_engine(MARIADB_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE USER IF NOT EXISTS '{JAVA_DB_USER}'@'127.0.0.1' IDENTIFIED BY '{JAVA_DB_USER}'"))
        conn.execute(text(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{JAVA_DB_USER}'@'127.0.0.1'"))
    admin.dispose()
    xml = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items())
    env = {"REF_HMS_JDBC": f"jdbc:mysql://127.0.0.1:3306/{name}", "REF_HMS_USER": JAVA_DB_USER,
           "REF_HMS_PASS": JAVA_DB_USER, "REF_HMS_PROPS": xml}
    return start_reference_hms(workdir, env=env, attempts=1, timeout=300)


@contextlib.contextmanager
def reference_hms_or_skip(workdir: Path, *, txn: bool = False) -> Iterator[RunningServer]:
    """The reference HMS (with Hive's transaction tables when `txn`), stopped afterwards; the test is skipped
    with the reason where Java is missing or the server cannot start."""
    if shutil.which("java") is None:
        pytest.skip("the reference Hive Metastore needs Java 17 (`java` is not on PATH)")
    try:
        server = start_reference_hms(workdir, txn=txn)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        pytest.skip(f"the reference Hive Metastore did not start: {exc}")
    with server:
        yield server
