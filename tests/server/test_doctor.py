"""`hmsproxy doctor` checks a configuration as `serve` would use it and says what to fix: run as a user runs it,
against a database that serves, and against one of each kind of problem."""
from __future__ import annotations

import socket

from support.cli import run_hmsproxy


def test_a_configuration_that_serves_passes_every_check(tmp_path):
    db = f"sqlite:///{tmp_path / 'm.db'}"
    assert run_hmsproxy("schema", "init", "--db", db, "--warehouse", str(tmp_path / "wh"), cwd=tmp_path)[0] == 0
    code, lines = run_hmsproxy("doctor", "--db", db, "--warehouse", str(tmp_path / "wh"), "--port", "0",
                               "--metrics-port", "0", cwd=tmp_path)
    assert code == 0, lines
    assert [line.split(":")[0] for line in lines[:-1]] == ["ok   database", "ok   schema", "ok   notification log",
                                                            "ok   warehouse", "ok   thrift port"]
    assert "version 4.0.0" in lines[1] and "newest event" in lines[2]
    assert lines[-1] == "everything checked is ready to serve"


def test_each_problem_is_named_with_its_fix_and_fails_the_check(tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, lines = run_hmsproxy("doctor", "--db", "mysql+pymysql://root@127.0.0.1:1/none", "--db-connect-timeout-s",
                                   "2", "--warehouse", str(tmp_path / "a-file" / "wh"), "--port", str(port),
                                   "--metrics-port", "0", "--tls-cert", str(tmp_path / "missing.pem"), cwd=tmp_path)
    assert code == 1
    failed = {line.split(":")[0].removeprefix("FAIL "): i for i, line in enumerate(lines) if line.startswith("FAIL")}
    assert set(failed) == {"database", "warehouse", "thrift port", "tls"}
    for i in failed.values():
        assert lines[i + 1].startswith("     fix: ")
    assert lines[-1] == "4 problem(s) to fix before serving"
    assert "--port" in lines[failed["thrift port"] + 1]


def test_nothing_is_created_where_nothing_was(tmp_path):
    code, lines = run_hmsproxy("doctor", "--db", f"sqlite:///{tmp_path / 'new.db'}", "--warehouse",
                               str(tmp_path / "wh"), "--port", "0", "--metrics-port", "0", cwd=tmp_path)
    assert code == 0 and "serve creates it" in lines[0]
    assert not (tmp_path / "new.db").exists() and not (tmp_path / "wh").exists()
