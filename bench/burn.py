"""A process that burns one core while a benchmark measures: a deliberately loaded machine, reproducibly.

On a 2-core machine a figure taken while another process spins on one core is what a busy host gives: whatever
the server overlaps (its prewarm workers, the database producing rows while the server parses them) shares one
core with the rest. The burner's own CPU share is reported, so a run shows that the core was burned.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

_SPIN = "while True: pass"


class BurnedCore:
    """`with BurnedCore():` a Python process spinning for as long as the block runs (nothing when `enabled` is
    false, so callers need one code path)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.share = 0.0   # the burner's CPU seconds per second of its life, set on exit

    def __enter__(self) -> BurnedCore:
        if self.enabled:
            self.process = subprocess.Popen([sys.executable, "-c", _SPIN])
            self.started = time.monotonic()
        return self

    def cpu_seconds(self) -> float:
        assert self.process is not None
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.process is None:
            return
        self.share = self.cpu_seconds() / max(time.monotonic() - self.started, 1e-9)
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None
