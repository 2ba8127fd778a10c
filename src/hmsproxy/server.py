"""Assembles a running metastore: database, store, handler, Thrift server and metrics endpoint."""
from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from hmsproxy.handler import Handler, HandlerContext
from hmsproxy.handler.common import now
from hmsproxy.hive.hiveconf import hiveconf_defaults
from hmsproxy.idl import hms
from hmsproxy.ops.audit import AuditLog
from hmsproxy.ops.config import Settings
from hmsproxy.ops.heap import collect_less_often
from hmsproxy.ops.metrics import Metrics, MetricsServer
from hmsproxy.ops.peer_wake import PeerWake
from hmsproxy.rpc.dispatch import Calls, MetastoreProcessor
from hmsproxy.rpc.repeated_requests import RepeatedRequests
from hmsproxy.rpc.thrift_server import ThriftServer
from hmsproxy.rpc.tls import server_context
from hmsproxy.storage.object_store import ObjectStores
from hmsproxy.storage.warehouse import Warehouse
from hmsproxy.store.cache.poller import Poller
from hmsproxy.store.cache.prewarm import Loader
from hmsproxy.store.cache.prewarm_workers import WorkerPlan
from hmsproxy.store.cache.wiring import cache_over
from hmsproxy.store.rawstore import RawStore
from hmsproxy.store.reaper import Reaper
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema, schema_version
from hmsproxy.store.sql.stats_codec import stats_as_stored
from hmsproxy.store.sql.store import DatabaseAccess, SqlStore
from hmsproxy.store.sql.validate import own_keys_missing_on_mysql
from hmsproxy.store.sql.wake_peers import WakePeers
from hmsproxy.upstream.serving import UpstreamParts, start_upstream

if TYPE_CHECKING:
    from hmsproxy.iceberg.app import RestServer

log = logging.getLogger(__name__)


def server_conf(settings: Settings) -> dict[str, str]:
    """What get_config_value answers besides the client's default: the server's own settings, else HiveConf's
    defaults (as HMS 2.3 does)."""
    warehouse = settings.warehouse_location
    return {
        **hiveconf_defaults(),
        "hive.txn.timeout": f"{settings.txn_timeout_s:g}s",
        "hive.metastore.warehouse.dir": warehouse,
        "metastore.warehouse.dir": warehouse,
        "hive.metastore.uris": f"thrift://{settings.host}:{settings.port}",
        "metastore.thrift.uris": f"thrift://{settings.host}:{settings.port}",
    }


def _warehouse_root(settings: Settings) -> Path | str:
    """The warehouse root as Warehouse takes it: a local directory, or an object-store location."""
    return settings.warehouse_location if settings.warehouse_on_object_store else settings.warehouse_path


def open_store(settings: Settings, warehouse: Warehouse, metrics: Metrics) -> SqlStore:
    """Connects, creates the schema on an empty database and makes sure the `default` database exists."""
    db = Database(settings.db, added_latency_ms=settings.db_latency_ms, connect_timeout_s=settings.db_connect_timeout_s,
                  statement_timeout_s=settings.db_statement_timeout_s, connection_waited=metrics.db_pool_wait.observe)
    if init_schema(db, warehouse.location, settings.db_schema_wait_s):
        log.info("created the Hive metastore schema %s in %s", schema_version(db), db.engine.url.render_as_string())
    for missing in own_keys_missing_on_mysql(db.engine):
        log.warning("%s: an index of hmsproxy's own; served without it, slower (`hmsproxy schema upgrade` adds it)",
                    missing)
    store = SqlStore(db, txn_timeout_ms=int(settings.txn_timeout_s * 1000),
                     check_lock_wait_s=settings.check_lock_wait_s)
    try:
        store.get_database("hive", "default")
    except hms.NoSuchObjectException:
        warehouse.mkdirs(warehouse.default_database_location("default"))
        try:
            store.create_database(hms.Database(
                name="default", description="Default Hive database", parameters={},
                locationUri=warehouse.default_database_location("default"), ownerName="public",
                ownerType=hms.PrincipalType.ROLE, catalogName="hive", createTime=now()))
        except hms.AlreadyExistsException:
            pass  # another instance created it at the same moment
    return store


