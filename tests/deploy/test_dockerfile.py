"""The image as the Dockerfile builds it (no docker engine here: read as the builder reads it): dependencies in a
layer that a code change does not rebuild, data writable under an arbitrary uid, a healthcheck with no shell."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib

from deploy.files import DOCKERFILE, ROOT


def _instructions() -> list[tuple[str, str]]:
    """(instruction, its arguments) in order, continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_the_dependencies_are_installed_before_the_code_is_copied():
    steps = _instructions()
    first = next(i for i, (verb, args) in enumerate(steps) if verb == "RUN" and "pip install" in args)
    code = next(i for i, (verb, args) in enumerate(steps) if verb == "COPY" and args.startswith("src "))
    assert first < code
    assert [args for verb, args in steps[:first] if verb == "COPY"] == ["pyproject.toml ./"]   # all it reads
    install = steps[first][1]
    # the layer's own command, run here on the repository's pyproject: it names exactly the project's dependencies
    listing = shlex.split(install.split(">", 1)[0])
    assert listing[:2] == ["python", "-c"]
    printed = subprocess.run([sys.executable, "-c", listing[2]], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split("\n")
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert [line for line in printed if line] == expected
    after = [args for verb, args in steps[code:] if verb == "RUN" and "pip install" in args]
    assert after and all("--no-deps" in args for args in after)


def test_data_is_writable_by_group_zero_and_the_user_is_numeric():
    steps = _instructions()
    run = " ".join(args for verb, args in steps if verb == "RUN")
    assert "chown -R 1000:0 /data" in run and "chmod -R g=u /data" in run
    assert ("USER", "1000") in steps   # a numeric uid: Kubernetes' runAsNonRoot can check it


def test_the_healthcheck_runs_without_a_shell():
    check = next(args for verb, args in _instructions() if verb == "HEALTHCHECK")
    command = json.loads(check.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"] and "/readyz" in command[2] and "HMSPROXY_METRICS_PORT" in command[2]
