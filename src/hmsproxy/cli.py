"""`hmsproxy serve` runs the metastore; `hmsproxy schema init|info` manages the database schema."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence

from hmsproxy import doctor
from hmsproxy.ops import config, logs
from hmsproxy.ops.listening import PortRefused
from hmsproxy.rpc.tls import TlsRefused
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql import upgrade
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.hive_versions import SERVED_VERSIONS
from hmsproxy.store.sql.schema_setup import (
    SchemaRefused,
    check_servable,
    prepare_schema,
    schema_lock,
    schema_version,
    servable_layout,
)
from hmsproxy.store.sql.upgrade import UpgradeRefused
from hmsproxy.store.sql.validate import schema_differences, schema_report


class _PrintVersion(argparse.Action):
    """--version, looked up only when asked: importing importlib.metadata would add 40 ms to every start."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from importlib import metadata
        print(f"hmsproxy {metadata.version('hmsproxy')}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hmsproxy", description="A Hive Metastore server with a server-side cache")
    parser.add_argument("--version", action=_PrintVersion)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = _serve_options()
    commands.add_parser("serve", parents=[serve], help="run the metastore Thrift server")
    commands.add_parser("doctor", parents=[serve], help="check a configuration (database, schema, notification log, "
                                                      "warehouse, ports, TLS) and say what to fix")
    schema = commands.add_parser("schema", help="create or inspect the metastore schema")
    schema.add_argument("action", choices=["init", "info", "validate", "upgrade"])
    schema.add_argument("--dry-run", action="store_true", help="upgrade: print the SQL it would run, change nothing")
    schema.add_argument("--db", help="SQLAlchemy URL of the metastore database")
    schema.add_argument("--db-password-file", help="the database password, read from the first line of this file")
    schema.add_argument("--warehouse", help="warehouse root, for the default catalog's location")
    schema.add_argument("--db-schema-wait-s", help="longest init and upgrade wait for another process creating or "
                                                   "upgrading the schema (default 300s)")
    schema.add_argument("--config", help="TOML config file")
    schema.add_argument("--hive-site", help="hive-site.xml of a Java HMS (its database)")
    return parser


