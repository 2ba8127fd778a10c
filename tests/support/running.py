"""A metastore server started by the tests (the reference HMS or hmsproxy)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunningServer:
    host: str
    port: int
    warehouse: Path  # the server's hive.metastore.warehouse.dir (managed tables of `default` go here)
    workdir: Path | None = None  # server-specific files (logs, database), if any
    metrics_port: int | None = None  # where /metrics is served, when the server has it on
    pid: int | None = None  # the server's process, when it runs in one of its own
    hive_schema: str | None = None  # the version of Hive's schema script that laid out its database, if one did
    rest_port: int | None = None  # the Iceberg REST catalog's port, when it is on
    _stop: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    @property
    def rest_uri(self) -> str:
        return f"http://{self.host}:{self.rest_port}/iceberg"

    def stop(self) -> None:
        """Stops the server; calling it again does nothing."""
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