def cached(store: SqlStore, settings: Settings, metrics: Metrics
           ) -> tuple[RawStore, Loader, Poller, PeerWake | None]:
    """Wraps the store in the cache, starts prewarming it and following the notification log, woken by the other
    instances' writes and waking them after its own."""
    parts = cache_over(store, settings, metrics, stats_as_stored, prewarm_workers(store.db, settings), creations=store)
    # They learn of this instance's own writes (the database tells its watchers), which the cache has already.
    store.db.event_watchers.extend([parts.poller] if parts.unlogged is None else [parts.poller, parts.unlogged])
    wake = peer_wake(store.db, settings, parts.poller)
    if wake is not None:
        store.db.event_watchers.append(wake)
    parts.loader.start()   # first: it forks prewarm's workers while the process has no other thread
    parts.poller.start()
    if wake is not None:
        wake.start()
    return parts.store, parts.loader, parts.poller, wake


def peer_wake(db: Database, settings: Settings, poller: Poller) -> PeerWake | None:
    """The wake-ups between the instances on the database (ops/peer_wake.py): none when turned off or on an
    in-memory SQLite database, which no other instance can open."""
    if not settings.peer_wake or db.is_memory:
        return None
    return PeerWake(WakePeers(db), poller.wake, bind_host=settings.host, port=settings.peer_wake_port,
                    wake_host=settings.peer_wake_host)


def prewarm_workers(db: Database, settings: Settings) -> WorkerPlan | None:
    """The worker processes that read a large prewarm: none on an in-memory SQLite database, which they could not
    open."""
    if settings.prewarm_workers <= 0 or db.is_memory:
        return None
    access = DatabaseAccess(db.url, settings.db_latency_ms, settings.db_connect_timeout_s,
                            settings.db_statement_timeout_s)
    return WorkerPlan(access, settings.prewarm_workers, settings.prewarm_workers_min_partitions)


@dataclass
class RunningServer:
    thrift: ThriftServer
    metrics_server: MetricsServer | None
    store: RawStore
    loader: Loader | None
    poller: Poller | None
    reaper: Reaper | None
    upstream: UpstreamParts | None = None
    audit: AuditLog | None = None
    rest: RestServer | None = None
    peer_wake: PeerWake | None = None

    @property
    def port(self) -> int:
        return self.thrift.port

    def stop(self) -> None:
        if self.rest is not None:
            self.rest.stop()
        self.thrift.stop()
        if self.audit is not None:
            self.audit.close()
        if self.reaper is not None:
            self.reaper.stop()
        if self.metrics_server is not None:
            self.metrics_server.stop()
        if self.upstream is not None:
            self.upstream.stop()
            return
        if self.peer_wake is not None:
            self.peer_wake.stop()
        if self.poller is not None:
            self.poller.stop()
        if self.loader is not None:
            self.loader.stop()
        self.store.close()


# A thread answering a large listing holds the GIL in slices of this length; the default 5 ms would let one
# client's 100k-partition reply add 5 ms to every other client's call.
GIL_SWITCH_INTERVAL_S = 0.0005


def _server_files(settings: Settings) -> tuple[Path, ...]:
    """What no client's drop or rename may delete or move: the working directory and the database file."""
    url = make_url(settings.db)
    database_file = Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None
    return (Path.cwd(),) + ((database_file,) if database_file and str(database_file) != ":memory:" else ())


def _rest_catalog(settings: Settings, handler: Handler, stores: ObjectStores, metrics: Metrics,
                  audit: AuditLog | None, prewarmed: threading.Event | None) -> RestServer | None:
    """The Iceberg REST catalog, where its port is set. Its stack (pyiceberg, s3fs, Starlette, uvicorn) is imported
    only then: about a second of CPU, a fifth of the start of a server with 100k partitions to prewarm."""
    if not settings.iceberg_rest_port:
        return None
    from hmsproxy.iceberg.serving import start_rest
    return start_rest(settings, handler, stores, metrics, audit, prewarmed)


def _audit_log(settings: Settings) -> AuditLog | None:
    return AuditLog(settings.audit_log, settings.log_format == "json") if settings.audit_log else None


def _thrift_server(settings: Settings, handler: Calls, metrics: Metrics, audit: AuditLog | None) -> ThriftServer:
    repeats = RepeatedRequests(settings.remembered_requests)
    metrics.remembered_requests.set_function(lambda: len(repeats))
    return ThriftServer(lambda peer: MetastoreProcessor(handler, metrics, settings.max_message_bytes, audit=audit,
                                                        peer=peer, repeats=repeats), settings.host,
                        settings.port, framed=settings.framed, max_connections=settings.max_connections,
                        max_message_bytes=settings.max_message_bytes, metrics=metrics,
                        idle_timeout_s=settings.client_idle_timeout_s, request_timeout_s=settings.request_timeout_s,
                        evict_idle_after_s=settings.evict_idle_after_s,
                        max_depth=settings.max_request_depth, max_objects=settings.max_request_objects,
                        max_large_requests=settings.max_large_requests,
                        tls=server_context(settings.tls_cert, settings.tls_key, settings.tls_client_ca)
                        if settings.tls else None)


