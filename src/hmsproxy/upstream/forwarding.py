"""The handler of `hmsproxy serve --upstream`: cached reads here, everything else forwarded to the upstream HMS.

The reads the cache can answer (databases, tables, partitions, statistics, functions) go to the ordinary handler,
whose store is the CachedStore over an UpstreamStore; so do lock and check_lock, whose grants the cache takes as
synchronisation points as in the database mode (store/cache/transactions.py: the upstream's log is applied up to the
grant, or without a log what the lock covers is dropped). Every other call, writes first of all, is sent upstream as
the client sent it and its answer (or declared exception) returned as the upstream gave it: the upstream validates,
decides defaults, creates directories, writes its notification log, runs transactions and locks. Only once it has
acknowledged a write does the cache read again what the write named (effects.py), so a client reads its own writes
through this instance.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence

from hmsproxy.handler import Handler
from hmsproxy.idl import hms
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.reader import Reader
from hmsproxy.store.ready import Held, Ready
from hmsproxy.upstream.calls import unavailable
from hmsproxy.upstream.effects import LOCK_CALLS, CacheEffects, cache_effects
from hmsproxy.upstream.pool import UpstreamPool, UpstreamUnavailable

log = logging.getLogger(__name__)

# Reads the cache answers; the rest of the IDL is forwarded.
CACHED_READS = frozenset({
    "get_catalog", "get_catalogs",
    "get_database", "get_database_req", "get_databases", "get_all_databases",
    "get_table", "get_table_req", "get_tables", "get_tables_by_type", "get_all_tables", "get_table_meta",
    "get_table_objects_by_name", "get_table_objects_by_name_req", "get_table_names_by_filter",
    "get_fields", "get_fields_req", "get_fields_with_environment_context",
    "get_schema", "get_schema_req", "get_schema_with_environment_context",
    "get_partition", "get_partition_req", "get_partition_by_name", "get_partition_with_auth",
    "get_partitions", "get_partitions_req", "get_partitions_with_auth", "get_partitions_ps",
    "get_partitions_ps_with_auth", "get_partitions_ps_with_auth_req", "get_partitions_by_names",
    "get_partitions_by_names_req", "get_partitions_by_filter", "get_partitions_by_expr", "get_num_partitions_by_filter",
    "get_partition_names", "get_partition_names_ps", "get_partition_names_ps_req",
    "get_partitions_batch", "get_partition_names_batch",
    "get_table_column_statistics", "get_partition_column_statistics", "get_table_statistics_req",
    "get_partitions_statistics_req", "get_aggr_stats_for",
    "get_function", "get_functions", "get_all_functions",
    "partition_name_has_valid_characters", "partition_name_to_spec", "partition_name_to_vals",
})
# Answered here as the ordinary server does: the session (set_ugi, meta confs) is this connection's, and an fb303
# shutdown is a client closing its connection, which must never reach the upstream.
SESSION_CALLS = frozenset({
    "set_ugi", "getMetaConf", "setMetaConf", "shutdown", "getName", "getVersion", "getStatus", "getStatusDetails",
    "getCounters", "getCounter", "setOption", "getOption", "getOptions", "getCpuProfile", "aliveSince", "reinitialize",
})
# Forwarded calls that change nothing, so a failed attempt may be sent again (the pool fails over).
IDEMPOTENT_PREFIXES = ("get_", "show_", "isPartitionMarkedForEvent")


class ForwardingHandler:
    """Answers every call of the IDL: the local handler's method for cached reads, locks and session calls, a
    forwarder for the rest."""

    def __init__(self, local: Handler, pool: UpstreamPool, cache: CachedStore) -> None:
        self._local = local
        self._pool = pool
        self._cache = cache
        self._forwarders: dict[str, Callable[..., object]] = {}
        for api in hms.ThriftHiveMetastore.thrift_services:
            if api not in CACHED_READS and api not in SESSION_CALLS and api not in LOCK_CALLS:
                names = [spec[1] for _, spec in sorted(getattr(hms.ThriftHiveMetastore, api + "_args")
                                                       .thrift_spec.items())]
                self._forwarders[api] = functools.partial(self._forward, api, names)
        self.ready_calls = local.ready_calls - self._forwarders.keys()

    def method_for(self, api: str, reader: Reader) -> Callable[..., object] | None:
        forwarder = self._forwarders.get(api)
        return forwarder if forwarder is not None else self._local.method_for(api, reader)

    def ready_answer(self, api: str, reader: Reader, arguments: Sequence[object]) -> Ready | None:
        return None if api in self._forwarders else self._local.ready_answer(api, reader, arguments)

    def ready_again(self, reader: Reader, held: Held) -> bool:
        return self._local.ready_again(reader, held)

    def _forward(self, api: str, arg_names: list[str], *args: object) -> object:
        """A read's answer changes nothing here; a write's acknowledgement (or a write that may have been applied
        without one) has the cache read again what it named."""
        idempotent = api.startswith(IDEMPOTENT_PREFIXES)
        arguments = dict(zip(arg_names, args))
        try:
            answer = self._pool.call(api, *args, idempotent=idempotent)
        except UpstreamUnavailable as exc:
            if exc.maybe_applied and not idempotent:
                self._apply(cache_effects(api, arguments))
            raise unavailable(exc, write=not idempotent) from None
        if not idempotent:
            self._apply(cache_effects(api, arguments))
        return answer

    def _apply(self, effects: CacheEffects) -> None:
        """Reads again what the acknowledged write named. A failure here (the upstream gone right after
        answering) leaves the entries dropped, never stale, and is not the client's failure: its write is done."""
        steps: list[Callable[[], None]] = [
            *(functools.partial(self._cache.refresh_database, cat, db) for cat, db in effects.databases),
            *(functools.partial(self._cache.refresh_function, cat, db, name) for cat, db, name in effects.functions),
            *(functools.partial(self._cache.settle, key) for key in effects.settle),
            *(functools.partial(self._cache.invalidate, key) for key in effects.changed)]
        for step in steps:
            try:
                step()
            except Exception as exc:
                log.warning("could not read back a forwarded write (%s): the cache is emptied and prewarmed again "
                            "when the upstream answers", exc)
                self._cache.cache.clear()
                return
