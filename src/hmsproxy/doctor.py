"""`hmsproxy doctor`: checks a configuration end to end before it is served, and says what to fix.

Each check reports ok or what is wrong with the fix to make: the database answers and its schema is one serve
takes, the notification log can be read, the warehouse can be written, the ports are free, the TLS files load,
the upstreams answer. Nothing is changed (a probe file written to the warehouse is deleted again): an empty
database is reported, not initialised.
"""
from __future__ import annotations

import os
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from sqlalchemy import text
from sqlalchemy.engine import make_url

from hmsproxy.ops.config import Settings
from hmsproxy.rpc.tls import TlsRefused, server_context
from hmsproxy.storage.locations import object_place
from hmsproxy.storage.object_store import ObjectStoreError, ObjectStores
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.event_log import current_event_id
from hmsproxy.store.sql.schema_setup import SchemaRefused, check_servable, schema_version


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str
    fix: str = ""


def diagnose(settings: Settings) -> list[Finding]:
    findings = [*_database(settings)] if not settings.upstream else [*_upstreams(settings)]
    if not settings.upstream:
        findings.append(_warehouse(settings))
    findings.append(_port("thrift port", settings.host, settings.port, "--port"))
    if settings.metrics_port:
        findings.append(_port("metrics port", settings.host, settings.metrics_port, "--metrics-port"))
    if settings.tls:
        findings.append(_tls(settings))
    return findings


def report(findings: list[Finding], say: Callable[[str], None] = print) -> int:
    """Prints one line per finding (and its fix); exit code 0 when everything is ok."""
    for finding in findings:
        say(f"{'ok  ' if finding.ok else 'FAIL'} {finding.check}: {finding.detail}")
        if finding.fix:
            say(f"     fix: {finding.fix}")
    failed = sum(not f.ok for f in findings)
    say("everything checked is ready to serve" if not failed else f"{failed} problem(s) to fix before serving")
    return 0 if not failed else 1


def _database(settings: Settings) -> Iterator[Finding]:
    url = make_url(settings.db)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists():
        yield Finding("database", True, f"no file {url.database} yet: serve creates it with Hive 4.0.0's schema")
        return
    db = Database(settings.db, connect_timeout_s=settings.db_connect_timeout_s,
                  statement_timeout_s=settings.db_statement_timeout_s)
    where = db.engine.url.render_as_string()   # the password hidden
    try:
        try:
            with db.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as exc:
            yield Finding("database", False, f"{where} does not answer: {_first_line(exc)}",
                          "check the URL (--db, HMSPROXY_DB), that the database server runs and is reachable from "
                          "here, and the user's password (--db-password-file)")
            return
        yield Finding("database", True, f"{where} answers")
        try:
            layout = check_servable(db)
        except SchemaRefused as exc:
            yield Finding("schema", False, str(exc), "`hmsproxy schema info` says more; `hmsproxy schema upgrade` "
                                                     "brings an older Hive schema up to date")
            return
        if layout == "empty":
            yield Finding("schema", True, "none yet: serve creates Hive 4.0.0's schema at its first start "
                                          "(`hmsproxy schema init` does it now)")
            return
        yield Finding("schema", True, f"version {schema_version(db)} ({layout}), served as it is")
        try:
            with db.engine.connect() as conn:
                head = current_event_id(conn)
            yield Finding("notification log", True, f"readable, newest event {head}")
        except Exception as exc:
            yield Finding("notification log", False, f"cannot be read: {_first_line(exc)}",
                          "grant the user SELECT and UPDATE on NOTIFICATION_LOG and NOTIFICATION_SEQUENCE")
    finally:
        db.dispose()


def _upstreams(settings: Settings) -> Iterator[Finding]:
    for uri in settings.upstream.split(","):
        parsed = urlparse(uri.strip())
        try:
            with socket.create_connection((parsed.hostname or "", parsed.port or 9083), timeout=5):
                pass
            yield Finding("upstream", True, f"{uri.strip()} accepts connections")
        except OSError as exc:
            yield Finding("upstream", False, f"{uri.strip()} does not accept connections: {exc}",
                          "check --upstream (thrift://host:port) and that the Java HMS runs and is reachable")


def _warehouse(settings: Settings) -> Finding:
    if settings.warehouse_on_object_store:
        return _object_store_warehouse(settings)
    root = settings.warehouse_path
    fix = "give the server's user write access to it, or choose another with --warehouse"
    if not root.exists():
        parent = next(p for p in root.parents if p.exists())
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            return Finding("warehouse", True, f"{root} does not exist yet: serve creates it in {parent}")
        return Finding("warehouse", False, f"{root} does not exist and {parent} is not a writable directory", fix)
    try:
        with tempfile.NamedTemporaryFile(dir=root, prefix=".hmsproxy-doctor-"):
            pass
        return Finding("warehouse", True, f"{root} is writable")
    except OSError as exc:
        return Finding("warehouse", False, f"{root} is not writable: {exc}", fix)


def _port(name: str, host: str, port: int, flag: str) -> Finding:
    if port == 0:
        return Finding(name, True, "0: a free one is picked at start")
    try:
        with socket.create_server((host, port)):
            return Finding(name, True, f"{host}:{port} is free")
    except OSError as exc:
        return Finding(name, False, f"{host}:{port} cannot be bound: {exc.strerror or exc}",
                       f"stop what listens there (another hmsproxy or metastore?) or choose another with {flag}")


def _tls(settings: Settings) -> Finding:
    try:
        server_context(settings.tls_cert, settings.tls_key, settings.tls_client_ca)
        return Finding("tls", True, f"certificate {settings.tls_cert} loads")
    except TlsRefused as exc:
        return Finding("tls", False, str(exc), "give a PEM certificate chain and its unencrypted key (--tls-cert, "
                                               "--tls-key) that belong together")


def _first_line(exc: Exception) -> str:
    return (str(getattr(exc, "orig", None) or exc).splitlines() or [type(exc).__name__])[0]


def _object_store_warehouse(settings: Settings) -> Finding:
    """Lists the warehouse prefix and writes and deletes a probe object in it (a hidden name: quick statistics skip
    it), with the timeouts and attempts the server would use."""
    root = object_place(settings.warehouse_location)
    assert root is not None   # the setting was checked to name an object store and a bucket
    fix = ("check the endpoint (--s3-endpoint or AWS_ENDPOINT_URL), the credentials (the AWS variables, a profile, "
           "a role, or fs.s3a.* in --hive-site) and that they may list, write and delete in the bucket")
    client = ObjectStores.of(settings, None).client(root.family)
    probe = f"{root.prefix}.hmsproxy-doctor-{uuid.uuid4().hex}"
    try:
        next(client.pages(root.bucket, root.prefix), [])
        client.put(root.bucket, probe, b"")
        client.delete(root.bucket, [probe])
    except ObjectStoreError as exc:
        return Finding("warehouse", False, f"{settings.warehouse_location} cannot be listed and written: {exc}", fix)
    return Finding("warehouse", True, f"{settings.warehouse_location} can be listed and written")
