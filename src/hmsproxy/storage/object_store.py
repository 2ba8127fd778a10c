"""Object-store clients on fsspec (s3fs for S3; gcsfs and adlfs when installed): each request bounded in time and
attempts, counted by operation and outcome with its latency, and failing as an ObjectStoreError that names no
credential (the server turns it into a MetaException).

Why fsspec/s3fs rather than pyarrow.fs: pyarrow's S3 read timeout is applied on Windows and macOS only, so a
black-holed endpoint would hold a call for ever on Linux; s3fs (aiobotocore) honours connect and read timeouts,
botocore's retry modes and its whole credential chain (the AWS_* variables, profiles, instance and pod roles), and
lets a listing be read a page at a time, so a bounded listing stops early.
"""
from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.ops.config import Settings
from hmsproxy.ops.metrics import Metrics
from hmsproxy.storage.locations import object_place

log = logging.getLogger(__name__)
T = TypeVar("T")
DELETE_BATCH = 1000   # S3's DeleteObjects takes at most 1,000 keys
# A JSON-ish reply of the store's client library: a dict of strings, lists and dicts.
Reply = dict[str, object]


class ObjectStoreError(OSError):
    """An object-store request failed; its message names the operation and place, never a credential."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing   # the object asked for does not exist


@dataclass(frozen=True)
class ObjectStoreSettings:
    """How the server reaches its object stores. The S3 keys are Hive's (fs.s3a.*, from --hive-site or the
    HMSPROXY_S3_* variables); where one is empty, botocore's own chain decides (AWS_ACCESS_KEY_ID, AWS_PROFILE,
    AWS_ENDPOINT_URL, AWS_DEFAULT_REGION, instance and pod roles). AWS_REGION is read too, as the AWS SDKs do."""
    s3_endpoint: str = ""
    s3_region: str = ""
    s3_path_style: bool | None = None          # None: botocore's choice (path style for a custom endpoint)
    s3_ssl: bool = True                        # an endpoint given without a scheme is https unless this is off
    s3_access_key: str = field(default="", repr=False)
    s3_secret_key: str = field(default="", repr=False)
    s3_session_token: str = field(default="", repr=False)
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 20.0
    attempts: int = 3

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.s3_access_key, self.s3_secret_key, self.s3_session_token) if s)


class Objects(Protocol):
    """One object store, as the warehouse needs it: keys are whole keys inside `bucket`."""

    def pages(self, bucket: str, prefix: str) -> Iterator[list[tuple[str, int]]]:
        """The objects under `prefix` (key, size), a page of the listing at a time, in key order."""

    def delete(self, bucket: str, keys: Sequence[str]) -> None:
        """Deletes the keys, DELETE_BATCH to a request."""

    def copy(self, bucket: str, source: str, target: str) -> None:
        """A copy made by the store itself (the bytes never pass through the server)."""

    def put(self, bucket: str, key: str, data: bytes) -> None: ...

    def read(self, bucket: str, key: str) -> bytes: ...


class Requests:
    """Runs one request: timed, counted, logged at most once a minute when it fails, its failure translated."""

    def __init__(self, store: str, metrics: Metrics | None, secrets: tuple[str, ...]) -> None:
        self._store = store
        self._metrics = metrics
        self._secrets = secrets
        self._failed = BurstLog("object store request failed: %s", 60.0, log)

    def run(self, operation: str, place: str, request: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            result = request()
        except Exception as exc:
            outcome = _outcome(exc)
            self._count(operation, outcome, started)
            message = self._scrubbed(f"{self._store} {operation} {place}: {type(exc).__name__}: {exc}")
            self._failed.happened(message)
            raise ObjectStoreError(message, missing=outcome == "not_found") from None
        self._count(operation, "ok", started)
        return result

    def _count(self, operation: str, outcome: str, started: float) -> None:
        if self._metrics is not None:
            self._metrics.object_store_requests.labels(self._store, operation, outcome).inc()
            self._metrics.object_store_latency.labels(self._store, operation).observe(time.perf_counter() - started)

    def _scrubbed(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _outcome(exc: Exception) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not_found"
    if isinstance(exc, PermissionError):
        return "denied"
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "timeout" if names & {"TimeoutError", "ReadTimeoutError", "ConnectTimeoutError", "FSTimeoutError",
                                 "ServerTimeoutError"} else "error"


class S3Objects:
    """S3 and the stores that speak its protocol (MinIO, Ceph, R2), through s3fs's botocore client."""

    def __init__(self, settings: ObjectStoreSettings, metrics: Metrics | None) -> None:
        import s3fs  # imported when an S3 location is first touched: a local warehouse never loads botocore

        config: dict[str, object] = {
            "connect_timeout": settings.connect_timeout_s, "read_timeout": settings.read_timeout_s,
            "retries": {"max_attempts": settings.attempts, "mode": "standard"},
            "max_pool_connections": 32}   # a move's copies run 16 at a time (object_files.py), beside other calls
        if settings.s3_path_style is not None:
            config["s3"] = {"addressing_style": "path" if settings.s3_path_style else "virtual"}
        region = settings.s3_region or os.environ.get("AWS_REGION") or None
        self._fs = s3fs.S3FileSystem(
            key=settings.s3_access_key or None, secret=settings.s3_secret_key or None,
            token=settings.s3_session_token or None, endpoint_url=endpoint_url(settings) or None,
            client_kwargs={"region_name": region} if region else {}, config_kwargs=config,
            skip_instance_cache=True, use_listings_cache=False)
        self._fs.retries = 1   # botocore retries (`attempts`); s3fs's own loop would multiply them
        self._requests = Requests("s3", metrics, settings.secrets())

    def _call(self, operation: str, place: str, **arguments: object) -> Reply:
        reply: Reply = self._requests.run(operation, place, lambda: self._fs.call_s3(operation, **arguments))
        return reply

    def pages(self, bucket: str, prefix: str) -> Iterator[list[tuple[str, int]]]:
        arguments: dict[str, object] = {"Bucket": bucket, "Prefix": prefix}
        while True:
            reply = self._call("list_objects_v2", f"{bucket}/{prefix}", **arguments)
            contents = reply.get("Contents") or []
            assert isinstance(contents, list)
            yield [(item["Key"], int(item["Size"])) for item in contents]
            if not reply.get("IsTruncated"):
                return
            arguments["ContinuationToken"] = reply["NextContinuationToken"]

    def delete(self, bucket: str, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start:start + DELETE_BATCH]
            reply = self._call("delete_objects", f"{bucket}/{batch[0]}", Bucket=bucket,
                               Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True})
            errors = reply.get("Errors") or []
            assert isinstance(errors, list)
            if errors:
                first = errors[0]
                raise ObjectStoreError(f"s3 delete_objects {bucket}: {len(errors)} of {len(batch)} keys not deleted, "
                                       f"{first.get('Key')}: {first.get('Code')} {first.get('Message')}")

    def copy(self, bucket: str, source: str, target: str) -> None:
        self._call("copy_object", f"{bucket}/{source}", Bucket=bucket, Key=target,
                   CopySource={"Bucket": bucket, "Key": source})

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self._call("put_object", f"{bucket}/{key}", Bucket=bucket, Key=key, Body=data)

    def read(self, bucket: str, key: str) -> bytes:
        def request() -> bytes:
            data: bytes = self._fs.cat_file(f"{bucket}/{key}")
            return data
        return self._requests.run("get_object", f"{bucket}/{key}", request)


