"""Two hmsproxy processes on one database under concurrent writers (through A) and readers (through B), checked by
bench/consistency.py: snapshot reads of a transactional table are never stale, no reader goes backwards, and every
version written to a non-transactional table becomes visible through B within a sane bound."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import consistency

LAG_BOUND_MS = 5000.0  # a sanity bound (the poll interval is 0.2 s), not a benchmark


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_two_instances_are_consistent_under_concurrent_writes(backend, tmp_path):
    config = consistency.Config(writers=2, readers=3, ops=60, deadline_s=50.0)
    report = consistency.run(backend, tmp_path, config)  # skips when the database server is unreachable
    summary = consistency.table(report)

    assert not report.errors, "\n".join(report.errors)
    assert not report.timed_out, summary
    assert report.snapshot_writes == config.ops and report.eventual_writes == config.ops, summary
    assert report.snapshot_reads >= config.readers, summary
    assert report.stale_reads == 0, report.stale_examples
    assert report.monotonicity_violations == 0, (report.snapshot_regressions, report.snapshot_floor_regressions,
                                                 report.eventual_monotonicity_violations)
    assert report.phantom_snapshots == 0, summary
    assert report.unseen_versions == [], summary
    assert len(report.lag_ms) == config.ops and all(lag is not None for lag in report.lag_ms), summary
    assert report.lag_p99_ms < LAG_BOUND_MS, summary