def _serve_options() -> argparse.ArgumentParser:
    """The settings of `serve`, which `doctor` checks."""
    serve = argparse.ArgumentParser(add_help=False)
    serve.add_argument("--config", help="TOML config file (also HMSPROXY_CONFIG)")
    serve.add_argument("--hive-site", help="hive-site.xml of a Java HMS: its database, warehouse, port and cache "
                                           "keys (also HMSPROXY_HIVE_SITE)")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="Thrift port (default 9083; 0 picks a free one)")
    serve.add_argument("--db", help="SQLAlchemy URL of the metastore database (default sqlite:///hmsproxy.db)")
    serve.add_argument("--warehouse", help="warehouse root directory (default ./warehouse)")
    serve.add_argument("--metrics-port", type=int, help="port of /metrics /healthz /readyz (default 9090; 0 = off)")
    serve.add_argument("--framed", action="store_const", const=True, help="use the framed transport")
    serve.add_argument("--max-connections", type=int, help="cap on concurrent client connections (default 256)")
    serve.add_argument("--log-level", help="DEBUG, INFO, WARNING ... (default INFO)")
    serve.add_argument("--log-format", help="text or json: one JSON object per line (default text)")
    serve.add_argument("--audit-log", help="a line per call (user, client address, call, object, outcome) to this "
                                           "file, or - for standard output (default: none)")
    serve.add_argument("--db-password-file", help="the database password, read from the first line of this file "
                                                  "instead of the URL, so that it does not show in `ps`")
    serve.add_argument("--tls-cert", help="TLS on the Thrift port: the server's certificate chain (PEM), with its key "
                                          "unless --tls-key names it")
    serve.add_argument("--tls-key", help="the TLS certificate's private key (PEM)")
    serve.add_argument("--tls-client-ca", help="require client certificates signed by this CA (PEM): mutual TLS")
    serve.add_argument("--iceberg-rest-port", type=int, help="port of the Iceberg REST catalog (default 0: off; "
                                                             "Hive's metastore.catalog.servlet.port)")
    serve.add_argument("--iceberg-rest-path", help="its base path (default iceberg: uri=http://host:port/iceberg)")
    serve.add_argument("--iceberg-rest-tokens-file", help="bearer tokens the REST catalog accepts, one a line "
                                                          "(default: none, open like the Thrift port)")
    serve.add_argument("--iceberg-max-request-bytes", help="largest REST request body, e.g. 16mb (default)")
    serve.add_argument("--iceberg-max-requests", type=int, help="REST requests served at once; beyond, 503 "
                                                                "(default 64)")
    serve.add_argument("--iceberg-lock-wait-s", help="longest a REST commit waits for its table's lock before "
                                                     "failing with 409, which clients retry (default 30s)")
    serve.add_argument("--iceberg-manifest-cache-bytes", help="decoded Iceberg manifests kept for scan planning, "
                                                              "e.g. 1gb (default 256mb)")
    serve.add_argument("--iceberg-max-plans", type=int, help="scan plans whose further tasks are kept for fetching "
                                                             "(default 256; the oldest goes first)")
    serve.add_argument("--iceberg-plan-ttl-s", help="how long a plan's further tasks are kept (default 300s)")
    serve.add_argument("--iceberg-plan-chunk-tasks", type=int, help="file scan tasks a plan answers inline, and "
                                                                    "in each plan task after (default 1000)")
    serve.add_argument("--iceberg-warm-manifests", action="store_const", const=True,
                       help="after prewarm, read every Iceberg table's current manifests into the manifest cache")
    serve.add_argument("--no-cache", dest="cache", action="store_const", const=False,
                       help="serve every call from the database (no server-side cache)")
    serve.add_argument("--cache-max-bytes", help="memory bound of the cache, e.g. 2gb (default 1gb)")
    serve.add_argument("--cache-hot-bytes", help="partitions' own bytes kept expanded, beyond the cache's packed "
                       "form, for the tables read lately, e.g. 128mb (default 64mb)")
    serve.add_argument("--cache-whitelist", help="comma-separated db.table regexes to cache (default .*)")
    serve.add_argument("--cache-blacklist", help="comma-separated db.table regexes never to cache")
    serve.add_argument("--prewarm-workers", type=int,
                       help="processes that read prewarm's tables beside the loader (default 2; 0: none)")
    serve.add_argument("--prewarm-workers-min-partitions", type=int,
                       help="the workers start only for a prewarm of this many partitions or more (default 20000)")
    serve.add_argument("--strict-snapshots", action="store_const", const=True,
                       help="refuse cached reads of transactional tables that carry no validWriteIdList")
    serve.add_argument("--partition-request-limit", type=int,
                       help="most partitions one call may return; beyond it a MetaException points to the batch API "
                            "(default -1: unlimited)")
    serve.add_argument("--max-message-bytes", help="largest request or pre-encoded reply, e.g. 100mb (default)")
    serve.add_argument("--poll-interval-s", type=float,
                       help="how often the notification log's head is read for changes of writers that send no "
                            "wake-up, such as a Java HMS (default 0.5)")
    serve.add_argument("--no-peer-wake", dest="peer_wake", action="store_const", const=False,
                       help="neither send nor receive wake-ups: other instances' changes are seen at the next poll")
    serve.add_argument("--peer-wake-port", type=int,
                       help="UDP port other instances' wake-ups arrive on (default 0: any free one)")
    serve.add_argument("--peer-wake-host", help="the address other instances send wake-ups to (default: --host, or "
                                                "this machine's address when --host is a wildcard)")
    serve.add_argument("--event-ttl-s", type=int,
                       help="notification events older than this are deleted (default 86400)")
    serve.add_argument("--txn-timeout-s", help="transactions and locks not heartbeated for this long are aborted "
                                               "and released (default 300s, Hive's hive.txn.timeout)")
    serve.add_argument("--unlogged-check-s", help="how often to look for rows another writer created without a "
                                                  "notification event (a Java HMS without Hive's listener), which "
                                                  "turn the cache off; 0 never looks (default 10s)")
    serve.add_argument("--txn-reaper-interval-s", help="how often abandoned transactions and locks are reaped "
                                                       "(default 30s)")
    serve.add_argument("--check-lock-wait-s", help="longest check_lock holds a WAITING answer, answering at once "
                                                   "when the lock is granted (default 0.5s)")
    serve.add_argument("--quick-stats-max-files", type=int,
                       help="a data directory with more entries is not listed for numFiles/totalSize (default 100000)")
    serve.add_argument("--object-stores", help="object stores whose locations are worked on, of s3, gcs, abfs "
                                               "(default: the warehouse's own; others are stored and left alone)")
    serve.add_argument("--object-store-connect-timeout-s", help="longest wait to connect to an object store "
                                                                "(default 5s)")
    serve.add_argument("--object-store-read-timeout-s", help="longest wait for an object store's answer to one "
                                                             "request (default 20s)")
    serve.add_argument("--object-store-attempts", type=int, help="tries of one object-store request (default 3)")
    serve.add_argument("--s3-endpoint", help="S3 endpoint (fs.s3a.endpoint; default AWS_ENDPOINT_URL, else AWS)")
    serve.add_argument("--s3-region", help="S3 region (fs.s3a.endpoint.region; default AWS_REGION)")
    serve.add_argument("--s3-path-style", help="true: path-style bucket addressing (fs.s3a.path.style.access), as "
                                               "MinIO and most S3-compatible stores need")
    serve.add_argument("--client-idle-timeout-s", help="a connection with no request for this long is closed "
                                                       "(default 600s)")
    serve.add_argument("--request-timeout-s", help="a request must arrive whole this long after its first byte, "
                                                   "else the connection is closed (default 30s)")
    serve.add_argument("--evict-idle-after-s", help="when every connection slot is taken, a new connection closes "
                                                    "the one idle longest if it has been idle this long (default 5s)")
    serve.add_argument("--liveness-stall-s", help="/healthz answers 503 once the Thrift connection loop, which "
                                                  "accepts and serves connections, has been stuck this long "
                                                  "(default 30s)")
    serve.add_argument("--max-request-depth", type=int, help="deepest nesting of structs and containers in a "
                                                             "request (default 64)")
    serve.add_argument("--max-request-objects", type=int, help="most values one request may hold, which bounds the "
                                                               "memory its decoding takes (default 1000000)")
    serve.add_argument("--max-large-requests", type=int, help="requests of more than 100000 values decoded at once "
                                                              "(default 4); the others wait their turn")
    serve.add_argument("--remembered-requests", type=int, help="requests whose replies from the cache are kept, so "
                                                               "that a repeat is answered without decoding it "
                                                               "(default 1024; 0: none)")
    serve.add_argument("--db-connect-timeout-s", help="longest wait for a database connection (default 10s)")
    serve.add_argument("--db-statement-timeout-s", help="longest one call waits on the database, its statements "
                                                        "and retries together; a database that stops answering "
                                                        "fails calls after it (default 60s)")
    serve.add_argument("--db-schema-wait-s", help="longest a start waits for another instance (or `hmsproxy schema "
                                                  "upgrade`) creating or upgrading the schema (default 300s)")
    serve.add_argument("--upstream", help="serve in front of an existing HMS instead of a database: its Thrift URIs, "
                                          "comma-separated for failover (thrift://host:9083,thrift://host2:9083)")
    serve.add_argument("--upstream-framed", action="store_const", const=True,
                       help="speak the framed transport to the upstream (default: unframed, as HMS)")
    serve.add_argument("--upstream-refresh-s", help="how often the cache is revalidated against an upstream that "
                                                    "keeps no notification log (default 60s)")
    serve.add_argument("--upstream-connections", type=int, help="most connections to the upstream at once "
                                                                "(default 16)")
    serve.add_argument("--upstream-call-timeout-s", help="longest one call to the upstream may take, failover "
                                                         "included (default 300s)")
    serve.add_argument("--db-latency-ms", type=float, help="benchmarks only: delay added to every database round trip")
    return serve


