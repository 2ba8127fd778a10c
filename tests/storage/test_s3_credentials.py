"""Credentials given the way operators give them, to a real `hmsproxy serve` process: the standard AWS variables
alone, or Hive's fs.s3a.* keys in --hive-site; the secret never shows in the process's arguments nor its log."""
from __future__ import annotations

from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as T

from support.builders import connect_hive, database, table, unique
from support.databases import BACKENDS, fresh_database
from support.hmsproxy_server import start_hmsproxy_process
from support.running import RunningServer
from support.s3_metastore import s3a_site
from support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server


def _serves_its_warehouse(s3: S3Server, bucket: str, server: RunningServer) -> None:
    """Create, count, rename and drop with deleteData, each checked in the bucket; and one request the store
    refuses (a bucket that does not exist), so the log holds an object-store failure."""
    c = connect_hive(server)
    try:
        db = unique("db")
        c.create_database(database(T, db))
        assert c.get_database(db).locationUri == f"s3a://{bucket}/warehouse/{db}.db"
        for name in ("a", "b"):
            s3.put(bucket, f"warehouse/{db}.db/t1/{name}", b"12345")
        c.create_table(table(T, db, "t1"))
        assert c.get_table(db, "t1").parameters["numFiles"] == "2"
        renamed = c.get_table(db, "t1")
        renamed.tableName = "t2"
        c.alter_table(db, "t1", renamed)
        assert s3.keys(bucket) == [f"warehouse/{db}.db/t2/a", f"warehouse/{db}.db/t2/b"]
        c.drop_table(db, "t2", True)
        assert s3.keys(bucket) == []
        with pytest.raises(T.MetaException, match="object store"):
            c.create_table(table(T, db, "lost", location=f"s3a://{bucket}-missing/t"))
    finally:
        c.close()


def _arguments_name_no_credential(server: RunningServer) -> None:
    """What `ps` shows of the running process."""
    arguments = Path(f"/proc/{server.pid}/cmdline").read_bytes().decode()
    assert SECRET_KEY not in arguments and ACCESS_KEY not in arguments, arguments


def _log(server: RunningServer) -> str:
    assert server.workdir is not None
    log = (server.workdir / f"hmsproxy-{server.port}.log").read_text()
    assert "object store request failed" in log   # the refused request was logged
    return log


def _served_log(s3: S3Server, bucket: str, tmp_path: Path, url: str, *args: str,
                environment: dict[str, str] | None = None) -> str:
    """`hmsproxy serve` with its warehouse in the bucket, checked to serve it and to show no credential in its
    arguments; its log once stopped."""
    server = start_hmsproxy_process(tmp_path / "hms", url, "--warehouse", f"s3a://{bucket}/warehouse", *args,
                                    environment=environment)
    try:
        _serves_its_warehouse(s3, bucket, server)
        _arguments_name_no_credential(server)
    finally:
        server.stop()
    return _log(server)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_configured_by_the_aws_variables_alone(s3, backend, tmp_path) -> None:
    bucket = s3.new_bucket()
    with fresh_database(backend, tmp_path) as url:
        log = _served_log(s3, bucket, tmp_path, url, environment=s3.environment())
    assert SECRET_KEY not in log and ACCESS_KEY not in log


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_configured_by_hive_site_s3a_keys(s3, backend, tmp_path) -> None:
    """fs.s3a.endpoint as host:port with fs.s3a.connection.ssl.enabled=false and path-style access, the keys in
    the file; the process has no AWS variable (it would fail without the file: no endpoint, no credentials)."""
    bucket = s3.new_bucket()
    site = s3a_site(tmp_path / "hive-site.xml", s3)
    with fresh_database(backend, tmp_path) as url:
        log = _served_log(s3, bucket, tmp_path, url, "--hive-site", str(site), "--log-level", "DEBUG")
    # At DEBUG too: botocore's own DEBUG lines carry each request's headers (the access key's id in the
    # Authorization header's Credential=), so its loggers stay at INFO whatever the server's level.
    assert SECRET_KEY not in log and ACCESS_KEY not in log
    assert " DEBUG " in log   # the server's own DEBUG lines are there
