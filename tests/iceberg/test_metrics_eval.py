"""metrics_eval's evaluator gives pyiceberg's inclusive metrics evaluator's verdict on every file.

The files are a real table's (support/iceberg_tables.py: appends, a spec change, an overwrite, deletes), as
pyiceberg decodes them and as the planning cache holds them; the filters random (support/iceberg_filters.py),
with and without empty files included, and for files whose record count is 0 or -1 (pyiceberg's special cases).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.expressions import BooleanExpression
from pyiceberg.expressions.visitors import _InclusiveMetricsEvaluator
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table

from hmsproxy.iceberg.manifest_cache import ManifestCache
from hmsproxy.iceberg.metrics_eval import metrics_evaluator
from support.iceberg_filters import filters
from support.iceberg_tables import build_table


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    return build_table(Path(tmp_path_factory.mktemp("metrics-eval")), seed=7)


@pytest.fixture(scope="module")
def files(table: Table) -> list[Any]:
    """Every live content file of the current snapshot, decoded by pyiceberg and as the cache holds it, and one of
    them as if it held 0 and -1 rows."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    cache = ManifestCache(10_000_000, None)
    decoded: list[DataFile] = []
    cached: list[Any] = []
    for manifest in snapshot.manifests(table.io):
        decoded += [entry.data_file for entry in manifest.fetch_manifest_entry(table.io)]
        cached += [entry.metrics() for entry in cache.entries(table.io, manifest)]
    odd = [cached[0]._replace(record_count=record_count) for record_count in (0, -1)]
    return decoded + cached + odd


@st.composite
def cases(draw: st.DrawFn) -> tuple[BooleanExpression, bool, bool]:
    case_sensitive = draw(st.booleans())
    return draw(filters(case_sensitive)), case_sensitive, draw(st.booleans())


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_same_verdict_as_pyiceberg_on_every_file(table: Table, files: list[Any],
                                                 case: tuple[BooleanExpression, bool, bool]) -> None:
    row_filter, case_sensitive, include_empty_files = case
    pyiceberg_eval = _InclusiveMetricsEvaluator(table.schema(), row_filter, case_sensitive, include_empty_files).eval
    ours = metrics_evaluator(pyiceberg_eval)
    assert [ours(file) for file in files] == [pyiceberg_eval(file) for file in files]
