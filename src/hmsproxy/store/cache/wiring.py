"""The cache over a store, as both kinds of server build it: the CachedStore, the loader and the poller that keep
it, and their metrics."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Generic

from hmsproxy.ops.config import Settings
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.poller import Poller
from hmsproxy.store.cache.prewarm import Loader
from hmsproxy.store.cache.prewarm_workers import WorkerPlan
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.cache.unlogged_writes import CreationCounts, M, UnloggedWrites
from hmsproxy.store.domain import StatsAsStored
from hmsproxy.store.rawstore import RawStore


@dataclass
class CacheParts(Generic[M]):
    store: CachedStore
    loader: Loader
    poller: Poller
    unlogged: UnloggedWrites[M] | None   # the look for writers that log no events, if the server looks


def _bookkeeping_entries(cache: SharedCache, kind: str) -> int:
    return cache.bookkeeping_entries()[kind]


def cache_over(store: RawStore, settings: Settings, metrics: Metrics,
               stats_as_stored: StatsAsStored, workers: WorkerPlan | None = None,
               creations: CreationCounts[M] | None = None) -> CacheParts[M]:
    """The cache in front of `store` with its loader (its prewarm read by `workers` if given) and its poller, none
    started yet, and a look for unlogged writes through `creations` if given; its size and bookkeeping exported.
    `stats_as_stored`: statistics objects as `store` returns them (CachedStore)."""
    cache = SharedCache(settings.cache_max_bytes, on_evict=lambda key: metrics.cache_evictions.inc(),
                        hot_bytes=settings.cache_hot_bytes)
    policy = CachePolicy.from_patterns(settings.cache_whitelist, settings.cache_blacklist)
    # The store asks the loader and the poller, which are built over it next: both work on it.
    cached_store = CachedStore(store, cache, policy, metrics, stats_as_stored,
                               request_load=lambda key: loader.request(key),
                               catch_up=lambda event_id: poller.catch_up(event_id),
                               strict_snapshots=settings.strict_snapshots)
    loader = Loader(cached_store, metrics, workers)
    unlogged = UnloggedWrites(creations, metrics, lambda found: cached_store.pass_through()) \
        if creations is not None and settings.unlogged_check_s > 0 else None
    poller = Poller(cached_store, metrics, interval_s=settings.poll_interval_s, event_ttl_s=settings.event_ttl_s,
                    start_after=loader.start_after, reload_everything=loader.prewarm_again,
                    unlogged=unlogged, unlogged_check_s=settings.unlogged_check_s)
    metrics.cache_bytes.set_function(cache.bytes_used)
    metrics.cache_hot_bytes.set_function(cache.hot.expanded_size)
    metrics.cache_objects.labels("table").set_function(cache.table_count)
    metrics.cache_objects.labels("database").set_function(cache.database_count)
    metrics.cache_pending_entries.set_function(cache.pending_entries)
    for kind in ("generations", "key_locks"):
        metrics.cache_bookkeeping.labels(kind).set_function(functools.partial(_bookkeeping_entries, cache, kind))
    metrics.cache_bookkeeping.labels("loads_in_flight").set_function(cached_store.loads_in_flight)
    return CacheParts(cached_store, loader, poller, unlogged)
