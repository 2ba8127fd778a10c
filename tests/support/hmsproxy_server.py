"""Starts hmsproxy in this process on a free loopback port, for tests."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from hmsproxy.config import Settings
from hmsproxy.server import start
from support.ports import free_ports
from support.running import RunningServer

SERVING = "hmsproxy listening on"  # printed (at any log level) once both the Thrift and the metrics port are bound


def start_hmsproxy(workdir: Path, db_url: str | None = None, **overrides) -> RunningServer:
    workdir.mkdir(parents=True, exist_ok=True)
    settings = Settings(host="127.0.0.1", port=0, metrics_port=overrides.pop("metrics_port", 0),
                        db=db_url or f"sqlite:///{workdir / 'metastore.db'}",
                        warehouse=overrides.pop("warehouse", str(workdir / "warehouse")), **overrides)
    running = start(settings)
    return RunningServer(host="127.0.0.1", port=running.port, warehouse=settings.warehouse_path, workdir=workdir,
                         metrics_port=running.metrics_server.port if running.metrics_server else None,
                         _stop=running.stop)


def start_hmsproxy_process(workdir: Path, db_url: str, *extra_args: str, attempts: int = 3,
                           ports: tuple[int, int] | None = None,
                           environment: Mapping[str, str] | None = None) -> RunningServer:
    """`hmsproxy serve` as its own process (for several instances on one database); stopped with SIGTERM.
    The metrics port is in `metrics_port` on the returned server. Started when the server says it serves:
    a port that merely accepts may be another process's. Started again on other ports when one of the two
    free ports it picked was taken before the server could bind it; `ports` (Thrift, metrics) starts it on
    those (a restart where the last one ran), once. The process gets none of this one's HMSPROXY_* variables,
    only `environment`'s."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMSPROXY_")} | dict(environment or {})
    for attempt in range(1 if ports else attempts):
        port, metrics_port = ports or free_ports(2)
        log_path = workdir / f"hmsproxy-{port}.log"
        with open(log_path, "w") as log:  # the child writes to its own copy of the file descriptor
            process = subprocess.Popen(
                [sys.executable, "-m", "hmsproxy.cli", "serve", "--port", str(port), "--metrics-port",
                 str(metrics_port), "--db", db_url, "--warehouse", str(workdir / "warehouse"), *extra_args],
                cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while process.poll() is None and SERVING not in log_path.read_text():
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"hmsproxy did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.05)  # waiting for a child process to open its ports
        if process.poll() is None:
            break
        if "Address already in use" not in log_path.read_text() or ports or attempt == attempts - 1:
            raise RuntimeError(f"hmsproxy did not start: {log_path.read_text()[-2000:]}")

    def stop() -> None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()

    return RunningServer(host="127.0.0.1", port=port, warehouse=workdir / "warehouse", workdir=workdir,
                         metrics_port=metrics_port, pid=process.pid, _stop=stop)
