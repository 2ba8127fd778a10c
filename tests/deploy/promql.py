"""The metric names a PromQL expression reads: a small tokenizer, enough for the expressions of our alert
rules and dashboard (not a PromQL parser)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# Aggregation operators and keywords: identifiers that are not metric names even when no "(" follows them.
KEYWORDS = frozenset({
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile", "limitk", "limit_ratio", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "atan2", "inf", "nan",
})
# Series Prometheus adds to every target itself, so a server does not export them.
PROMETHEUS_SERIES = frozenset({"up", "scrape_duration_seconds", "scrape_samples_scraped",
                               "scrape_samples_post_metric_relabeling", "scrape_series_added"})

_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
# An identifier that does not continue a number (5m, 1e3), a Grafana variable ($x) or another identifier.
_IDENTIFIER = re.compile(r"(?<![\w.:$])[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", re.S)


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects: functions (an identifier before "("), keywords, label names (inside {}
    and in by/without/on/ignoring/group_* lists), strings, durations and numbers are not."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub("{}", text)
    text = _RANGES.sub("[]", text)
    text = _LABEL_LISTS.sub(r"\1", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        rest = text[match.end():].lstrip()
        if rest.startswith("(") or match.group().lower() in KEYWORDS:
            continue
        names.add(match.group())
    return names


def variable_query_names(query: str) -> set[str]:
    """The metric names of a Grafana template variable's query: `label_values(selector, label)` reads the
    selector only (the label is not a metric); other queries are PromQL."""
    match = _LABEL_VALUES.match(query)
    return metric_names(match.group(1) if match else query)


def dashboard_expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every panel target, rows' nested panels included."""
    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    for panel in panels(dashboard.get("panels", [])):
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield f"panel {panel.get('title')!r} target {target.get('refId')}", target["expr"]


def dashboard_variable_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        yield f"variable {variable['name']!r}", query.get("query", "") if isinstance(query, dict) else query


def exported_names(exposition: str) -> set[str]:
    """Every series name a Prometheus text exposition may hold, from its `# TYPE` lines (a labelled family with
    no sample yet has its TYPE line all the same): a gauge's name; a counter's `_total` and `_created`; a
    histogram's `_bucket`, `_sum`, `_count` and `_created` (not its bare name, which no series has); a summary's
    name, `_sum`, `_count` and `_created`."""
    names = set()
    for line in exposition.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[:2] != ["#", "TYPE"]:
            continue
        name, kind = parts[2], parts[3]
        if kind == "counter":
            base = name.removesuffix("_total")
            names |= {base + "_total", base + "_created"}
        elif kind == "histogram":
            names |= {name + suffix for suffix in ("_bucket", "_sum", "_count", "_created")}
        elif kind == "summary":
            names |= {name} | {name + suffix for suffix in ("_sum", "_count", "_created")}
        else:
            names.add(name)
    return names