def endpoint_url(settings: ObjectStoreSettings) -> str:
    """fs.s3a.endpoint as Hadoop reads it: a host (and port) alone is https unless fs.s3a.connection.ssl.enabled is
    false."""
    endpoint = settings.s3_endpoint.strip()
    if not endpoint or "://" in endpoint:
        return endpoint
    return ("https://" if settings.s3_ssl else "http://") + endpoint


class FsspecObjects:
    """GCS (gcsfs) and ABFS (adlfs) through fsspec's common calls: configured by their libraries' own variables
    (GOOGLE_APPLICATION_CREDENTIALS; AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_KEY or a service principal).
    Their listing comes whole (no pages), so a bounded listing is bounded after it; not tested against a server."""

    def __init__(self, protocol: str, metrics: Metrics | None) -> None:
        import fsspec

        self._fs = fsspec.filesystem(protocol, skip_instance_cache=True)
        self._requests = Requests(protocol, metrics, ())

    def pages(self, bucket: str, prefix: str) -> Iterator[list[tuple[str, int]]]:
        root = f"{_container(bucket)}/{prefix}"

        def request() -> dict[str, dict[str, object]]:
            found: dict[str, dict[str, object]] = self._fs.find(root, detail=True)
            return found
        found = self._requests.run("list", root, request)
        start = len(_container(bucket)) + 1   # a path is `container/key` (the memory file system adds a '/')
        yield sorted((path.lstrip("/")[start:], int(str(info.get("size") or 0))) for path, info in found.items()
                     if info.get("type") != "directory")

    def delete(self, bucket: str, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), DELETE_BATCH):
            batch = [f"{_container(bucket)}/{key}" for key in keys[start:start + DELETE_BATCH]]
            self._requests.run("delete", batch[0], functools.partial(self._fs.rm, batch))

    def copy(self, bucket: str, source: str, target: str) -> None:
        root = _container(bucket)
        self._requests.run("copy", f"{root}/{source}", lambda: self._fs.copy(f"{root}/{source}", f"{root}/{target}"))

    def put(self, bucket: str, key: str, data: bytes) -> None:
        path = f"{_container(bucket)}/{key}"
        self._requests.run("put", path, lambda: self._fs.pipe_file(path, data))

    def read(self, bucket: str, key: str) -> bytes:
        path = f"{_container(bucket)}/{key}"

        def request() -> bytes:
            data: bytes = self._fs.cat_file(path)
            return data
        return self._requests.run("get", path, request)