def _liveness(thrift: ThriftServer, stall_s: float) -> Callable[[], tuple[bool, str]]:
    """Live while the Thrift connection loop comes round: every connection is accepted there and plain ones are
    served there, so a loop stuck longer than `stall_s` serves nobody, though the process and this endpoint run."""
    def live() -> tuple[bool, str]:
        stalled = thrift.loop_stalled_for()
        if stalled <= stall_s:
            return True, ""
        return False, (f"the Thrift connection loop has not come round for {stalled:.1f} s "
                       f"(--liveness-stall-s {stall_s:g})")
    return live


def _metrics_server(settings: Settings, metrics: Metrics, ready: Callable[[], tuple[bool, str]],
                    thrift: ThriftServer) -> MetricsServer | None:
    if not settings.metrics_port:
        return None
    metrics.ready.set_function(lambda: 1.0 if ready()[0] else 0.0)
    metrics_server = MetricsServer(metrics, settings.host, settings.metrics_port, ready=ready,
                                   live=_liveness(thrift, settings.liveness_stall_s))
    metrics_server.start()
    return metrics_server


def start(settings: Settings) -> RunningServer:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    collect_less_often()
    metrics = Metrics()
    if settings.upstream:
        return _start_in_front(settings, metrics)
    stores = ObjectStores.of(settings, metrics)
    warehouse = Warehouse(_warehouse_root(settings), keep=_server_files(settings),
                          quick_stats_max_files=settings.quick_stats_max_files, stores=stores)
    warehouse.prepare_root()
    sql_store = open_store(settings, warehouse, metrics)
    metrics.db_pool_in_use.set_function(sql_store.db.connections_in_use)
    store: RawStore = sql_store
    loader: Loader | None = None
    poller: Poller | None = None
    wake: PeerWake | None = None
    if settings.cache:
        store, loader, poller, wake = cached(sql_store, settings, metrics)
    context = HandlerContext(store=store, warehouse=warehouse, server_conf=server_conf(settings), started_at=now(),
                             partition_request_limit=settings.partition_request_limit)
    reaper = Reaper(store.reap_expired, settings.txn_reaper_interval_s)
    audit = _audit_log(settings)
    handler = Handler(context)
    thrift = _thrift_server(settings, handler, metrics, audit)
    complete = loader.complete if loader else None
    metrics_server = _metrics_server(settings, metrics, lambda: (complete is None or complete.is_set(), ""), thrift)
    thrift.start()
    reaper.start()
    rest = _rest_catalog(settings, handler, stores, metrics, audit, complete)
    log.info("hmsproxy serving thrift://%s:%d (%s, cache %s), warehouse %s, metrics %s", settings.host, thrift.port,
             "framed" if settings.framed else "unframed", "on" if settings.cache else "off", warehouse.location,
             f"http://{settings.host}:{metrics_server.port}/metrics" if metrics_server else "off")
    return RunningServer(thrift, metrics_server, store, loader, poller, reaper, audit=audit, rest=rest,
                         peer_wake=wake)


def _start_in_front(settings: Settings, metrics: Metrics) -> RunningServer:
    """hmsproxy in front of an upstream HMS: it stores nothing, so it has no database, warehouse or reaper."""
    parts = start_upstream(settings, metrics)
    context = HandlerContext(store=parts.store, warehouse=Warehouse(_warehouse_root(settings)),
                             server_conf=server_conf(settings), started_at=now(),
                             partition_request_limit=settings.partition_request_limit)
    audit = _audit_log(settings)
    thrift = _thrift_server(settings, parts.handler(Handler(context)), metrics, audit)
    metrics_server = _metrics_server(settings, metrics, parts.readiness, thrift)
    thrift.start()
    log.info("hmsproxy serving thrift://%s:%d (%s) in front of %s, metrics %s", settings.host, thrift.port,
             "framed" if settings.framed else "unframed", settings.upstream,
             f"http://{settings.host}:{metrics_server.port}/metrics" if metrics_server else "off")
    return RunningServer(thrift, metrics_server, parts.store, parts.loader, parts.poller, None, parts, audit)