def _warn_of_ignored_environment() -> None:
    """One line naming the HMSPROXY_* variables that give no setting (their values may be secrets: not shown)."""
    ignored = config.ignored_environment(os.environ)
    if ignored:
        logging.getLogger("hmsproxy").warning(
            "ignoring environment variables that are not hmsproxy settings (a Kubernetes Service named hmsproxy "
            "adds HMSPROXY_PORT=tcp://... and the like): %s", ", ".join(ignored))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    flags = {k: v for k, v in vars(args).items() if k not in ("command", "action", "dry_run")}
    try:
        settings = config.resolve(flags)
    except (OSError, ValueError) as exc:
        print(f"hmsproxy: {exc}", file=sys.stderr)
        return 2
    logs.configure(settings.log_level, settings.log_format)
    _warn_of_ignored_environment()
    try:
        if args.command == "schema":
            return _schema(args.action, settings, getattr(args, "dry_run", False))
        if args.command == "doctor":
            return doctor.report(doctor.diagnose(settings))
        return _serve(settings)
    except (SchemaRefused, UpgradeRefused, TlsRefused, PortRefused) as exc:
        return _refuse(exc)


def _refuse(exc: Exception) -> int:
    """Ends a refused start with its reason as the last line printed: threads started before the refusal (prewarm)
    log nothing after it, and a record one was writing as logging stopped is written first."""
    logging.disable(logging.CRITICAL)
    for handler in logging.getLogger().handlers:
        handler.acquire()   # held while a record is written
        handler.release()
    sys.stderr.write(f"hmsproxy: {exc}\n")
    return 2


