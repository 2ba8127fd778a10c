"""Starts the real Java Hive Metastore 2.3.10 (from PySpark's jars, see support.java_hms) for comparison tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from support.databases import MARIADB_ADMIN
from support.java_hms import JdbcDatabase, missing_prerequisite, start_java_hms, stop
from support.ports import free_port
from support.required import missing
from support.running import RunningServer

# hive-site.xml properties of the reference serving a database Hive's own 2.3.0 script laid out: the schema as it
# is (checked against its VERSION), with Hive's transaction manager.
ON_HIVES_2_3_SCHEMA = {"datanucleus.schema.autoCreateAll": "false", "hive.metastore.schema.verification": "true",
                       "hive.support.concurrency": "true",
                       "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"}


def start_reference_hms(workdir: Path, *, attempts: int = 3, timeout: float = 120.0, txn: bool = False,
                        database: JdbcDatabase | None = None,
                        properties: dict[str, str] | None = None) -> RunningServer:
    """Starts the reference HMS on a free 127.0.0.1 port with its Derby database under workdir (with Hive's
    transaction and lock tables too when txn; on `database` instead when given; `properties` added to its
    hive-site.xml); where this machine cannot run it (no Java, no gcc...), the test is skipped with the reason or,
    where the run requires Java (support.required), fails. A reference that does not start is an error.

    The metastore's warehouse (hive.metastore.warehouse.dir) is workdir/warehouse; its audit log of Thrift calls
    is workdir/hms-audit.log.
    """
    problem = missing_prerequisite(database)
    if problem:
        missing("java", problem)
    workdir = Path(workdir).resolve()
    last_error = ""
    for _ in range(attempts):  # a port taken between free_port() and the bind: try another
        port = free_port()
        try:
            process = start_java_hms(workdir, port, txn=txn, database=database, properties=properties or {},
                                     timeout=timeout)
        except RuntimeError as exc:
            last_error = str(exc)
            continue
        return RunningServer(host="127.0.0.1", port=port, warehouse=workdir / "warehouse", workdir=workdir,
                             pid=process.pid, _stop=partial(stop, process))
    raise RuntimeError(f"reference HMS did not start in {workdir}:\n{last_error}")


JAVA_DB_USER = "hmsreference"  # a TCP user with a password: Hive replaces an empty one with its default


def start_reference_hms_on_mariadb(workdir: Path, url: str, properties: dict[str, str]) -> RunningServer:
    """The reference HMS on the MariaDB database at `url` (hmsproxy's SQLAlchemy URL, reached as root) with more
    hive-site.xml `properties`; skips the test where Java or MariaDB's JDBC driver is missing."""
    name = url.rsplit("/", 1)[1]
    admin = create_engine(MARIADB_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE USER IF NOT EXISTS '{JAVA_DB_USER}'@'127.0.0.1' IDENTIFIED BY '{JAVA_DB_USER}'"))
        conn.execute(text(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{JAVA_DB_USER}'@'127.0.0.1'"))
    admin.dispose()
    database = JdbcDatabase(host="127.0.0.1", port=3306, name=name, user=JAVA_DB_USER, password=JAVA_DB_USER)
    return start_reference_hms(workdir, database=database, properties=properties, attempts=1, timeout=300)


@contextlib.contextmanager
def reference_hms(workdir: Path, *, txn: bool = False,
                  properties: dict[str, str] | None = None) -> Iterator[RunningServer]:
    """The reference HMS (with Hive's transaction tables when `txn`, `properties` added to its hive-site.xml),
    stopped afterwards."""
    with start_reference_hms(workdir, txn=txn, properties=properties) as server:
        yield server


def reference_hms_fixture(name: str, *, txn: bool = False, properties: dict[str, str] | None = None) -> Any:
    """A module-scoped fixture of the reference HMS (see `reference_hms`) in a new temporary directory `name`: one
    Java process for all the tests of a module, which starts in seconds, not milliseconds."""
    @pytest.fixture(scope="module")
    def running_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
        with reference_hms(tmp_path_factory.mktemp(name), txn=txn, properties=properties) as server:
            yield server
    return running_reference
