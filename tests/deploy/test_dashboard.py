"""The Grafana dashboard shows what an operator must see: readiness as the server reports it (also for an instance
that never prewarms), failures without the ordinary answers, and the process, upstream, TLS and object-store
figures. Panel expressions are evaluated by promtool on made-up series where promtool is installed."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from deploy.files import load_dashboard, yaml_module
from deploy.promql import dashboard_expressions, metric_names
from support.required import installed

PROMTOOL = shutil.which("promtool")


def _panel_expressions(title: str) -> list[str]:
    return [expr for where, expr in dashboard_expressions(load_dashboard()) if where.startswith(f"panel {title!r}")]


def _as_promql(expr: str) -> str:
    """A panel's expression with Grafana's variables given values Prometheus reads."""
    return expr.replace("$__rate_interval", "5m").replace('"$instance"', '".*"')


def test_ready_is_what_the_server_reports_not_prewarms_end():
    """hmsproxy_prewarm_complete stays 0 for ever on a --no-cache instance, which is ready: hmsproxy_ready is the
    figure /readyz answers by."""
    (expr,) = _panel_expressions("Ready (answers /readyz)")
    assert metric_names(expr) == {"hmsproxy_ready"}


def test_the_process_upstream_tls_and_object_store_figures_have_panels():
    shown = set().union(*(metric_names(expr) for _, expr in dashboard_expressions(load_dashboard())))
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "hmsproxy_cache_hot_bytes",
            "hmsproxy_upstream_up", "hmsproxy_tls_handshake_failures_total",
            "hmsproxy_object_store_requests_total"} <= shown


def test_failed_calls_leave_out_the_ordinary_answers(tmp_path: Path):
    installed("promtool", "promtool", "promtool is not installed (Debian: apt-get install prometheus)")
    (expr,) = _panel_expressions("Failed calls/s by method and outcome")
    series = [{"series": f'hmsproxy_requests_total{{job="hmsproxy", instance="a", method="{method}", '
                         f'outcome="{outcome}"}}', "values": "0+60x20"}
              for method, outcome in (("get_table", "ok"), ("get_table", "NoSuchObjectException"),
                                      ("create_database", "AlreadyExistsException"),
                                      ("alter_table", "MetaException"))]
    tests = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": _as_promql(expr), "eval_time": "15m", "exp_samples": [
            {"labels": '{method="alter_table", outcome="MetaException"}', "value": 1}]}]}]}
    path = tmp_path / "dashboard_test.yml"
    path.write_text(yaml_module().safe_dump(tests))
    assert PROMTOOL is not None
    result = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("title", ["Process memory (RSS)", "Upstream up", "TLS handshake failures/s",
                                   "Object-store requests/s by outcome", "Hot partition bytes", "Process CPU"])
def test_each_new_panel_reads_one_figure_per_instance_or_outcome(title):
    (expr,) = _panel_expressions(title)
    assert '{instance=~"$instance"}' in expr
