"""Prometheus metrics and the HTTP endpoint that serves /metrics, /healthz and /readyz."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from hmsproxy.ops.listening import binding
from hmsproxy.ops.tallies import HistogramTallies, Tallies

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    """All metrics of one server, in their own registry so several servers can live in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # The process's own figures (process_resident_memory_bytes, _cpu_seconds_total, _open_fds, ...): the memory
        # sizing in deploy/ rests on RSS, which an operator must be able to watch and alert on.
        ProcessCollector(registry=self.registry)
        # Counted on every call, so without prometheus_client's locks (tallies.py); CallMetrics exports them.
        self.requests: Tallies[tuple[str, str]] = Tallies()           # (method, outcome)
        self.latency: HistogramTallies[str] = HistogramTallies(LATENCY_BUCKETS)   # by method
        self.ready_answers: Tallies[str] = Tallies()                  # by method
        self.cache_lookups: Tallies[tuple[str, str, str]] = Tallies()   # (method, kind, hit | miss)
        self.registry.register(CallMetrics(self))
        self.connections = Gauge("hmsproxy_open_connections", "Client connections being served",
                                 registry=self.registry)
        self.refused = Counter("hmsproxy_refused_connections", "Connections refused because the cap was reached",
                               registry=self.registry)
        self.evicted = Counter("hmsproxy_evicted_idle_connections", "Idle connections closed to admit a new one "
                               "when every slot was taken", registry=self.registry)
        self.refused_messages = Counter("hmsproxy_refused_messages", "Requests or replies refused for exceeding "
                                        "the maximum message size", registry=self.registry)
        self.tls_failures = Counter("hmsproxy_tls_handshake_failures", "Connections closed because their TLS "
                                    "handshake failed or did not finish within the request timeout",
                                    registry=self.registry)
        self.slow_clients = Counter("hmsproxy_closed_slow_connections", "Connections closed because they were "
                                    "idle too long or sent a request too slowly", registry=self.registry)

        self.cache_snapshot_fallbacks = Counter(
            "hmsproxy_cache_snapshot_fallbacks", "Cached tables not used because of the request's snapshot, by reason "
            "(stale: older than the snapshot, table_id: another table of that name, no_snapshot: transactional "
            "table read without one)", ["reason"], registry=self.registry)
        self.cache_evictions = Counter("hmsproxy_cache_evictions", "Tables evicted from the cache to stay within "
                                       "the memory bound", registry=self.registry)
        self.cache_objects = Gauge("hmsproxy_cache_objects", "Objects held in the cache", ["kind"],
                                   registry=self.registry)
        self.cache_bytes = Gauge("hmsproxy_cache_bytes", "Estimated bytes held by cached tables",
                                 registry=self.registry)
        self.cache_hot_bytes = Gauge("hmsproxy_cache_hot_bytes", "Bytes of partitions kept expanded (unpacked) for "
                                     "the tables read lately, within --cache-hot-bytes", registry=self.registry)
        self.cache_bookkeeping = Gauge("hmsproxy_cache_bookkeeping_entries", "Entries of the maps kept beside the "
                                       "cached objects (generations, key_locks, loads_in_flight): bounded",
                                       ["kind"], registry=self.registry)
        self.prewarm_tables = Gauge("hmsproxy_prewarm_tables", "Prewarm progress in tables", ["state"],
                                    registry=self.registry)
        self.prewarm_partitions = Gauge("hmsproxy_prewarm_partitions_loaded", "Partitions loaded by prewarm",
                                        registry=self.registry)
        self.prewarm_seconds = Gauge("hmsproxy_prewarm_duration_seconds", "Time prewarm took (so far)",
                                     registry=self.registry)
        self.prewarm_complete = Gauge("hmsproxy_prewarm_complete", "1 once prewarm has loaded everything",
                                      registry=self.registry)

        self.notification_last_applied = Gauge("hmsproxy_notification_last_applied_event_id",
                                               "The last notification-log event this instance has applied",
                                               registry=self.registry)
        self.notification_events_applied = Counter("hmsproxy_notification_events_applied",
                                                   "Notification-log events applied (or skipped as written "
                                                   "here), by type", ["type"], registry=self.registry)
        self.notification_lag_events = Gauge("hmsproxy_notification_lag_events",
                                             "Events in the log not applied yet", registry=self.registry)
        self.notification_lag_seconds = Gauge("hmsproxy_notification_lag_seconds",
                                              "Age of the oldest event not applied yet", registry=self.registry)
        self.notification_poll_errors = Counter("hmsproxy_notification_poll_errors",
                                                "Failed reads of the notification log", registry=self.registry)
        self.notification_last_poll = Gauge("hmsproxy_notification_last_poll_timestamp_seconds",
                                            "When the notification log was last read successfully (Unix time)",
                                            registry=self.registry)
        self.ready = Gauge("hmsproxy_ready", "1 while /readyz answers 200 (prewarm done)", registry=self.registry)
        self.remembered_requests = Gauge("hmsproxy_remembered_requests", "Requests whose replies are kept for "
                                         "repeats (at most --remembered-requests)", registry=self.registry)
        self.db_pool_in_use = Gauge("hmsproxy_db_pool_connections_in_use", "Database connections checked out of "
                                    "the pools", registry=self.registry)
        self.db_pool_wait = Histogram("hmsproxy_db_pool_wait_seconds", "Time a database transaction waited for its "
                                      "connection (on SQLite: for the write lock too)", buckets=LATENCY_BUCKETS,
                                      registry=self.registry)
        self.db_errors = Counter("hmsproxy_db_errors", "Calls failed by the metastore database, by kind (unreachable, "
                                 "constraint, value, other)", ["kind"], registry=self.registry)
        self.unlogged_writes = Counter("hmsproxy_unlogged_writes", "Rows another writer created without a "
                                       "notification event (a Java HMS without DbNotificationListener), by kind",
                                       ["kind"], registry=self.registry)
        self.unlogged_write_checks = Counter("hmsproxy_unlogged_write_checks", "Looks for rows created without a "
                                             "notification event", registry=self.registry)
        self.cache_passing_through = Gauge("hmsproxy_cache_passing_through", "1 when the cache answers nothing "
                                           "and every read goes to the database (writes without events seen)",
                                           registry=self.registry)
        self.cache_pending_entries = Gauge("hmsproxy_cache_pending_entries",
                                           "Cached transactional tables with write ids not committed yet",
                                           registry=self.registry)

        self.object_store_requests = Counter(
            "hmsproxy_object_store_requests", "Requests to an object store (the warehouse on S3, GCS or ABFS), by "
            "store, operation and outcome (ok, not_found, denied, timeout, error)", ["store", "operation", "outcome"],
            registry=self.registry)
        self.object_store_latency = Histogram("hmsproxy_object_store_request_seconds", "Time of one object-store "
                                              "request, retries included, by store and operation",
                                              ["store", "operation"], buckets=LATENCY_BUCKETS, registry=self.registry)

        self.upstream_calls = Counter("hmsproxy_upstream_calls", "Calls to the upstream HMS (serve --upstream), "
                                      "by method and outcome (ok, declared_error, failed)", ["method", "outcome"],
                                      registry=self.registry)
        self.upstream_latency = Histogram("hmsproxy_upstream_call_seconds", "Time of one call to the upstream HMS, "
                                          "by method", ["method"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.upstream_up = Gauge("hmsproxy_upstream_up", "1 while the upstream HMS answers; 0 while only cached reads "
                                 "are answered", registry=self.registry)
        self.upstream_revalidated = Counter("hmsproxy_upstream_stale_found", "Cached objects found out of date by "
                                            "revalidation against an upstream without a notification log, by kind",
                                            ["kind"], registry=self.registry)

        self.iceberg_requests = Counter("hmsproxy_iceberg_requests", "Requests to the Iceberg REST catalog, by "
                                        "operation and HTTP status", ["operation", "code"], registry=self.registry)
        self.iceberg_latency = Histogram("hmsproxy_iceberg_request_seconds", "Time of one Iceberg REST request, by "
                                         "operation", ["operation"], buckets=LATENCY_BUCKETS, registry=self.registry)

    def observe_iceberg(self, operation: str, code: str, seconds: float) -> None:
        self.iceberg_requests.labels(operation, code).inc()
        self.iceberg_latency.labels(operation).observe(seconds)

    def observe_upstream(self, method: str, seconds: float, outcome: str) -> None:
        self.upstream_calls.labels(method, outcome).inc()
        self.upstream_latency.labels(method).observe(seconds)

    def observe(self, method: str, outcome: str, seconds: float) -> None:
        self.requests.add((method, outcome))
        self.latency.observe(method, seconds)

    def observe_ready_answer(self, method: str, seconds: float) -> None:
        """A call answered "ok" from ready bytes: counted once, in ready_answers (the export adds it to requests)."""
        self.ready_answers.add(method)
        self.latency.observe(method, seconds)

    def count_lookup(self, method: str, kind: str, hit: bool) -> None:
        self.cache_lookups.add((method, kind, "hit" if hit else "miss"))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class CallMetrics(Collector):
    """Exports the per-call tallies as the counters and histogram they stand for, summed at each scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._created = time.time()   # every series counts from the server's start

    def collect(self) -> Iterator[Metric]:
        m, created = self._metrics, self._created
        ready_answers = m.ready_answers.totals()
        answered = m.requests.totals()
        for method, count in ready_answers.items():
            answered[method, "ok"] = answered.get((method, "ok"), 0.0) + count
        requests = CounterMetricFamily("hmsproxy_requests", "Thrift calls answered, by method and outcome",
                                       labels=["method", "outcome"])
        for (method, outcome), count in sorted(answered.items()):
            requests.add_metric([method, outcome], count, created)
        latency = HistogramMetricFamily("hmsproxy_request_seconds", "Time to answer a Thrift call, by method",
                                        labels=["method"])
        bounds = [*map(floatToGoString, m.latency.bounds), "+Inf"]
        for method, (cumulative, total) in sorted(m.latency.totals().items()):
            latency.add_metric([method], list(zip(bounds, cumulative)), total)
        ready = CounterMetricFamily("hmsproxy_ready_answers", "Calls answered with the bytes the cache held ready (no "
                                    "objects decoded or encoded; on plain connections by the connection loop itself), "
                                    "by method", labels=["method"])
        for method, count in sorted(ready_answers.items()):
            ready.add_metric([method], count, created)
        lookups = CounterMetricFamily("hmsproxy_cache_lookups", "Store reads by Thrift method, object kind and result "
                                      "(hit: answered from memory, miss: from the database)",
                                      labels=["method", "kind", "result"])
        for labels, count in sorted(m.cache_lookups.totals().items()):
            lookups.add_metric(list(labels), count, created)
        yield from (requests, latency, ready, lookups)


# Whether the server is ready (or live), and a line that says more (a degraded state, what is stuck), or "".
Check = Callable[[], tuple[bool, str]]


class MetricsServer:
    """A small HTTP server on its own thread; `ready` decides what /readyz answers and `live` what /healthz
    answers (503 when not: this thread answers even when the serving is stuck, so it must be asked)."""

    def __init__(self, metrics: Metrics, host: str, port: int, ready: Check, live: Check) -> None:
        handler = _make_handler(metrics, ready, live)
        with binding("the metrics endpoint", host, port):
            self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="metrics-http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _make_handler(metrics: Metrics, ready: Check, live: Check) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/metrics":
                self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
            elif self.path == "/healthz":
                is_live, detail = live()
                body = "ok\n" if is_live else f"not live: {detail}\n"
                self._send(200 if is_live else 503, body.encode(), "text/plain")
            elif self.path == "/readyz":
                is_ready, detail = ready()
                body = ("ready" if is_ready else "not ready") + (f": {detail}" if detail else "") + "\n"
                self._send(200 if is_ready else 503, body.encode(), "text/plain")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # keep scrapes out of the log
            return

    return Handler
