"""An S3-protocol server on loopback (moto's, from PyPI), for the object-store tests: a real HTTP endpoint that
speaks S3's REST API, so every request the server makes crosses a real socket."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from support.ports import free_port

ACCESS_KEY = "hmsproxy-test-key"
SECRET_KEY = "hmsproxy-test-secret-value"


@dataclass(frozen=True)
class S3Server:
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self, endpoint: str | None = None) -> dict[str, str]:
        """The standard AWS variables a client of this server needs (endpoint: another way to it, e.g. a relay)."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": endpoint or self.endpoint}

    def client(self, endpoint: str | None = None):   # a boto3 S3 client, to look at the bucket from outside
        import boto3

        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name="us-east-1")

    def new_bucket(self) -> str:
        name = f"lake-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def put(self, bucket: str, key: str, data: bytes = b"x") -> None:
        self.client().put_object(Bucket=bucket, Key=key, Body=data)


@contextmanager
def running_s3_server() -> Iterator[S3Server]:
    """moto's server in its own process, until the block ends."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"})
    try:
        _wait_for_port(port, process)
        yield S3Server(port)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto's S3 server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)   # polling a port another process opens: nothing to wait on instead
    raise RuntimeError(f"moto's S3 server did not listen on {port} within {timeout_s:.0f} s")
