"""Parts of the machine a test needs, and what happens when one is missing.

On a developer's machine a missing part (a database server, Java, promtool, Hive's schema scripts...) skips the
tests that need it, with the reason. A run that names parts in TESTS_REQUIRE (CI names them all) fails
those tests instead: a database that did not come up or a tool that did not install cannot turn CI green by
skipping its tests. (Not an HMSPROXY_ variable: that prefix is for the server's settings.)
"""
from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

REQUIRE_VARIABLE = "TESTS_REQUIRE"
PARTS = frozenset({"mariadb", "postgres", "java", "promtool", "docker-compose", "openssl", "hive-schema", "kubectl",
                   "mount-namespace", "spark35"})


def required_parts() -> frozenset[str]:
    """The parts this run requires, from TESTS_REQUIRE (comma-separated); a name it does not know is an
    error, so that a typo cannot quietly require nothing."""
    named = {name.strip() for name in os.environ.get(REQUIRE_VARIABLE, "").split(",") if name.strip()}
    unknown = named - PARTS
    if unknown:
        raise ValueError(f"{REQUIRE_VARIABLE} names unknown parts {sorted(unknown)}; known: {sorted(PARTS)}")
    return frozenset(named)


def missing(part: str, reason: str) -> NoReturn:
    """Skips the calling test for want of `part`, or fails it where this run requires that part."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}")
    if part in required_parts():
        pytest.fail(f"{part} is required in this run ({REQUIRE_VARIABLE}) but missing: {reason}", pytrace=False)
    pytest.skip(reason)


def installed(name: str, part: str, reason: str) -> str:
    """The path of a command on PATH, or `missing(part, reason)`."""
    path = shutil.which(name)
    if path is None:
        missing(part, reason)
    return path
