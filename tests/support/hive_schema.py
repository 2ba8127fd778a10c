"""Hive's own schema scripts (shared/hive-schema), run into a scratch database with the database's own client,
as Hive's schematool would: for tests of what hmsproxy does with the databases Hive creates."""
from __future__ import annotations

import subprocess
from itertools import pairwise
from pathlib import Path

from sqlalchemy import create_engine, inspect, text

from hmsproxy.store.sql.validate import present_keys
from support.required import installed, missing

HIVE_SCHEMA = Path(__file__).resolve().parents[3] / "shared" / "hive-schema"
CLIENTS = {"mariadb": "mariadb", "postgres": "psql"}
UPGRADE_CHAIN = ["2.3.0", "3.0.0", "3.1.0", "3.2.0", "4.0.0-alpha-1", "4.0.0-alpha-2", "4.0.0-beta-1", "4.0.0"]
Key = tuple[str, bool, tuple[str, ...]]  # table, unique, columns (a unique key's sorted, but a primary key's)


def load_hive_script(backend: str, url: str, version: str) -> None:
    """Hive's `hive-schema-<version>` script for the backend, run into the (empty) database at `url`."""
    folder = HIVE_SCHEMA / ("mysql" if backend == "mariadb" else "postgres")
    _run_script(backend, url, folder / f"hive-schema-{version}.{folder.name}.sql")


def load_hive_3_0(backend: str, url: str) -> None:
    """Hive 3.0.0's layout (Hive ships no script creating it: 2.3.0's, then its upgrade), which hmsproxy does not
    serve in place."""
    load_hive_script(backend, url, "2.3.0")
    upgrade_with_hives_scripts(backend, url, "2.3.0", to="3.0.0")


def upgrade_with_hives_scripts(backend: str, url: str, version: str, to: str = "4.0.0") -> None:
    """Hive's upgrade scripts from `version` to `to`, one after the other, as Hive's schematool runs them."""
    folder = HIVE_SCHEMA / ("mysql" if backend == "mariadb" else "postgres")
    chain = UPGRADE_CHAIN[UPGRADE_CHAIN.index(version):UPGRADE_CHAIN.index(to) + 1]
    for old, new in pairwise(chain):
        _run_script(backend, url, folder / f"upgrade-{old}-to-{new}.{folder.name}.sql")


def _run_script(backend: str, url: str, script: Path) -> None:
    folder = script.parent
    if not script.is_file():
        missing("hive-schema", f"Hive's schema scripts are not beside the checkout ({script} missing)")
    installed(CLIENTS[backend], backend, f"the {CLIENTS[backend]} client is not installed")
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


def columns_layout(url: str) -> dict[str, dict[str, tuple[str, str]]]:
    """table -> column -> (type as the database names it, nullable) from information_schema."""
    engine = create_engine(url)
    query = ("SELECT table_name, column_name, column_type, is_nullable FROM information_schema.columns "
             "WHERE table_schema = DATABASE()") if url.startswith("mysql") else (
             "SELECT table_name, column_name, data_type || coalesce('(' || character_maximum_length || ')', ''), "
             "is_nullable FROM information_schema.columns WHERE table_schema = 'public'")
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(query)).all()
    finally:
        engine.dispose()
    layout: dict[str, dict[str, tuple[str, str]]] = {}
    for table, column, kind, nullable in rows:
        layout.setdefault(table, {})[column] = (kind, nullable)
    return layout


def keys_layout(url: str) -> dict[Key, str]:
    """Every primary key, unique key and index: (table, unique, columns) -> its name."""
    engine = create_engine(url)
    try:
        present = present_keys(engine)
    finally:
        engine.dispose()
    return {(table, key.unique, tuple(sorted(key.columns)) if key.unique and not key.primary else key.columns):
            key.name for table, keys in present.items() for key in keys}
