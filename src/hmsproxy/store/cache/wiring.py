"""The cache over a store, as both kinds of server build it: the CachedStore, its loader and their metrics."""
from __future__ import annotations

import functools

from hmsproxy.ops.config import Settings
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache import own_bytes
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.prewarm import Loader
from hmsproxy.store.cache.prewarm_workers import WorkerPlan
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.rawstore import RawStore


def _bookkeeping_entries(cache: SharedCache, kind: str) -> int:
    return cache.bookkeeping_entries()[kind]


def cache_over(store: RawStore, settings: Settings, metrics: Metrics, workers: WorkerPlan | None = None
               ) -> tuple[CachedStore, Loader]:
    """The cache in front of `store` with its loader (not started yet, its prewarm read by `workers` if given),
    its size and bookkeeping exported."""
    cache = SharedCache(settings.cache_max_bytes, on_evict=lambda key: metrics.cache_evictions.inc())
    policy = CachePolicy.from_patterns(settings.cache_whitelist, settings.cache_blacklist)
    cached_store = CachedStore(store, cache, policy, metrics, strict_snapshots=settings.strict_snapshots)
    loader = Loader(cached_store, metrics, workers)
    cached_store.request_load = loader.request
    metrics.cache_bytes.set_function(cache.bytes_used)
    own_bytes.HOT.budget = settings.cache_hot_bytes
    metrics.cache_hot_bytes.set_function(own_bytes.HOT.expanded_size)
    metrics.cache_objects.labels("table").set_function(cache.table_count)
    metrics.cache_objects.labels("database").set_function(cache.database_count)
    metrics.cache_pending_entries.set_function(cache.pending_entries)
    for kind in ("generations", "key_locks"):
        metrics.cache_bookkeeping.labels(kind).set_function(functools.partial(_bookkeeping_entries, cache, kind))
    metrics.cache_bookkeeping.labels("loads_in_flight").set_function(cached_store.loads_in_flight)
    return cached_store, loader
