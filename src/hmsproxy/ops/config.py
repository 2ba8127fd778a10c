"""One Settings object, resolved as: command-line flags > HMSPROXY_* environment > config file >
hive-site.xml > defaults.

An unknown flag or config-file key is refused, but an unknown HMSPROXY_* variable is ignored (the command warns,
naming it): a flag or key was written for this server, while the environment also holds what others put there.

The config file is TOML. Keys may be our own names (`port`, `db`, ...) or the Hive key names operators
already know, in either of Hive's forms (`metastore.thrift.port` or `hive.metastore.thrift.port`).
"""
from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from hmsproxy.ops import hive_site

HIVE_KEY_ALIASES: dict[str, str] = {
    "metastore.thrift.port": "port",
    "hive.metastore.port": "port",
    "metastore.thrift.bind.host": "host",
    "metastore.warehouse.dir": "warehouse",
    "hive.metastore.warehouse.dir": "warehouse",
    "javax.jdo.option.connectionurl": "db",
    "metastore.server.max.threads": "max_connections",
    "hive.metastore.server.max.threads": "max_connections",
    "metastore.thrift.framed": "framed",
    "metastore.event.db.listener.timetolive": "event_ttl_s",
    "metastore.limit.partition.request": "partition_request_limit",
    "hive.metastore.limit.partition.request": "partition_request_limit",
    "metastore.thrift.max.message.size": "max_message_bytes",
    "hive.thrift.max.message.size": "max_message_bytes",
    "hive.metastore.event.db.listener.timetolive": "event_ttl_s",
    "metastore.cached.rawstore.max.cache.memory": "cache_max_bytes",
    "hive.metastore.cached.rawstore.max.cache.memory": "cache_max_bytes",
    "metastore.cached.rawstore.cached.object.whitelist": "cache_whitelist",
    "hive.metastore.cached.rawstore.cached.object.whitelist": "cache_whitelist",
    "metastore.cached.rawstore.cached.object.blacklist": "cache_blacklist",
    "hive.metastore.cached.rawstore.cached.object.blacklist": "cache_blacklist",
    "hive.txn.timeout": "txn_timeout_s",
    "metastore.txn.timeout": "txn_timeout_s",
    "metastore.timedout.txn.reaper.interval": "txn_reaper_interval_s",
    "hive.timedout.txn.reaper.interval": "txn_reaper_interval_s",
    "metastore.use.ssl": "tls",
    "hive.metastore.use.ssl": "tls",
    "metastore.keystore.path": "tls_cert",
    "hive.metastore.keystore.path": "tls_cert",
    "metastore.catalog.servlet.port": "iceberg_rest_port",
    "metastore.iceberg.catalog.servlet.path": "iceberg_rest_path",
    "fs.s3a.endpoint": "s3_endpoint",
    "fs.s3a.endpoint.region": "s3_region",
    "fs.s3a.path.style.access": "s3_path_style",
    "fs.s3a.connection.ssl.enabled": "s3_ssl",
    "fs.s3a.access.key": "s3_access_key",
    "fs.s3a.secret.key": "s3_secret_key",
    "fs.s3a.session.token": "s3_session_token",
}
# Settings never taken from the command line (anyone on the machine reads a process's arguments in `ps`).
SECRET_SETTINGS = frozenset({"s3_access_key", "s3_secret_key", "s3_session_token"})
DURATION_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}
SIZE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "m": 1 << 20, "gb": 1 << 30, "g": 1 << 30}


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 9083
    db: str = "sqlite:///hmsproxy.db"
    warehouse: str = "warehouse"
    metrics_port: int = 9090
    framed: bool = False
    max_connections: int = 256
    log_level: str = "INFO"
    cache: bool = True
    cache_max_bytes: int = 1 << 30
    cache_hot_bytes: int = 64 << 20      # partitions' own bytes kept expanded for the tables read lately
    cache_whitelist: str = ".*"
    cache_blacklist: str = ""
    strict_snapshots: bool = False
    prewarm_workers: int = 2              # processes reading prewarm's groups (0: the loader thread alone)
    prewarm_workers_min_partitions: int = 20_000
    partition_request_limit: int = -1
    max_message_bytes: int = 100 << 20
    poll_interval_s: float = 0.5           # the bound for writers that send no wake-up (ops/peer_wake.py)
    peer_wake: bool = True
    peer_wake_port: int = 0                # UDP port wake-ups arrive on (0: any free one)
    peer_wake_host: str = ""               # the address other instances send them to ("": see advertised_host)
    event_ttl_s: int = 86400
    unlogged_check_s: float = 10.0
    db_latency_ms: float = 0.0
    txn_timeout_s: float = 300.0
    txn_reaper_interval_s: float = 30.0
    check_lock_wait_s: float = 0.5
    client_idle_timeout_s: float = 600.0
    request_timeout_s: float = 30.0
    evict_idle_after_s: float = 5.0       # at the cap, a connection idle this long may be closed for a new one
    liveness_stall_s: float = 30.0        # /healthz answers 503 once the connection loop is stuck this long
    db_connect_timeout_s: float = 10.0
    db_statement_timeout_s: float = 60.0
    db_schema_wait_s: float = 300.0        # how long a start waits for another process creating/upgrading the schema
    max_request_depth: int = 64
    max_request_objects: int = 1_000_000
    max_large_requests: int = 4
    remembered_requests: int = 1024      # requests whose ready replies are kept for repeats (repeated_requests.py)
    quick_stats_max_files: int = 100_000
    object_stores: str = ""               # s3,gcs,abfs: the stores whose locations are worked on (default: the
    #                                       warehouse's own); a location on another is stored and left alone
    object_store_connect_timeout_s: float = 5.0
    object_store_read_timeout_s: float = 20.0
    object_store_attempts: int = 3        # tries of one object-store request (botocore's standard retry mode)
    s3_endpoint: str = ""                 # fs.s3a.endpoint (else AWS_ENDPOINT_URL, else AWS's own)
    s3_region: str = ""                   # fs.s3a.endpoint.region (else AWS_REGION / AWS_DEFAULT_REGION)
    s3_path_style: str = ""               # fs.s3a.path.style.access: true | false | "" (botocore's choice)
    s3_ssl: bool = True                   # fs.s3a.connection.ssl.enabled: an endpoint given as host:port is https
    s3_access_key: str = dataclasses.field(default="", repr=False)     # else the AWS credential chain
    s3_secret_key: str = dataclasses.field(default="", repr=False)
    s3_session_token: str = dataclasses.field(default="", repr=False)
    upstream: str = ""                    # thrift://host:9083[,thrift://host2:9083]: serve in front of that HMS
    upstream_framed: bool = False
    upstream_refresh_s: float = 60.0
    upstream_connections: int = 16
    upstream_call_timeout_s: float = 300.0
    log_format: str = "text"              # text | json (the server log and the audit log)
    audit_log: str = ""                   # a file, or - for standard output: a line per call (audit.py)
    db_password_file: str = ""            # the database password, read from this file (kept out of `ps`)
    tls: bool = False                     # TLS on the Thrift port (on when a certificate is given, unless said off)
    tls_cert: str = ""                    # PEM: the certificate chain, and the key unless tls_key names it
    tls_key: str = ""
    tls_client_ca: str = ""               # PEM: clients must present a certificate this CA signed
    iceberg_rest_port: int = 0            # the Iceberg REST catalog's port (0: off; Hive's -1 is off too)
    iceberg_rest_path: str = "iceberg"    # its base path, Hive 4.1's: uri=http://host:port/iceberg
    iceberg_rest_tokens_file: str = ""    # bearer tokens it accepts, one a line (none: open, as the Thrift port is)
    iceberg_max_request_bytes: int = 16 << 20   # a commit's or a plan's JSON body
    iceberg_max_requests: int = 64        # requests served at once; beyond, 503 (each holds a thread)
    iceberg_lock_wait_s: float = 30.0     # a commit waits this long for the table's lock, then fails (409: retry)
    iceberg_manifest_cache_bytes: int = 256 << 20   # decoded manifests and manifest lists kept for planning
    iceberg_max_plans: int = 256          # plans whose further tasks are kept for `tasks` fetches
    iceberg_plan_ttl_s: float = 300.0     # how long a plan's further tasks are kept
    iceberg_plan_chunk_tasks: int = 1000  # file scan tasks answered inline, then in each plan task
    iceberg_warm_manifests: bool = False  # after prewarm, read every Iceberg table's current manifests into the cache

    @property
    def warehouse_on_object_store(self) -> bool:
        return _SCHEME.match(self.warehouse) is not None and not self.warehouse.lower().startswith("file:")

    @property
    def warehouse_path(self) -> Path:
        """The local warehouse directory (not for one on an object store: warehouse_location)."""
        return Path(self.warehouse).expanduser().resolve()

    @property
    def warehouse_location(self) -> str:
        """The warehouse root as a location: `file:/abs/path`, or `s3a://bucket/key` as given."""
        return self.warehouse.rstrip("/") if self.warehouse_on_object_store else "file:" + str(self.warehouse_path)


