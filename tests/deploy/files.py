"""Paths of the deployment files, and loading them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "Dockerfile"
DEPLOY = ROOT / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "hmsproxy.json"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"
HAPROXY_CONFIG = DEPLOY / "haproxy" / "haproxy.cfg"
KUBERNETES = DEPLOY / "kubernetes"


def yaml_module() -> Any:
    """PyYAML, or a skip that says where it belongs."""
    return pytest.importorskip("yaml", reason="PyYAML is not installed: it belongs in the test extras of "
                                              "pyproject.toml")


def load_yaml(path: Path) -> Any:
    return yaml_module().safe_load(path.read_text())


def load_yaml_documents(path: Path) -> list[Any]:
    return [doc for doc in yaml_module().safe_load_all(path.read_text()) if doc is not None]


def load_dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())
