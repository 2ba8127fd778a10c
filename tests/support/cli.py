"""Running the `hmsproxy` command as a user does, in a process of its own."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_hmsproxy(*args: str, cwd: Path, environment: Mapping[str, str] | None = None) -> tuple[int, list[str]]:
    """(exit code, the lines it printed: standard output, then standard error). The command gets none of this
    process's HMSPROXY_* variables (a developer's shell may set some), only `environment`'s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMSPROXY_")} | dict(environment or {})
    done = subprocess.run([sys.executable, "-m", "hmsproxy.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()
