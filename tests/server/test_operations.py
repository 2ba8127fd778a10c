"""What an operator runs the server with: `--version`, the log as JSON lines, an audit line per call (who, from
where, what, on which object, how it ended) and a database password read from a file rather than the command
line. Each through the real command or a real server and client."""
from __future__ import annotations

import json
import os
import tomllib
import uuid
from pathlib import Path

import pytest
import thriftpy2.rpc
from sqlalchemy import create_engine, text

from hmsproxy.idl import hms
from support.cli import run_hmsproxy
from support.databases import MARIADB_ADMIN, fresh_database
from support.hmsproxy_server import start_hmsproxy, start_hmsproxy_process

ROOT = Path(__file__).resolve().parents[2]


def _client(server):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=60000)


def test_version_prints_the_package_version(tmp_path):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    code, lines = run_hmsproxy("--version", cwd=tmp_path)
    assert (code, lines) == (0, [f"hmsproxy {version}"])


def test_the_log_can_be_json_lines(tmp_path):
    server = start_hmsproxy_process(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", "--log-format", "json")
    server.stop()
    lines = [line for line in (tmp_path / f"hmsproxy-{server.port}.log").read_text().splitlines()
             if not line.startswith("hmsproxy listening on")]   # the one line for whoever started it
    entries = [json.loads(line) for line in lines]
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any(e["logger"] == "hmsproxy.server" and "serving thrift://" in e["message"] for e in entries)
    assert any(e["message"] == "stopping" for e in entries)


def test_an_unknown_log_format_is_refused(tmp_path):
    code, lines = run_hmsproxy("serve", "--log-format", "xml", "--port", "0", cwd=tmp_path)
    assert code == 2 and "log_format" in lines[-1] and "xml" in lines[-1]


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_every_call_is_audited_with_its_user_address_object_and_outcome(tmp_path, log_format):
    audit = tmp_path / "audit.log"
    with start_hmsproxy(tmp_path, audit_log=str(audit), log_format=log_format) as server:
        client = _client(server)
        client.get_all_databases()                     # before set_ugi: no user yet
        client.set_ugi("alice", ["analysts"])
        client.create_database(hms.Database(name="sales", parameters={}))
        with pytest.raises(hms.NoSuchObjectException):
            client.get_table("sales", "missing\tor\nnot")   # a hostile name stays on its one line
        client.close()
    lines = audit.read_text().splitlines()
    if log_format == "json":
        entries = [json.loads(line) for line in lines]
    else:
        entries = [dict(field.split("=", 1) for field in line.split("\t")) for line in lines]
    assert [(e["ugi"], e["ip"], e["cmd"], e.get("db"), e.get("tbl"), e["result"]) for e in entries] == [
        ("", "127.0.0.1", "get_all_databases", None, None, "ok"),
        ("alice", "127.0.0.1", "set_ugi", None, None, "ok"),
        ("alice", "127.0.0.1", "create_database", "hive.sales", None, "ok"),
        ("alice", "127.0.0.1", "get_table", "hive.sales",
         "missing\tor\nnot" if log_format == "json" else "missing\\tor\\nnot", "NoSuchObjectException"),
    ]


def test_the_audit_log_survives_rotation_by_copytruncate(tmp_path):
    """logrotate's copytruncate copies the file and empties it in place; the server, writing in append mode, puts
    its next line at the start of the emptied file (no run of NUL bytes where the old lines were)."""
    audit = tmp_path / "audit.log"
    with start_hmsproxy(tmp_path, audit_log=str(audit)) as server:
        client = _client(server)
        for _ in range(5):
            client.get_all_databases()
        os.truncate(audit, 0)
        client.get_all_functions()
        client.close()
    data = audit.read_bytes()
    assert b"\0" not in data
    assert [dict(f.split("=", 1) for f in line.split("\t"))["cmd"] for line in data.decode().splitlines()] == [
        "get_all_functions"]


def test_a_table_answered_from_ready_bytes_again_is_audited_every_time(tmp_path):
    """get_table of a cached table is answered from bytes held ready, and a repeat of it from the reply before:
    neither skips the audit line."""
    audit = tmp_path / "audit.log"
    with start_hmsproxy(tmp_path, audit_log=str(audit)) as server:
        client = _client(server)
        client.set_ugi("bob", [])
        client.create_database(hms.Database(name="sales", parameters={}))
        client.create_table(hms.Table(tableName="orders", dbName="sales", parameters={}, partitionKeys=[],
                                      tableType="EXTERNAL_TABLE", sd=hms.StorageDescriptor(cols=[])))
        for _ in range(3):
            assert client.get_table("sales", "orders").tableName == "orders"
        client.close()
    entries = [dict(field.split("=", 1) for field in line.split("\t")) for line in audit.read_text().splitlines()]
    assert [(e["ugi"], e["cmd"], e["tbl"], e["result"]) for e in entries if e["cmd"] == "get_table"] == [
        ("bob", "get_table", "orders", "ok")] * 3


def test_the_database_password_comes_from_a_file_and_not_the_command_line(tmp_path):
    password = f"pw-{uuid.uuid4().hex[:12]}"
    user = f"hmsproxy_pw_{uuid.uuid4().hex[:8]}"
    with fresh_database("mariadb", tmp_path) as url:
        database = url.rsplit("/", 1)[1]
        admin = create_engine(MARIADB_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'"))
            conn.execute(text(f"GRANT ALL ON {database}.* TO '{user}'@'%'"))
        try:
            (tmp_path / "password").write_text(password + "\n")
            url_without_password = f"mysql+pymysql://{user}@127.0.0.1:3306/{database}"
            server = start_hmsproxy_process(tmp_path, url_without_password, "--db-password-file",
                                            str(tmp_path / "password"))
            try:
                client = _client(server)
                client.create_database(hms.Database(name="through_the_file", parameters={}))
                assert "through_the_file" in client.get_all_databases()
                client.close()
                command_line = Path(f"/proc/{server.pid}/cmdline").read_bytes()
                assert password.encode() not in command_line
            finally:
                server.stop()
            assert password not in (tmp_path / f"hmsproxy-{server.port}.log").read_text()
            (tmp_path / "wrong").write_text("not-the-password\n")
            code, lines = run_hmsproxy("schema", "info", "--db", url_without_password, "--db-password-file",
                                       str(tmp_path / "wrong"), cwd=tmp_path)
            assert code != 0 and any("Access denied" in line for line in lines)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f"DROP USER '{user}'@'%'"))
            admin.dispose()


def test_an_empty_password_file_is_refused(tmp_path):
    (tmp_path / "empty").write_text("\n")
    code, lines = run_hmsproxy("serve", "--port", "0", "--db-password-file", str(tmp_path / "empty"), cwd=tmp_path)
    assert code == 2 and "holds no password" in lines[-1]
