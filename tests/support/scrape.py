"""Reading a running hmsproxy process's Prometheus metrics, and waiting for one to reach a value."""
from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from support.running import RunningServer


def metric(server: RunningServer, name: str, **labels: str) -> float:
    """The sum of a metric's samples with the given labels (0 when there is none)."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
    return sum(sample.value for family in text_string_to_metric_families(body) for sample in family.samples
               if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0, interval: float = 0.05) -> None:
    """Polls `condition` every `interval` s until it holds (at most `timeout` s)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(interval)  # polling another process's state
