"""The server runs on a read-only root file system, as deploy/kubernetes runs it (readOnlyRootFilesystem, an emptyDir
at /tmp, the warehouse on its volume): `hmsproxy serve` with the Deployment's settings in a mount namespace of its
own where / is remounted read-only, /tmp is a fresh tmpfs and one writable directory stands for the volumes (the
warehouse, and the SQLite file that stands for the external database). It serves, prewarms with its worker
processes, and stops cleanly; a write anywhere else would fail it (EROFS)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import thriftpy2.rpc

from deploy.files import KUBERNETES, load_yaml
from hmsproxy.idl import hms
from support.builders import placeholder_sd
from support.hmsproxy_server import SERVING
from support.polling import wait_for
from support.ports import free_ports
from support.required import missing

VOLUMES = "/mnt/volumes"   # where the writable directory appears inside the namespace
# Inside the namespace: a scratch tmpfs at /mnt holding the volumes' directory and the host's /tmp (reachable there
# once /tmp is covered); / read-only; a fresh tmpfs at /tmp; then, read-only at their own paths, the directories
# under the host's /tmp that the server's code lives in ($2, colon-separated: a CI clone and its venv may be under
# /tmp); then the server in `/`.
NAMESPACE_SCRIPT = (
    'set -e; mount -t tmpfs tmpfs /mnt; mkdir /mnt/volumes /mnt/host-tmp; mount --bind "$1" /mnt/volumes; '
    'mount --bind /tmp /mnt/host-tmp; mount -o remount,bind,ro /; mount -t tmpfs -o size=64m tmpfs /tmp; '
    'IFS=:; for code in $2; do mkdir -p "$code"; mount --bind "/mnt/host-tmp/${code#/tmp/}" "$code"; '
    'mount -o remount,bind,ro "$code"; done; unset IFS; cd /; shift 2; exec "$@"')
# The code the server runs: this checkout and the Python environment, where they lie under /tmp (hidden otherwise).
CODE_UNDER_TMP = ":".join(sorted({str(path) for path in (Path(__file__).resolve().parents[2], Path(sys.prefix))
                                  if path.is_relative_to("/tmp")}))


@pytest.fixture(scope="module")
def namespaces() -> None:
    try:
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True,
                                timeout=30)
    except FileNotFoundError:
        missing("mount-namespace", "unshare is not installed (util-linux)")
    if result.returncode != 0:
        missing("mount-namespace", f"no mount namespace can be made here (root needed): {result.stderr.decode()}")


def _config_map_env() -> dict[str, str]:
    """The Deployment's settings (its ConfigMap), which the test then points at the namespace's volumes."""
    config_map = load_yaml(KUBERNETES / "configmap.yaml")
    assert config_map["kind"] == "ConfigMap"
    return {name: str(value) for name, value in config_map["data"].items()}


@contextmanager
def _serving(volumes: Path, *args: str) -> Iterator[tuple[int, int]]:
    """`hmsproxy serve` on a read-only root; yields its Thrift and metrics ports, and stops it at the end with
    SIGTERM, as Kubernetes does, checking that it ended cleanly and wrote nothing where it could not."""
    port, metrics_port = free_ports(2)
    env = {key: value for key, value in os.environ.items() if not key.startswith("HMSPROXY_")}
    env.update(_config_map_env())
    env.update({"HMSPROXY_HOST": "127.0.0.1", "HMSPROXY_PORT": str(port), "HMSPROXY_METRICS_PORT": str(metrics_port),
                "HMSPROXY_DB": f"sqlite:///{VOLUMES}/database/metastore.db",
                "HMSPROXY_WAREHOUSE": f"{VOLUMES}/warehouse"})
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    log_path = volumes.parent / f"server-{port}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT,
                                    "sh", str(volumes), CODE_UNDER_TMP, sys.executable, "-m", "hmsproxy.cli", *args],
                                   env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: process.poll() is not None or SERVING in log_path.read_text(), "the server serving")
        assert process.poll() is None, log_path.read_text()
        yield port, metrics_port
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    text = log_path.read_text()
    assert code == 0, text
    assert "Read-only file system" not in text and "Errno 30" not in text, text
    assert "Traceback" not in text, text


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_the_server_runs_on_a_read_only_root(namespaces, tmp_path):
    volumes = tmp_path / "volumes"
    (volumes / "database").mkdir(parents=True)
    with _serving(volumes, "serve") as (port, _):
        client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=60000)
        client.create_database(hms.Database(name="ro", parameters={}))
        client.create_table(hms.Table(tableName="t", dbName="ro", sd=placeholder_sd(columns=[("a", "int")]),
                                      partitionKeys=[hms.FieldSchema(name="p", type="string")], parameters={},
                                      tableType="MANAGED_TABLE"))
        table = client.get_table("ro", "t")
        client.add_partitions([hms.Partition(dbName="ro", tableName="t", values=[str(i)], parameters={},
                                             sd=placeholder_sd(columns=[("a", "int")])) for i in range(20)])
        client.close()
    assert (volumes / "warehouse" / "ro.db" / "t" / "p=7").is_dir(), "the warehouse was written on its volume"
    assert table.sd.location.endswith("/warehouse/ro.db/t")

    # Again, with prewarm read by worker processes (they start with spawn, and may use /tmp).
    with _serving(volumes, "serve", "--prewarm-workers", "2", "--prewarm-workers-min-partitions", "1") as (
            port, metrics_port):
        wait_for(lambda: _status(f"http://127.0.0.1:{metrics_port}/readyz") == 200, "prewarm done")
        assert _status(f"http://127.0.0.1:{metrics_port}/healthz") == 200
        client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=60000)
        assert sorted(p.values[0] for p in client.get_partitions("ro", "t", -1)) == sorted(map(str, range(20)))
        client.close()
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        assert "hmsproxy_prewarm_partitions_loaded 20.0" in metrics
