"""One S3 server (moto's, on loopback) for the whole object-store suite, and an hmsproxy whose warehouse is on it for
each database backend."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.databases import BACKENDS
from support.s3_metastore import Lake, lake_server
from support.s3_server import S3Server, running_s3_server


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    with running_s3_server() as server:
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def lake(request, s3, tmp_path_factory) -> Iterator[Lake]:
    """hmsproxy on a fresh database of each backend, its warehouse `s3a://<new bucket>/warehouse`."""
    with lake_server(s3, request.param, tmp_path_factory.mktemp(f"lake-{request.param}")) as running:
        yield running
