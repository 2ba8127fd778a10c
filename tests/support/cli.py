"""Running the `hmsproxy` command as a user does, in a process of its own."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_hmsproxy(*args: str, cwd: Path, environment: Mapping[str, str] | None = None) -> tuple[int, list[str]]:
    """(exit code, the lines it printed: standard output, then standard error); `environment` is added to this
    process's."""
    done = subprocess.run([sys.executable, "-m", "hmsproxy.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=os.environ | dict(environment or {}))
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()
