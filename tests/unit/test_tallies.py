"""Per-call counts without locks (tallies.py): threads adding at once lose no count, a scrape in the middle of it
sees totals that only grow, and what threads counted stays counted after they end."""
import sys
import threading

from hmsproxy.ops.metrics import LATENCY_BUCKETS, Metrics
from hmsproxy.ops.tallies import HistogramTallies, Tallies

THREADS, ADDS = 8, 20_000


def test_threads_adding_at_once_lose_no_count_and_scrapes_only_see_totals_grow():
    tallies: Tallies[tuple[str, str]] = Tallies()
    start = threading.Barrier(THREADS + 1)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as possible: a lost update would show
    seen: list[float] = []

    def add(n: int) -> None:
        start.wait()
        for i in range(ADDS):
            tallies.add(("get_table", "ok"))
            tallies.add(("shared", str(i % 3)), 0.5)
            tallies.add((f"thread{n}", "ok"))

    workers = [threading.Thread(target=add, args=(n,)) for n in range(THREADS)]
    try:
        for worker in workers:
            worker.start()
        start.wait()
        while any(worker.is_alive() for worker in workers):
            seen.append(tallies.totals().get(("get_table", "ok"), 0.0))
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    totals = tallies.totals()
    assert totals[("get_table", "ok")] == THREADS * ADDS
    assert sum(totals[("shared", str(r))] for r in range(3)) == THREADS * ADDS * 0.5
    assert all(totals[(f"thread{n}", "ok")] == ADDS for n in range(THREADS))
    assert seen == sorted(seen) and len(seen) > 1
    assert tallies.totals() == totals   # the ended threads' counts were folded, not lost


def test_a_histogram_counts_each_value_in_the_bucket_prometheus_would():
    histogram: HistogramTallies[str] = HistogramTallies((0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 1.0, 7.0):
        histogram.observe("m", value)
    cumulative, total = histogram.totals()["m"]
    assert cumulative == [2, 4, 5] and total == 8.65


def test_the_exposition_is_the_counters_and_histogram_it_stands_for():
    metrics = Metrics()
    metrics.observe_ready_answer("get_table", 0.0003)
    metrics.observe("get_table", "NoSuchObjectException", 0.02)
    metrics.count_lookup("get_table", "table", hit=True)
    text = metrics.render().decode()
    assert 'hmsproxy_requests_total{method="get_table",outcome="ok"} 1.0' in text
    assert 'hmsproxy_requests_total{method="get_table",outcome="NoSuchObjectException"} 1.0' in text
    assert 'hmsproxy_request_seconds_bucket{le="0.00025",method="get_table"} 0.0' in text
    assert 'hmsproxy_request_seconds_bucket{le="0.0005",method="get_table"} 1.0' in text
    assert 'hmsproxy_request_seconds_bucket{le="+Inf",method="get_table"} 2.0' in text
    assert 'hmsproxy_request_seconds_count{method="get_table"} 2.0' in text
    assert 'hmsproxy_ready_answers_total{method="get_table"} 1.0' in text
    assert 'hmsproxy_cache_lookups_total{kind="table",method="get_table",result="hit"} 1.0' in text
    assert len(LATENCY_BUCKETS) + 1 == text.count('hmsproxy_request_seconds_bucket{')