SERVED = {"hive-4": "serves it as it is (only a default catalog whose location is 'TBD' gets the warehouse)",
          "hive-2.3": "serves it as it is (only the event counter's row, which Hive 2.3's script leaves to the "
                      "first writer of an event, is added); what only later layouts can hold (catalogs other than "
                      "'hive', table write ids, managed locations, connector databases, engines other than 'hive', "
                      "histograms, bit vectors) is refused with a MetaException",
          "hive-3.1": "serves it as it is (only a default catalog whose location is 'TBD' gets the warehouse); what "
                      "only Hive 4's layout can hold (managed locations, connector databases, engines other than "
                      "'hive', histograms) is refused with a MetaException",
          "legacy": "adds the tables and columns this version declares, then serves it"}
LAYOUTS = {"hive-4": "Hive 4.0.0's layout, as Hive's schematool and hmsproxy create it; transaction ids from TXNS",
           "hive-2.3": "Hive 2.3.0's layout, as Hive's schematool creates it; transaction ids from NEXT_TXN_ID",
           "hive-3.1": "Hive 3.1.0's layout, as Hive's schematool creates it; transaction ids from NEXT_TXN_ID",
           "legacy": "as an older hmsproxy created it; transaction ids from NEXT_TXN_ID"}


def _schema(action: str, settings: config.Settings, dry_run: bool) -> int:
    db = Database(settings.db)
    try:
        if action == "upgrade":
            upgrade.refuse_sqlite(db.engine)   # before the lock, which would create the file
            with schema_lock(db, settings.db_schema_wait_s):   # no instance creates or upgrades it meanwhile
                return _upgrade(db, dry_run)
        if action == "init":
            with schema_lock(db, settings.db_schema_wait_s) as conn:
                if servable_layout(conn) != "empty":  # as Hive's schematool: init is for an empty database
                    raise SchemaRefused(f"this database already holds Hive metastore schema {schema_version(db)}; "
                                        "init refuses a database that is not empty (`hmsproxy serve` serves this "
                                        "one). Nothing was changed.")
                prepare_schema(conn, settings.warehouse_location)
            print(f"created Hive metastore schema {schema_version(db)}")
        elif action == "info":
            return _info(db)
        else:
            differences, own_missing = schema_report(db.engine)
            for difference in differences:
                print(difference)
            for own in own_missing if not differences else []:
                print(f"note: {own}: an index of hmsproxy's own, not Hive's; served without it, slower "
                      "(`hmsproxy schema upgrade` adds it)")
            print(f"{len(differences)} difference(s): hmsproxy cannot serve this database as it is" if differences
                  else f"schema {schema_version(db)}: everything hmsproxy reads and writes is there, no id counter "
                       "is behind")
            return 1 if differences else 0
        return 0
    finally:
        db.dispose()


