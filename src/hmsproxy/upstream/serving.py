"""Assembles `serve --upstream`: the pool, the UpstreamStore, the cache over it and what keeps the cache current.

With a notification log upstream (a Java HMS with DbNotificationListener, or another hmsproxy), the poller follows
it as it follows the database's. While the log shows no event (an upstream without one, or one with an empty log:
they look alike), the refresher revalidates the cache every `upstream_refresh_s` and hands over to the poller once
an event appears. Either way the refresher prewarms again whenever the cache is not whole.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from hmsproxy.handler import Handler
from hmsproxy.ops.config import Settings
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.poller import Poller
from hmsproxy.store.cache.prewarm import Loader
from hmsproxy.store.cache.unlogged_writes import Mark
from hmsproxy.store.cache.wiring import CacheParts, cache_over
from hmsproxy.store.sql.stats_codec import stats_as_stored
from hmsproxy.upstream.forwarding import ForwardingHandler
from hmsproxy.upstream.pool import UpstreamPool
from hmsproxy.upstream.refresher import Refresher
from hmsproxy.upstream.store import UpstreamStore

log = logging.getLogger(__name__)
READINESS_PROBE_S = 2.0


@dataclass
class UpstreamParts:
    pool: UpstreamPool
    store: CachedStore
    loader: Loader
    poller: Poller
    refresher: Refresher
    following: threading.Event     # set once the poller follows the upstream's log

    def handler(self, local: Handler) -> ForwardingHandler:
        return ForwardingHandler(local, self.pool, self.store)

    def readiness(self) -> tuple[bool, str]:
        """Ready once prewarmed; an unreachable upstream is said, not counted against readiness: cached reads
        still answer, and every replica shares the upstream, so taking this one out of service helps nobody."""
        detail = "" if self.pool.probe(READINESS_PROBE_S) else \
            f"upstream {','.join(self.pool.uris)} unreachable: cached reads only, writes fail"
        return self.loader.complete.is_set(), detail

    def stop(self) -> None:
        self.refresher.stop()
        if self.following.is_set():
            self.poller.stop()
        self.loader.stop()
        self.store.close()


def _log_head(store: UpstreamStore, uris: str) -> int:
    try:
        return store.current_event_id()
    except Exception as exc:
        log.warning("upstream %s unreachable at start (%s): the cache is revalidated against it until its "
                    "notification log shows an event", uris, exc)
        return 0


def start_upstream(settings: Settings, metrics: Metrics) -> UpstreamParts:
    pool = UpstreamPool(settings.upstream, framed=settings.upstream_framed,
                        max_connections=settings.upstream_connections,
                        call_timeout_s=settings.upstream_call_timeout_s, observe=metrics.observe_upstream)
    metrics.upstream_up.set_function(lambda: 1.0 if pool.healthy else 0.0)
    upstream = UpstreamStore(pool)
    # The upstream's statistics are as its database returns them, which the SQL store's are too.
    cache: CacheParts[Mark] = cache_over(upstream, settings, metrics, stats_as_stored)   # no unlogged-writes look
    store, loader, poller = cache.store, cache.loader, cache.poller
    has_log = _log_head(upstream, settings.upstream) > 0
    if not has_log:
        log.info("upstream %s shows no notification event: the cache is revalidated every %g s until one appears",
                 settings.upstream, settings.upstream_refresh_s)
    following = threading.Event()

    def follow_log() -> None:
        following.set()
        poller.start()

    refresher = Refresher(store, metrics, interval_s=settings.upstream_refresh_s, revalidate=not has_log,
                          prewarm_again=loader.prewarm_again, prewarmed=loader.complete.is_set, follow_log=follow_log)
    loader.start()
    if has_log:
        follow_log()
    refresher.start()
    return UpstreamParts(pool, store, loader, poller, refresher, following)
