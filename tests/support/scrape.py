"""Reading a running hmsproxy process's Prometheus metrics."""
from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from support.running import RunningServer


def metric(server: RunningServer, name: str, **labels: str) -> float:
    """The sum of a metric's samples with the given labels (0 when there is none)."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
    return sum(sample.value for family in text_string_to_metric_families(body) for sample in family.samples
               if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()))