LOG_FORMATS = ("text", "json")


def _with_password(url: str, password_file: str) -> str:
    """The database URL with the password the file holds (its first line), so that none needs to be given on a
    command line, which every user of the machine can read in `ps`."""
    with open(password_file, encoding="utf-8") as handle:
        password = handle.readline().rstrip("\r\n")
    if not password:
        raise ValueError(f"setting 'db_password_file': {password_file} holds no password on its first line")
    return make_url(url).set(password=password).render_as_string(hide_password=False)


def setting_name(key: str) -> str | None:
    """Our setting for a Hive key, in either form Hive reads (`hive.metastore.x` and `metastore.x`)."""
    key = key.lower()
    for candidate in (key, "metastore." + key[len("hive.metastore."):] if key.startswith("hive.metastore.")
                      else "hive." + key if key.startswith("metastore.") else key):
        if candidate in HIVE_KEY_ALIASES:
            return HIVE_KEY_ALIASES[candidate]
    return None


def hive_key_names() -> set[str]:
    """Every Hive key name hmsproxy reads, in both forms."""
    names = set(HIVE_KEY_ALIASES)
    names |= {"metastore." + k[len("hive.metastore."):] for k in HIVE_KEY_ALIASES if k.startswith("hive.metastore.")}
    names |= {"hive." + k for k in HIVE_KEY_ALIASES if k.startswith("metastore.")}
    return names


