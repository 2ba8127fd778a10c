"""Running the `hmsproxy` command as a user does, in a process of its own."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_hmsproxy(*args: str, cwd: Path) -> tuple[int, list[str]]:
    """(exit code, the lines it printed: standard output, then standard error)."""
    done = subprocess.run([sys.executable, "-m", "hmsproxy.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()