def _info(db: Database) -> int:
    """The schema's version and layout, and what `serve` would do with it; exit code 0 when it serves it."""
    try:
        layout = check_servable(db)
    except SchemaRefused:
        version, steps = upgrade.plan(db.engine)  # refuses what it cannot upgrade either
        print(f"schema version: {version} (Hive's); hmsproxy serves {SERVED_VERSIONS} in place")
        print(f"serve: refuses it; `hmsproxy schema upgrade` would bring it to {s.SCHEMA_VERSION} with "
              f"{upgrade.statement_count(steps)} statements (`--dry-run` prints them)")
        return 1
    if layout == "empty":
        print("no metastore schema in this database: `hmsproxy schema init` or `serve` creates it")
        return 1
    print(f"schema version: {schema_version(db)} ({LAYOUTS[layout]})")
    print(f"serve: {SERVED[layout]}")
    return 0


def _upgrade(db: Database, dry_run: bool) -> int:
    version, steps = upgrade.plan(db.engine)
    if not steps:
        print(f"schema {version}: nothing to upgrade")
        return 0
    if dry_run:
        for step in steps:
            print(f"-- {step.why}")
            for statement in step.statements:
                print(f"{statement.strip()};")
        print(f"-- {upgrade.statement_count(steps)} statements would upgrade schema {version} to "
              f"{s.SCHEMA_VERSION}; nothing was changed")
        return 0
    upgrade.run(db.engine, steps, lambda step: print(f"{step.why} ({len(step.statements)} statements)", flush=True))
    differences = schema_differences(db.engine)
    for difference in differences:
        print(difference)
    if differences:
        print(f"upgraded schema {version}, but {len(differences)} difference(s) remain")
        return 1
    print(f"upgraded schema {version} to {schema_version(db)}")
    return 0


# How long a clean stop may take after SIGTERM/SIGINT before the process exits anyway (a second signal
# exits at once): orchestrators wait 10 s (Kubernetes' grace period is 30 s, docker stop's 10 s) before SIGKILL.
STOP_GRACE_S = 8
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _serve(settings: config.Settings) -> int:
    """Serves until SIGTERM/SIGINT. The stop signals are blocked in every thread and taken by the main thread
    with sigwait, and the grace period is an alarm whose default action ends the process: both work in the
    kernel, so a stop never waits for the interpreter lock or for the signal to land on the main thread."""
    from hmsproxy.server import start

    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)   # threads started from here on inherit the mask
    running = start(settings)
    print(f"hmsproxy listening on {settings.host}:{running.port}", flush=True)
    signal.sigwait(STOP_SIGNALS)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(STOP_GRACE_S)
    for signum in STOP_SIGNALS:   # a second stop signal ends the process at once
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    logging.getLogger("hmsproxy").info("stopping")
    running.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