# A setting's value, as a file, the environment or the command line gives it and as Settings holds it.
Setting = str | int | float | bool


def _coerce(name: str, value: Setting) -> Setting:
    """Turns strings from the environment or a file into the field's type; rejects nonsense early."""
    field_type = {f.name: f.type for f in fields(Settings)}[name]
    if field_type == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"setting {name!r}: expected a boolean, got {value!r}")
    if name == "db" and str(value).lower().startswith("jdbc:"):
        return hive_site.sqlalchemy_url(str(value), None, None)
    if name == "warehouse":
        return _warehouse(str(value))
    if name == "object_stores":
        return _object_stores(str(value))
    if name == "s3_path_style" and str(value).strip():
        return "true" if _coerce("s3_ssl", value) else "false"
    if name == "iceberg_rest_port" and str(value).strip().startswith("-"):
        return 0   # Hive's metastore.catalog.servlet.port is -1 when off
    if name in ("cache_max_bytes", "cache_hot_bytes", "max_message_bytes", "iceberg_max_request_bytes",
                "iceberg_manifest_cache_bytes"):
        return _size(name, value)
    if name in ("txn_timeout_s", "txn_reaper_interval_s", "check_lock_wait_s", "client_idle_timeout_s",
                "evict_idle_after_s", "liveness_stall_s", "unlogged_check_s", "request_timeout_s",
                "db_connect_timeout_s", "db_statement_timeout_s", "db_schema_wait_s", "upstream_refresh_s",
                "upstream_call_timeout_s", "object_store_connect_timeout_s", "object_store_read_timeout_s",
                "iceberg_lock_wait_s", "iceberg_plan_ttl_s"):
        return _duration(name, value)
    if field_type == "float":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"setting {name!r}: expected a number, got {value!r}") from None
    if field_type == "int":
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValueError(f"setting {name!r}: expected an integer, got {value!r}") from None
        if name in NON_NEGATIVE and number < 0:
            raise ValueError(f"setting {name!r}: expected 0 or more, got {value!r}")
        return number
    return str(value)


