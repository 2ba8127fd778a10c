"""`hmsproxy doctor` checks a configuration as `serve` would use it and says what to fix: run as a user runs it,
against a database that serves, and against one of each kind of problem."""
from __future__ import annotations

import socket

from support.cli import run_hmsproxy
from support.s3_server import SECRET_KEY, running_s3_server


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


def test_an_object_store_warehouse_is_listed_and_written_and_left_as_it_was(tmp_path):
    """The warehouse on S3 (moto's server on loopback, configured by the standard AWS variables only): doctor lists
    and writes it and deletes its probe; a bucket that does not exist fails the check, naming no secret."""
    db = f"sqlite:///{tmp_path / 'm.db'}"
    with running_s3_server() as s3:
        bucket = s3.new_bucket()
        s3.put(bucket, "warehouse/kept", b"data")
        assert run_hmsproxy("schema", "init", "--db", db, "--warehouse", f"s3a://{bucket}/warehouse",
                            cwd=tmp_path)[0] == 0
        code, lines = run_hmsproxy("doctor", "--db", db, "--warehouse", f"s3a://{bucket}/warehouse", "--port", "0",
                                   "--metrics-port", "0", cwd=tmp_path, environment=s3.environment())
        assert code == 0, lines
        assert f"ok   warehouse: s3a://{bucket}/warehouse can be listed and written" in lines
        assert s3.keys(bucket) == ["warehouse/kept"]
        code, lines = run_hmsproxy("doctor", "--db", db, "--warehouse", "s3a://no-such-bucket/warehouse", "--port",
                                   "0", "--metrics-port", "0", "--object-store-attempts", "1", cwd=tmp_path,
                                   environment=s3.environment())
    assert code == 1
    failed = next(i for i, line in enumerate(lines) if line.startswith("FAIL warehouse"))
    assert "s3a://no-such-bucket/warehouse cannot be listed and written" in lines[failed]
    assert lines[failed + 1].startswith("     fix: ")
    assert not any(SECRET_KEY in line for line in lines)
