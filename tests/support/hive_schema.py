"""Hive's own schema scripts (shared/hive-schema), run into a scratch database with the database's own client,
as Hive's schematool would: for tests of what hmsproxy does with the databases Hive creates."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

HIVE_SCHEMA = Path(__file__).resolve().parents[3] / "shared" / "hive-schema"
CLIENTS = {"mariadb": "mariadb", "postgres": "psql"}


def load_hive_script(backend: str, url: str, version: str) -> None:
    """Hive's `hive-schema-<version>` script for the backend, run into the (empty) database at `url`."""
    folder = HIVE_SCHEMA / ("mysql" if backend == "mariadb" else "postgres")
    script = folder / f"hive-schema-{version}.{folder.name}.sql"
    if not script.is_file():
        pytest.skip(f"Hive's schema scripts are not beside the checkout ({script} missing)")
    if shutil.which(CLIENTS[backend]) is None:
        pytest.skip(f"the {CLIENTS[backend]} client is not installed")
    name = url.rsplit("/", 1)[1]
    if backend == "mariadb":
        command = ["mariadb", "-h", "127.0.0.1", "-u", "root", name]
    else:
        command = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", name, "-v", "ON_ERROR_STOP=1", "-q"]
    with script.open() as stdin:  # the MySQL script SOURCEs its transaction tables from its own folder
        subprocess.run(command, stdin=stdin, cwd=folder, check=True, capture_output=True, timeout=300)


def tables_and_version(url: str) -> tuple[list[str], list[tuple]]:
    """The database's table names and its VERSION rows: what hmsproxy must never change in Hive's database."""
    engine = create_engine(url)
    try:
        tables = sorted(inspect(engine).get_table_names())
        with engine.connect() as conn:
            quoted = engine.dialect.identifier_preparer.quote("VERSION")
            version = [tuple(row) for row in conn.execute(text(f"SELECT * FROM {quoted}"))]
    finally:
        engine.dispose()
    return tables, version