_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]+):")   # two letters at least: `C:` is a Windows drive
OBJECT_STORE_SCHEMES = {"s3a": "s3", "s3": "s3", "s3n": "s3", "gs": "gcs", "abfs": "abfs", "abfss": "abfs"}


def _warehouse(value: str) -> str:
    """A directory, also given as Hive writes it (`file:/data/wh`, `file:///data/wh`), or an object-store location
    (`s3a://bucket/warehouse`, `gs://`, `abfs(s)://`); other file systems (hdfs:) are refused: hmsproxy has no
    client for them, and it creates and deletes managed data under the warehouse."""
    scheme = _SCHEME.match(value)
    if scheme is None:
        return value
    name = scheme.group(1).lower()
    if name == "file":
        return "/" + value[len("file:"):].lstrip("/")
    if name in OBJECT_STORE_SCHEMES:
        if not re.match(r"[a-zA-Z0-9+.-]+://[^/]+", value):
            raise ValueError(f"setting 'warehouse': {value!r} names no bucket ({name}://bucket/path)")
        return value
    raise ValueError(f"setting 'warehouse': {value!r}: hmsproxy serves warehouses on the local file system (file:) "
                     f"and object stores ({', '.join(OBJECT_STORE_SCHEMES)}), not on {name}:")


def _object_stores(value: str) -> str:
    families = [part.strip().lower() for part in value.split(",") if part.strip()]
    unknown = sorted(set(families) - set(OBJECT_STORE_SCHEMES.values()))
    if unknown:
        raise ValueError(f"setting 'object_stores': unknown {', '.join(unknown)} (expected s3, gcs, abfs)")
    return ",".join(families)


def _size(name: str, value: Setting) -> int:
    """Bytes from `1073741824`, `512mb`, `1Gb` (Hive writes sizes with units)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value))
    if not match or match.group(2).lower() not in SIZE_UNITS:
        raise ValueError(f"setting {name!r}: expected a size such as 512mb or 2gb, got {value!r}")
    return int(match.group(1)) * SIZE_UNITS[match.group(2).lower()]


NON_NEGATIVE = frozenset({"remembered_requests"})   # counts where 0 turns the thing off

# Durations where 0 means "not at all" (check_lock answers at once, no look for unlogged writes, no idle age
# needed before an idle connection may be closed for a new one); every other duration must be positive.
ZERO_ALLOWED = frozenset({"check_lock_wait_s", "unlogged_check_s", "evict_idle_after_s"})


def _duration(name: str, value: Setting) -> float:
    """Seconds from `300`, `300s`, `5m`, `1500ms` (Hive writes durations with units)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
    if not match or match.group(2).lower() not in DURATION_UNITS or (
            float(match.group(1)) <= 0 and name not in ZERO_ALLOWED):
        raise ValueError(f"setting {name!r}: expected a positive duration such as 300s or 5m, got {value!r}")
    return float(match.group(1)) * DURATION_UNITS[match.group(2).lower()]


