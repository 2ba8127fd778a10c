"""hmsproxy with its warehouse on the loopback S3 server: the server, its bucket and ways to look at both."""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from hmsclient.genthrift.hive_metastore import ttypes as T

from support.builders import connect_hive, database, unique
from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy
from support.ports import free_port
from support.running import RunningServer
from support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from support.scrape import metric

REQUESTS = "hmsproxy_object_store_requests_total"   # the counter's sample name


@dataclass
class Lake:
    """One hmsproxy whose warehouse is `s3a://<bucket>/warehouse` on `s3`."""
    s3: S3Server
    bucket: str
    server: RunningServer

    @property
    def root(self) -> str:
        return f"s3a://{self.bucket}/warehouse"

    def client(self) -> Any:
        return connect_hive(self.server)

    def database(self, client: Any) -> str:
        """A new database with its default location; its name."""
        name = unique("db")
        client.create_database(database(T, name))
        return name

    def keys(self, prefix: str) -> list[str]:
        return self.s3.keys(self.bucket, prefix)

    def put(self, keys: Iterable[str], data: bytes = b"0123456789") -> None:
        put_many(self.s3, self.bucket, keys, data)

    def requests(self, operation: str, outcome: str = "ok") -> float:
        return metric(self.server, REQUESTS, store="s3", operation=operation, outcome=outcome)


def put_many(s3: S3Server, bucket: str, keys: Iterable[str], data: bytes = b"0123456789") -> None:
    """Puts the objects, several at a time (a thousand one by one take seconds)."""
    client = s3.client()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=data), keys))


@contextlib.contextmanager
def lake_server(s3: S3Server, backend: str, workdir: Path, *, endpoint: str | None = None,
                **overrides: Any) -> Iterator[Lake]:
    """An in-process hmsproxy on a fresh database of the backend, its warehouse in a new bucket, reaching S3 at
    `endpoint` (the server itself unless a relay is given), with metrics served."""
    bucket = s3.new_bucket()
    with fresh_database(backend, workdir) as url:
        server = start_hmsproxy(workdir, url, warehouse=f"s3a://{bucket}/warehouse",
                                s3_endpoint=endpoint or s3.endpoint, s3_access_key=ACCESS_KEY,
                                s3_secret_key=SECRET_KEY, metrics_port=free_port(), **overrides)
        try:
            yield Lake(s3, bucket, server)
        finally:
            server.stop()


def hive_site(path: Path, properties: dict[str, str]) -> Path:
    """Writes a hive-site.xml holding the properties; returns its path."""
    entries = "".join(f"<property><name>{escape(k)}</name><value>{escape(v)}</value></property>"
                      for k, v in properties.items())
    path.write_text(f"<?xml version='1.0'?><configuration>{entries}</configuration>\n")
    return path


def s3a_site(path: Path, s3: S3Server, endpoint_port: int | None = None) -> Path:
    """A hive-site.xml giving S3 as Hadoop's S3A is given it: host:port, no TLS, path-style, keys."""
    return hive_site(path, {"fs.s3a.endpoint": f"127.0.0.1:{endpoint_port or s3.port}",
                            "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.path.style.access": "true",
                            "fs.s3a.endpoint.region": "us-east-1", "fs.s3a.access.key": ACCESS_KEY,
                            "fs.s3a.secret.key": SECRET_KEY})
