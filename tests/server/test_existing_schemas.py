"""A metastore database laid out by Hive's own schema scripts is refused, and left exactly as it was
(issue 13): hmsproxy never creates tables in a Hive database or changes its VERSION. The scripts are
Hive's (shared/hive-schema), run with the database's own client as Hive's schematool would."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from support.databases import fresh_database

HIVE_SCHEMA = Path(__file__).resolve().parents[3] / "shared" / "hive-schema"
CLIENTS = {"mariadb": "mariadb", "postgres": "psql"}


def _load_hive_script(backend: str, url: str, version: str) -> None:
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
        subprocess.run(command, stdin=stdin, cwd=folder, check=True, capture_output=True)


def _layout(url: str) -> tuple[list[str], list[tuple]]:
    engine = create_engine(url)
    try:
        tables = sorted(inspect(engine).get_table_names())
        with engine.connect() as conn:
            version = [tuple(row) for row in conn.execute(text('SELECT * FROM "VERSION"' if "postgres" in url
                                                               else "SELECT * FROM VERSION"))]
    finally:
        engine.dispose()
    return tables, version


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
@pytest.mark.parametrize("version", ["2.3.0", "3.1.0", "4.0.0"])
def test_a_database_of_hives_schematool_is_refused_and_left_untouched(backend, version, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        _load_hive_script(backend, url, version)
        before = _layout(url)
        for command in (["serve", "--port", "0", "--metrics-port", "0"], ["schema", "init"]):
            done = subprocess.run([sys.executable, "-m", "hmsproxy.cli", *command, "--db", url,
                                   "--warehouse", str(tmp_path / "warehouse")],
                                  capture_output=True, text=True, timeout=120, cwd=tmp_path)
            assert done.returncode == 2, done.stderr[-2000:]
            assert f"holds Hive metastore schema {version}" in done.stderr
            assert "Nothing was changed" in done.stderr
        assert _layout(url) == before