def _normalise_keys(raw: Mapping[str, Setting], source: str) -> dict[str, Setting]:
    known = {f.name for f in fields(Settings)}
    result: dict[str, Setting] = {}
    for key, value in raw.items():
        name = setting_name(key) or key.replace("-", "_").lower()
        if name not in known:
            raise ValueError(f"{source}: unknown setting {key!r}")
        result[name] = _coerce(name, value)
    return result


def load_file(path: str | Path) -> dict[str, Setting]:
    with open(path, "rb") as handle:
        raw = tomllib.load(handle)
    flat = raw.get("hmsproxy", raw)
    return _normalise_keys(flat, str(path))


ENV_PREFIX = "HMSPROXY_"
FILE_VARIABLES = ("HMSPROXY_CONFIG", "HMSPROXY_HIVE_SITE")   # name the files settings come from
# The value Kubernetes gives <SERVICE>_PORT for a Service's link: a Service named hmsproxy sets HMSPROXY_PORT.
SERVICE_LINK = re.compile(r"(tcp|udp|sctp)://\S+:\d+")


def _environment_settings(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The HMSPROXY_* variables that give a setting, by its name, and the names of the others. The environment
    holds variables nobody meant for this server (a Kubernetes Service's links, a compose file's own variables
    left in a shell), so those are not settings; a port setting whose value is a Service link is one of them."""
    known = {f.name for f in fields(Settings)}
    given: dict[str, str] = {}
    others: list[str] = []
    for variable, value in environ.items():
        if not variable.startswith(ENV_PREFIX) or variable in FILE_VARIABLES:
            continue
        name = variable[len(ENV_PREFIX):].lower()
        if name in known and not (name.endswith("port") and SERVICE_LINK.fullmatch(value)):
            given[name] = value
        else:
            others.append(variable)
    return given, sorted(others)


def from_environment(environ: Mapping[str, str]) -> dict[str, Setting]:
    """The settings the environment gives; a bad value of one is refused, variables that give none are left out
    (`ignored_environment`)."""
    return _normalise_keys(_environment_settings(environ)[0], "environment")


def ignored_environment(environ: Mapping[str, str]) -> list[str]:
    """The HMSPROXY_* variables that give no setting, for the warning that names them."""
    return _environment_settings(environ)[1]


def resolve(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
    """Merges the sources; `flags` holds only the options given on the command line (None = not given)."""
    environ = os.environ if environ is None else environ
    config_path = flags.get("config") or environ.get("HMSPROXY_CONFIG")
    hive_site_path = flags.get("hive_site") or environ.get("HMSPROXY_HIVE_SITE")
    merged: dict[str, Any] = {}   # Any: each setting goes to its own field of Settings (replace below)
    if hive_site_path:
        merged.update(_normalise_keys(hive_site.settings_from(hive_site_path, hive_key_names()), str(hive_site_path)))
    if config_path:
        merged.update(load_file(config_path))
    merged.update(from_environment(environ))
    given = {k: v for k, v in flags.items() if v is not None and k not in ("config", "hive_site")}
    merged.update(_normalise_keys(given, "command line"))
    merged.setdefault("tls", bool(merged.get("tls_cert")))
    settings = dataclasses.replace(Settings(), **merged)
    if settings.tls and not settings.tls_cert:
        raise ValueError("TLS is on (tls, or hive.metastore.use.SSL) but no certificate is given: --tls-cert (PEM)")
    if settings.log_format not in LOG_FORMATS:
        raise ValueError(f"setting 'log_format': expected one of {', '.join(LOG_FORMATS)}, got {settings.log_format!r}")
    if settings.db_password_file:
        settings = dataclasses.replace(settings, db=_with_password(settings.db, settings.db_password_file))
    if settings.upstream and settings.iceberg_rest_port:
        raise ValueError("--iceberg-rest-port serves tables of this server's own database, not of an --upstream HMS")
    if settings.upstream and not settings.cache:
        raise ValueError("--upstream serves through the cache: it cannot be combined with --no-cache")
    return settings
