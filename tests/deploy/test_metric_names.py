"""The dashboard and the alert rules read only metrics a running server exports (a misspelt or renamed metric
would leave a panel empty and an alert silent, with no error anywhere)."""
from __future__ import annotations

import copy
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.files import ALERTS, load_dashboard, load_yaml, yaml_module
from deploy.promql import (
    PROMETHEUS_SERIES,
    dashboard_expressions,
    dashboard_variable_queries,
    exported_names,
    metric_names,
    variable_query_names,
)
from hmsproxy.ops.config import Settings
from hmsproxy.server import start
from support.ports import free_port
from support.required import installed


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> set[str]:
    """The series names of a real server's /metrics (cache on, SQLite), from its TYPE lines."""
    workdir = tmp_path_factory.mktemp("metrics-server")
    metrics_port = free_port()  # 0 would turn the metrics endpoint off
    server = start(Settings(host="127.0.0.1", port=0, metrics_port=metrics_port, db=f"sqlite:///{workdir}/m.db",
                            warehouse=str(workdir / "warehouse")))
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    finally:
        server.stop()
    names = exported_names(body)
    assert "hmsproxy_requests_total" in names and "hmsproxy_request_seconds_bucket" in names, body[:2000]
    return names


def _alert_expressions() -> Iterator[tuple[str, str]]:
    for group in load_yaml(ALERTS)["groups"]:
        for rule in group["rules"]:
            yield f"rule {rule.get('alert') or rule.get('record')!r}", rule["expr"]


def _dashboard_uses(dashboard: dict) -> dict[str, set[str]]:
    uses = {where: metric_names(expr) for where, expr in dashboard_expressions(dashboard)}
    uses.update({where: variable_query_names(query) for where, query in dashboard_variable_queries(dashboard)})
    return uses


def _unknown(uses: dict[str, set[str]], exported: set[str]) -> dict[str, set[str]]:
    known = exported | PROMETHEUS_SERIES
    return {where: names - known for where, names in uses.items() if names - known}


def test_the_tokenizer_finds_metric_names_only():
    assert metric_names('histogram_quantile(0.99, sum by (method, le) (rate(hmsproxy_request_seconds_bucket'
                        '{instance=~"$instance", le!="+Inf"}[$__rate_interval])))'
                        ) == {"hmsproxy_request_seconds_bucket"}
    assert metric_names('hmsproxy_prewarm_complete == 0 and on (job, instance) hmsproxy_prewarm_tables{state="total"}'
                        ' unless on (job, instance) changes(hmsproxy_prewarm_tables{state="done"}[10m]) > 0'
                        ) == {"hmsproxy_prewarm_complete", "hmsproxy_prewarm_tables"}
    assert metric_names("sum(rate(a_total[5m] offset 1h)) by (kind) / ignoring (state) group_left (x) b > bool 1e3"
                        ) == {"a_total", "b"}
    assert metric_names('absent(up{job="hmsproxy"})') == {"up"}
    assert variable_query_names("label_values(hmsproxy_prewarm_complete, instance)") == {"hmsproxy_prewarm_complete"}


def test_the_exported_names_follow_the_types():
    exposition = ("# TYPE x_total counter\n# TYPE h histogram\n# TYPE g gauge\n"
                  "# HELP y_total not a TYPE line\n")
    assert exported_names(exposition) == {"x_total", "x_created", "h_bucket", "h_sum", "h_count", "h_created", "g"}


def test_the_dashboard_reads_only_exported_metrics(exported):
    uses = _dashboard_uses(load_dashboard())
    assert sum(len(names) for names in uses.values()) >= 20, uses
    assert _unknown(uses, exported) == {}


def test_the_alert_rules_read_only_exported_metrics(exported):
    uses = {where: metric_names(expr) for where, expr in _alert_expressions()}
    assert len(uses) >= 5 and all(uses.values()), uses
    assert _unknown(uses, exported) == {}


def test_a_misspelt_metric_in_the_dashboard_is_reported(exported):
    dashboard = copy.deepcopy(load_dashboard())
    target = next(target for panel in dashboard["panels"] for target in panel.get("targets", [])
                  if "hmsproxy_cache_bytes" in target.get("expr", ""))
    target["expr"] = target["expr"].replace("hmsproxy_cache_bytes", "hmsproxy_cache_byte")
    unknown = _unknown(_dashboard_uses(dashboard), exported)
    assert [names for names in unknown.values()] == [{"hmsproxy_cache_byte"}]


def test_the_dashboard_shows_what_operators_need():
    """The panels of the issue: calls/s and latency per method, hit ratio per kind, prewarm progress, cache
    bytes and evictions, poller lag, errors."""
    used = set().union(*_dashboard_uses(load_dashboard()).values())
    assert {"hmsproxy_requests_total", "hmsproxy_request_seconds_bucket", "hmsproxy_cache_lookups_total",
            "hmsproxy_prewarm_tables", "hmsproxy_prewarm_complete", "hmsproxy_cache_bytes",
            "hmsproxy_cache_evictions_total", "hmsproxy_notification_lag_seconds",
            "hmsproxy_notification_poll_errors_total"} <= used
    titles = [panel["title"] for panel in load_dashboard()["panels"]]
    assert len(titles) == len(set(titles)), titles


def test_dashboard_panels_use_the_datasource_variable():
    dashboard = load_dashboard()
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource", "instance"]
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and all('instance=~"$instance"' in t["expr"] for t in panel["targets"]), panel["title"]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_dashboard_expressions_are_valid_promql(tmp_path: Path):
    """Each panel's query, with Grafana's variables given values, as a recording rule promtool parses."""
    promtool = installed("promtool", "promtool", "promtool is not installed (Debian: apt-get install prometheus)")
    rules = []
    for number, (_, expr) in enumerate(dashboard_expressions(load_dashboard())):
        promql = expr.replace("$__rate_interval", "5m").replace("$instance", ".*")
        assert "$" not in promql, expr
        rules.append({"record": f"dashboard:panel_{number}", "expr": promql})
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml_module().safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_the_dashboard_can_be_provisioned():
    """No numeric dashboard id (Grafana assigns one), a fixed uid for links, and panels on the grid."""
    dashboard = load_dashboard()
    assert dashboard["uid"] == "hmsproxy" and "id" not in dashboard
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
