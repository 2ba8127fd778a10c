"""deploy/prometheus/alerts.yml: well-formed rules, and (where promtool is installed) rules Prometheus accepts
whose expressions select what they should on made-up series."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from deploy.files import ALERTS, PROMETHEUS_CONFIG, load_yaml, yaml_module
from support.required import installed

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.usefixtures("promtool_installed")
DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
REQUIRED = {"HmsproxyDown", "HmsproxyPrewarmStuck", "HmsproxyCacheHitRatioLow", "HmsproxyNotificationLagHigh",
            "HmsproxyErrorRateHigh", "HmsproxyReplicaMissing", "HmsproxyUpstreamDown", "HmsproxyPollerStopped"}


@pytest.fixture(scope="module")
def promtool_installed() -> None:
    installed("promtool", "promtool",
              "promtool is not installed (Debian: apt-get install prometheus); the structural checks still run")


def _rules() -> list[dict]:
    return [rule for group in load_yaml(ALERTS)["groups"] for rule in group["rules"]]


def test_rules_are_well_formed():
    document = load_yaml(ALERTS)
    assert set(document) == {"groups"}
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit"} and group["name"] and group["rules"], group
    names = []
    for rule in _rules():
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
        assert re.fullmatch(r"Hmsproxy[A-Z][A-Za-z]+", rule["alert"]), rule
        assert isinstance(rule["expr"], str) and rule["expr"].strip(), rule
        assert "for" not in rule or DURATION.match(str(rule["for"])), rule
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule
        assert rule["annotations"]["summary"].strip() and rule["annotations"]["description"].strip(), rule
        names.append(rule["alert"])
    assert len(names) == len(set(names)), names
    assert REQUIRED <= set(names)


def test_prometheus_loads_these_rules():
    config = load_yaml(PROMETHEUS_CONFIG)
    assert [(PROMETHEUS_CONFIG.parent / name).resolve() for name in config["rule_files"]] == [ALERTS.resolve()]
    assert "hmsproxy" in [job["job_name"] for job in config["scrape_configs"]]


@needs_promtool
def test_promtool_accepts_the_rules_and_the_config():
    for command in (["check", "rules", str(ALERTS)], ["check", "config", str(PROMETHEUS_CONFIG)]):
        result = subprocess.run([PROMTOOL, *command], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr


def _expr(alert: str) -> str:
    return next(rule["expr"] for rule in _rules() if rule["alert"] == alert)


def _series(job_instance: str, name: str, values: str, **labels: str) -> dict:
    label_text = ", ".join([f'job="hmsproxy", instance="{job_instance}"', *(f'{k}="{v}"' for k, v in labels.items())])
    return {"series": f"{name}{{{label_text}}}", "values": values}


# Made-up series, one sample a minute for 40 minutes, and what each alert's expression selects from them at
# minute 30: every case has an instance that must be selected and ones that must not.
CASES = {
    "HmsproxyDown": (
        [_series("a", "up", "0x40"), _series("b", "up", "1x40")],
        [('up{job="hmsproxy", instance="a"}', 0)]),
    "HmsproxyReplicaMissing": (
        [  # a: up throughout; b: up, then gone from discovery at minute 20 (no sample at all, not 0: no
           # HmsproxyDown); c: down throughout (HmsproxyDown's case, not a missing replica)
            _series("a", "up", "1x40"), _series("b", "up", "1x19 _x20"), _series("c", "up", "0x40")],
        [("{}", 1)]),   # one instance up, where two were
    "HmsproxyUpstreamDown": (
        [_series("a", "hmsproxy_upstream_up", "0x40"), _series("b", "hmsproxy_upstream_up", "1x40")],
        [('hmsproxy_upstream_up{job="hmsproxy", instance="a"}', 0)]),
    "HmsproxyPollerStopped": (
        [  # a: its last good read at t=100 s; b: reading (the timestamp follows the clock); c: --no-cache (0)
            _series("a", "hmsproxy_notification_last_poll_timestamp_seconds", "100x40"),
            _series("b", "hmsproxy_notification_last_poll_timestamp_seconds", "0+60x40"),
            _series("c", "hmsproxy_notification_last_poll_timestamp_seconds", "0x40")],
        [('{job="hmsproxy", instance="a"}', 1700)]),   # 30 minutes in: 1,800 s - 100 s
    "HmsproxyPrewarmStuck": (
        [  # a: stuck at 3 of 10 tables; b: loading a table a minute; c: --no-cache (no prewarm series); d: ready
            _series("a", "hmsproxy_prewarm_complete", "0x40"),
            _series("a", "hmsproxy_prewarm_tables", "10x40", state="total"),
            _series("a", "hmsproxy_prewarm_tables", "3x40", state="done"),
            _series("b", "hmsproxy_prewarm_complete", "0x40"),
            _series("b", "hmsproxy_prewarm_tables", "100x40", state="total"),
            _series("b", "hmsproxy_prewarm_tables", "0+1x40", state="done"),
            _series("c", "hmsproxy_prewarm_complete", "0x40"),
            _series("d", "hmsproxy_prewarm_complete", "1x40"),
            _series("d", "hmsproxy_prewarm_tables", "10x40", state="total"),
            _series("d", "hmsproxy_prewarm_tables", "10x40", state="done")],
        [('hmsproxy_prewarm_complete{job="hmsproxy", instance="a"}', 0)]),
    "HmsproxyCacheHitRatioLow": (
        [  # a: only misses, 10/s (no `hit` series at all); b: 90% hits; c: only misses but 0.5/s
            _series("a", "hmsproxy_cache_lookups_total", "0+600x40", method="get_table", kind="table", result="miss"),
            _series("b", "hmsproxy_cache_lookups_total", "0+540x40", method="get_table", kind="table", result="hit"),
            _series("b", "hmsproxy_cache_lookups_total", "0+60x40", method="get_table", kind="table", result="miss"),
            _series("c", "hmsproxy_cache_lookups_total", "0+30x40", method="get_table", kind="table", result="miss"),
            *(_series(i, "hmsproxy_prewarm_complete", "1x40") for i in "abc")],
        [('{job="hmsproxy", instance="a"}', 1)]),
    "HmsproxyNotificationLagHigh": (
        [_series("a", "hmsproxy_notification_lag_seconds", "45x40"),
         _series("b", "hmsproxy_notification_lag_seconds", "0.3x40")],
        [('hmsproxy_notification_lag_seconds{job="hmsproxy", instance="a"}', 45)]),
    "HmsproxyNotificationPollFailing": (
        [_series("a", "hmsproxy_notification_poll_errors_total", "0+6x40"),
         _series("b", "hmsproxy_notification_poll_errors_total", "2x40")],
        [('{job="hmsproxy", instance="a"}', 0.1)]),
    "HmsproxyErrorRateHigh": (
        [  # a: a third MetaExceptions; b: many NoSuchObjectException (ordinary answers); c: errors but 0.05 calls/s
            _series("a", "hmsproxy_requests_total", "0+60x40", method="get_table", outcome="ok"),
            _series("a", "hmsproxy_requests_total", "0+30x40", method="get_table", outcome="MetaException"),
            _series("b", "hmsproxy_requests_total", "0+60x40", method="get_table", outcome="ok"),
            _series("b", "hmsproxy_requests_total", "0+600x40", method="get_table", outcome="NoSuchObjectException"),
            _series("c", "hmsproxy_requests_total", "0+3x40", method="get_table", outcome="MetaException")],
        [('{job="hmsproxy", instance="a"}', 1 / 3)]),
}


def test_every_case_names_a_rule():
    assert set(CASES) <= {rule["alert"] for rule in _rules()}


@needs_promtool
@pytest.mark.parametrize("alert", sorted(CASES))
def test_the_expression_selects_the_right_instances(alert: str, tmp_path: Path):
    series, expected = CASES[alert]
    tests = {"rule_files": [str(ALERTS)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": _expr(alert), "eval_time": "30m",
                              "exp_samples": [{"labels": labels, "value": value} for labels, value in expected]}]}]}
    path = tmp_path / "alert_test.yml"
    path.write_text(yaml_module().safe_dump(tests))
    result = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


# ---- every alert as Prometheus raises it: firing after its `for`, with its labels and texts, and silent otherwise --

# For each alert: series (one sample a minute) on which it fires; when it fires and on which instances, each with
# its summary as Prometheus renders it; a time at which its condition already holds but its `for` has not passed
# (None: no `for`, or no such time to pick); and healthy series on which it does not fire.
ALERT_CASES: dict[str, dict] = {
    "HmsproxyDown": {
        "series": [_series("a", "up", "0x20"), _series("b", "up", "1x20")],
        "at": "5m", "fires": {"a": "hmsproxy a does not answer on its metrics port"}, "pending_at": "0m",
        "quiet": [_series("a", "up", "1x20"), _series("b", "up", "1x20")]},
    "HmsproxyAbsent": {   # absent() keeps the selector's job label, no instance
        "series": [{"series": 'up{job="prometheus", instance="localhost:9090"}', "values": "1x20"}],
        "at": "10m", "fires": {None: "No hmsproxy instance is being scraped"}, "pending_at": "3m",
        "quiet": [_series("a", "up", "1x20")]},
    "HmsproxyReplicaMissing": {   # b leaves discovery at minute 20 (its last sample counts for 5 more minutes)
        "series": [_series("a", "up", "1x40"), _series("b", "up", "1x19 _x20")],
        "at": "30m", "fires": {"": "1 hmsproxy instances are up, fewer than in the last 6 hours"}, "pending_at": None,
        "quiet": [_series("a", "up", "1x40"), _series("b", "up", "1x40")]},
    "HmsproxyUpstreamDown": {
        "series": [_series("a", "hmsproxy_upstream_up", "0x20"), _series("b", "hmsproxy_upstream_up", "1x20")],
        "at": "5m", "fires": {"a": "a cannot reach its upstream HMS"}, "pending_at": "1m",
        "quiet": [_series("a", "hmsproxy_upstream_up", "1x20")]},
    "HmsproxyPollerStopped": {   # a's last good read at t=100 s: over a minute old from minute 3
        "series": [_series("a", "hmsproxy_notification_last_poll_timestamp_seconds", "100x40"),
                   _series("b", "hmsproxy_notification_last_poll_timestamp_seconds", "0+60x40"),
                   _series("c", "hmsproxy_notification_last_poll_timestamp_seconds", "0x40")],
        "at": "30m", "fires": {"a": "a has not read the notification log for over a minute"}, "pending_at": "3m",
        "quiet": [_series("b", "hmsproxy_notification_last_poll_timestamp_seconds", "0+60x40"),
                  _series("c", "hmsproxy_notification_last_poll_timestamp_seconds", "0x40")]},
    "HmsproxyPrewarmStuck": {
        "series": [*CASES["HmsproxyPrewarmStuck"][0]],
        "at": "30m", "fires": {"a": "Prewarm of a has not progressed for 15 minutes"}, "pending_at": "2m",
        "quiet": [series for series in CASES["HmsproxyPrewarmStuck"][0] if 'instance="a"' not in series["series"]]},
    "HmsproxyPrewarmSlow": {   # a: not ready for 40 minutes; b: ready; c: --no-cache (no prewarm tables)
        "series": [_series("a", "hmsproxy_prewarm_complete", "0x60"),
                   _series("a", "hmsproxy_prewarm_tables", "10x60", state="total"),
                   _series("b", "hmsproxy_prewarm_complete", "1x60"),
                   _series("b", "hmsproxy_prewarm_tables", "10x60", state="total"),
                   _series("c", "hmsproxy_prewarm_complete", "0x60")],
        "at": "40m", "fires": {"a": "a has not been ready for 30 minutes"}, "pending_at": "20m",
        "quiet": [_series("b", "hmsproxy_prewarm_complete", "1x60"),
                  _series("b", "hmsproxy_prewarm_tables", "10x60", state="total"),
                  _series("c", "hmsproxy_prewarm_complete", "0x60")]},
    "HmsproxyCacheHitRatioLow": {
        "series": [*CASES["HmsproxyCacheHitRatioLow"][0]],
        "at": "30m", "fires": {"a": "Cache of a misses 100% of its reads"}, "pending_at": "10m",
        "quiet": [series for series in CASES["HmsproxyCacheHitRatioLow"][0] if 'instance="a"' not in series["series"]]},
    "HmsproxyCachePassingThrough": {
        "series": [_series("a", "hmsproxy_cache_passing_through", "1x20"),
                   _series("b", "hmsproxy_cache_passing_through", "0x20")],
        "at": "5m", "fires": {"a": "Cache of a is off: writes without notification events were seen"},
        "pending_at": None,
        "quiet": [_series("a", "hmsproxy_cache_passing_through", "0x20"),
                  _series("b", "hmsproxy_cache_passing_through", "0x20")]},
    "HmsproxyNotificationLagHigh": {
        "series": [*CASES["HmsproxyNotificationLagHigh"][0]],
        "at": "10m", "fires": {"a": "a applies other instances' changes 45s late"}, "pending_at": "3m",
        "quiet": [_series("b", "hmsproxy_notification_lag_seconds", "0.3x40")]},
    "HmsproxyNotificationPollFailing": {
        "series": [*CASES["HmsproxyNotificationPollFailing"][0]],
        "at": "10m", "fires": {"a": "a cannot read the notification log"}, "pending_at": "4m",
        "quiet": [_series("b", "hmsproxy_notification_poll_errors_total", "2x40")]},
    "HmsproxyErrorRateHigh": {
        "series": [*CASES["HmsproxyErrorRateHigh"][0]],
        "at": "20m", "fires": {"a": "33.33% of the calls to a fail"}, "pending_at": "8m",
        "quiet": [series for series in CASES["HmsproxyErrorRateHigh"][0] if 'instance="a"' not in series["series"]]},
    "HmsproxyConnectionsRefused": {   # a refuses one a minute; b refused 3 before the window and none since
        "series": [_series("a", "hmsproxy_refused_connections_total", "0+1x20"),
                   _series("b", "hmsproxy_refused_connections_total", "3x20")],
        "at": "10m", "fires": {"a": "a refused client connections at its connection cap"}, "pending_at": None,
        "quiet": [_series("b", "hmsproxy_refused_connections_total", "3x20")]},
}


def test_every_alert_has_a_case():
    assert set(ALERT_CASES) == {rule["alert"] for rule in _rules()}


def _expected_alert(rule: dict, instance: str | None, summary: str) -> dict:
    """The alert as Prometheus raises it: the rule's labels with the series' job and instance (absent() keeps only
    the job; an aggregation over every instance, "", neither), and its texts."""
    labels = {**rule["labels"]}
    if instance is None:
        labels["job"] = "hmsproxy"
    elif instance:
        labels |= {"job": "hmsproxy", "instance": instance}
    description = rule["annotations"]["description"].replace("{{ $labels.instance }}", instance or "")
    assert "{{" not in description, "a template this test does not render"
    return {"exp_labels": labels, "exp_annotations": {"summary": summary, "description": description}}


@needs_promtool
@pytest.mark.parametrize("alert", sorted(ALERT_CASES))
def test_the_alert_fires_after_its_for_and_not_otherwise(alert: str, tmp_path: Path):
    case = ALERT_CASES[alert]
    rule = next(rule for rule in _rules() if rule["alert"] == alert)
    firing = [_expected_alert(rule, instance, summary) for instance, summary in case["fires"].items()]
    checks = [({"eval_time": case["at"], "alertname": alert, "exp_alerts": firing}, case["series"]),
              ({"eval_time": case["at"], "alertname": alert, "exp_alerts": []}, case["quiet"])]
    if case["pending_at"] is not None:
        assert "for" in rule, "a rule without `for` fires at once"
        checks.append(({"eval_time": case["pending_at"], "alertname": alert, "exp_alerts": []}, case["series"]))
    else:
        assert "for" not in rule or alert == "HmsproxyReplicaMissing", "a `for` without a case before it passes"
    tests = {"rule_files": [str(ALERTS)], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": series, "alert_rule_test": [check]} for check, series in checks]}
    path = tmp_path / "alert_test.yml"
    path.write_text(yaml_module().safe_dump(tests))
    result = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
