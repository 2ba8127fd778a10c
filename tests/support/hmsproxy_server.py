"""Starts hmsproxy in this process on a free loopback port, for tests."""
from __future__ import annotations

from pathlib import Path

from hmsproxy.config import Settings
from hmsproxy.server import start
from support.running import RunningServer


def start_hmsproxy(workdir: Path, db_url: str | None = None, **overrides) -> RunningServer:
    workdir.mkdir(parents=True, exist_ok=True)
    settings = Settings(host="127.0.0.1", port=0, metrics_port=overrides.pop("metrics_port", 0),
                        db=db_url or f"sqlite:///{workdir / 'metastore.db'}",
                        warehouse=str(workdir / "warehouse"), **overrides)
    running = start(settings)
    return RunningServer(host="127.0.0.1", port=running.port, warehouse=settings.warehouse_path, workdir=workdir,
                         _stop=running.stop)
