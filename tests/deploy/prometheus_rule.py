"""deploy/kubernetes/monitoring/prometheusrule.yaml holds deploy/prometheus/alerts.yml's groups as a PrometheusRule
(the Prometheus operator's form of a rule file). This writes it from alerts.yml:
    PYTHONPATH=tests python -m deploy.prometheus_rule > deploy/kubernetes/monitoring/prometheusrule.yaml
and test_kubernetes_manifests.py fails when the two hold different rules."""
from __future__ import annotations

from typing import Any

from deploy.files import ALERTS, load_yaml, yaml_module

HEADER = """\
# GENERATED from deploy/prometheus/alerts.yml (the rules, their thresholds and reasons are there and in
# deploy/README.md); do not edit: change alerts.yml, then
#   PYTHONPATH=tests python -m deploy.prometheus_rule > deploy/kubernetes/monitoring/prometheusrule.yaml
# (tests/deploy fails while the two differ).
"""


def prometheus_rule() -> dict[str, Any]:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "hmsproxy", "labels": {"app.kubernetes.io/name": "hmsproxy"}},
            "spec": {"groups": load_yaml(ALERTS)["groups"]}}


def render() -> str:
    yaml = yaml_module()

    class Dumper(yaml.SafeDumper):
        """Multi-line expressions as literal blocks, as alerts.yml writes them, rather than escaped strings."""

    def text(dumper: Any, value: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return HEADER + yaml.dump(prometheus_rule(), Dumper=Dumper, sort_keys=False, width=112, allow_unicode=True)


if __name__ == "__main__":
    print(render(), end="")