def _container(bucket: str) -> str:
    """fsspec's first path segment: an ABFS location's `container@account.dfs.core.windows.net` names the container
    (adlfs takes the account from AZURE_STORAGE_ACCOUNT_NAME); a GCS bucket is itself."""
    return bucket.partition("@")[0]


class ObjectStores:
    """The clients of the object stores the server touches (`families`), each made when first needed; a location on
    another store is stored as given and left alone, as one on HDFS is."""

    @classmethod
    def of(cls, settings: Settings, metrics: Metrics | None) -> ObjectStores:
        """The stores the server's settings name, and the warehouse's own."""
        families = {family for family in settings.object_stores.split(",") if family}
        root = object_place(settings.warehouse_location)
        if root is not None:
            families.add(root.family)
        return cls(frozenset(families), ObjectStoreSettings(
            s3_endpoint=settings.s3_endpoint, s3_region=settings.s3_region,
            s3_path_style=None if not settings.s3_path_style else settings.s3_path_style == "true",
            s3_ssl=settings.s3_ssl, s3_access_key=settings.s3_access_key, s3_secret_key=settings.s3_secret_key,
            s3_session_token=settings.s3_session_token, connect_timeout_s=settings.object_store_connect_timeout_s,
            read_timeout_s=settings.object_store_read_timeout_s, attempts=settings.object_store_attempts), metrics)

    def __init__(self, families: frozenset[str], settings: ObjectStoreSettings, metrics: Metrics | None) -> None:
        self.families = families
        self.settings = settings
        self._metrics = metrics
        self._clients: dict[str, Objects] = {}
        self._making = threading.Lock()

    def client(self, family: str) -> Objects:
        client = self._clients.get(family)
        if client is None:
            with self._making:
                client = self._clients.get(family)
                if client is None:
                    client = self._clients[family] = self._made(family)
        return client

    def _made(self, family: str) -> Objects:
        if family == "s3":
            return S3Objects(self.settings, self._metrics)
        if family == "gcs":
            return FsspecObjects("gcs", self._metrics)
        return FsspecObjects("abfs", self._metrics)
