"""A server loads only the libraries of what it serves: without the Iceberg REST catalog, none of its stack.

Importing pyiceberg, s3fs, Starlette and uvicorn costs about a second of CPU, which every start paid before a
prewarm could begin (a fifth of the start of a server with 100k partitions on a slow machine). Each server here
starts in a fresh interpreter, so that no other test's imports count.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.ports import free_port

TESTS = Path(__file__).resolve().parents[1]
# The REST catalog's stack, and the object-store clients it reads manifests with.
CATALOG_STACK = ("pyiceberg", "starlette", "uvicorn", "s3fs", "botocore", "fsspec", "pyarrow")
STARTED = """
import json, sys
from pathlib import Path
from support.hmsproxy_server import start_hmsproxy
server = start_hmsproxy(Path(sys.argv[1]), iceberg_rest_port=int(sys.argv[2]))
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[3].split(",")))
server.stop()
print(json.dumps(loaded))
"""


def _loaded_by_a_server(workdir: Path, rest_port: int) -> list[str]:
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", STARTED, str(workdir), str(rest_port), ",".join(CATALOG_STACK)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, (done.stdout[-1000:], done.stderr[-2000:])
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_a_server_without_the_rest_catalog_loads_none_of_its_stack(tmp_path: Path) -> None:
    assert _loaded_by_a_server(tmp_path, 0) == []


def test_a_server_with_the_rest_catalog_loads_it(tmp_path: Path) -> None:
    loaded = _loaded_by_a_server(tmp_path, free_port())
    assert {"pyiceberg", "starlette", "uvicorn"} <= set(loaded), loaded
