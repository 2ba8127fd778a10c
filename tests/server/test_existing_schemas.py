"""A metastore database laid out by Hive's own schema scripts of a version hmsproxy does not serve (3.0.0) is
refused, and left exactly as it was (issue 13): hmsproxy never creates tables in a Hive database or changes its VERSION.
`schema init`, as Hive's schematool, refuses any such database that is not empty. The scripts are Hive's
(shared/hive-schema), run with the database's own client."""
from __future__ import annotations

import subprocess
import sys

import pytest

from support.databases import fresh_database
from support.hive_schema import load_hive_3_0, load_hive_script, tables_and_version

SERVE = ["serve", "--port", "0", "--metrics-port", "0"]
INIT = ["schema", "init"]


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
@pytest.mark.parametrize("version, refused", [("2.3.0", [INIT]), ("3.0.0", [SERVE, INIT]), ("3.1.0", [INIT]),
                                              ("4.0.0", [INIT])])
def test_a_database_of_hives_schematool_is_refused_and_left_untouched(backend, version, refused, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        if version == "3.0.0":
            load_hive_3_0(backend, url)
        else:
            load_hive_script(backend, url, version)
        before = tables_and_version(url)
        for command in refused:
            done = subprocess.run([sys.executable, "-m", "hmsproxy.cli", *command, "--db", url,
                                   "--warehouse", str(tmp_path / "warehouse")],
                                  capture_output=True, text=True, timeout=120, cwd=tmp_path)
            assert done.returncode == 2, done.stderr[-2000:]
            assert f"holds Hive metastore schema {version}" in done.stderr
            assert "Nothing was changed" in done.stderr
        assert tables_and_version(url) == before
