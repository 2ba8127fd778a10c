"""Waiting for another thread's or process's state: a condition polled until it holds or a deadline passes."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], what: str, timeout: float = 60.0, interval: float = 0.05) -> T:
    """Polls `condition` every `interval` s until it returns a true value, and returns that value; fails the test
    naming `what` when `timeout` s pass first (the timeout only bounds a broken test)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(interval)  # polling state this thread does not own
    return value
