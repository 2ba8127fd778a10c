"""Starts hmsproxy in this process on a free loopback port, for tests."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from hmsproxy.ops.config import Settings
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
                         rest_port=running.rest.port if running.rest else None, _stop=running.stop)


def start_hmsproxy_process(workdir: Path, db_url: str, *extra_args: str, attempts: int = 3,
                           ports: tuple[int, int] | None = None,
                           environment: Mapping[str, str] | None = None) -> RunningServer:
    """`hmsproxy serve` as its own process (for several instances on one database); stopped with SIGTERM.
    The metrics port is in `metrics_port` on the returned server. Started when the server says it serves:
    a port that merely accepts may be another process's. Started again on other ports when one of the two
    free ports it picked was taken before the server could bind it; `ports` (Thrift, metrics) starts it on
    those (a restart where the last one ran), once. The process gets none of this one's HMSPROXY_* variables,
    only `environment`'s."""
    return start_hmsproxy_processes([workdir], db_url, *extra_args, attempts=attempts, ports=ports,
                                    environment=environment)[0]


def start_hmsproxy_processes(workdirs: list[Path], db_url: str, *extra_args: str, attempts: int = 3,
                             ports: tuple[int, int] | None = None,
                             environment: Mapping[str, str] | None = None) -> list[RunningServer]:
    """One `hmsproxy serve` process per workdir, all launched before any is waited for (instances that start
    at one moment, as a scaled deployment's do), as start_hmsproxy_process starts one. Raises with the log of
    the first that did not come up, once the others are stopped."""
    launched = [_Launch(workdir, db_url, extra_args, ports, environment) for workdir in workdirs]
    try:
        for attempt in range(1 if ports else attempts):
            for launch in launched:
                launch.wait()
            clashed = [launch for launch in launched if launch.clashed()]
            if not clashed or attempt == attempts - 1 or ports:
                break
            for launch in clashed:
                launch.start()
        failed = next((launch for launch in launched if launch.process.poll() is not None), None)
        if failed is not None:
            raise RuntimeError(f"hmsproxy did not start: {failed.log_path.read_text()[-2000:]}")
    except BaseException:
        for launch in launched:
            launch.stop()
        raise
    return [launch.server() for launch in launched]


class _Launch:
    """One `hmsproxy serve` process, launched at once and waited for later."""

    def __init__(self, workdir: Path, db_url: str, extra_args: tuple[str, ...], ports: tuple[int, int] | None,
                 environment: Mapping[str, str] | None):
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir, self.db_url, self.extra_args, self.ports = workdir, db_url, extra_args, ports
        self.environment = dict(environment or {})
        self.start()

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HMSPROXY_")} | self.environment
        if env.get("PYTHONPATH"):   # the process runs in its workdir: a relative entry would name nothing there
            env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep))
        self.port, self.metrics_port = self.ports or free_ports(2)
        self.log_path = self.workdir / f"hmsproxy-{self.port}.log"
        with open(self.log_path, "w") as log:  # the child writes to its own copy of the file descriptor
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hmsproxy.cli", "serve", "--port", str(self.port), "--metrics-port",
                 str(self.metrics_port), "--db", self.db_url, "--warehouse", str(self.workdir / "warehouse"),
                 *self.extra_args],
                cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT)

    def wait(self) -> None:
        """Until the server says it serves or its process ended."""
        deadline = time.monotonic() + 60
        while self.process.poll() is None and SERVING not in self.log_path.read_text():
            if time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"hmsproxy did not start: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)  # waiting for a child process to open its ports

    def clashed(self) -> bool:
        """It ended because one of its ports was taken meanwhile."""
        return self.process.poll() is not None and "Address already in use" in self.log_path.read_text()

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def server(self) -> RunningServer:
        return RunningServer(host="127.0.0.1", port=self.port, warehouse=self.workdir / "warehouse",
                             workdir=self.workdir, metrics_port=self.metrics_port, pid=self.process.pid,
                             _stop=self.stop)
