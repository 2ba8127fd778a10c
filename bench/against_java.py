"""hmsproxy (with the cache and --no-cache) against the real Java Hive Metastore 2.3.10, side by side on MariaDB.

    python bench/against_java.py [--quick] [--skip-populate] [--skip-java] [--db-latency-ms 1] [--out bench/results]
                                 [--java-write-budget-s 300] [--burn-core]

Measures the ten rows of the comparison in one run, every database round trip of every server delayed by
--db-latency-ms (a database in another rack):

 1. get_table p50: Java, cache, --no-cache, and the limit server (below): what the client and loopback take with
    no server work, the ceiling of Java's time over the cache's with this client on this machine. Beside it, the
    same on the wire: the request's bytes sent and the reply's bytes received (checked against the first reply),
    not decoded, which is what the server and loopback take without the thriftpy2 client's decoding of the Table
    (50-60 us of its own CPU). On these VMs that figure is bimodal, 25-35 us or ~100 us for the limit server and
    hmsproxy alike, run by run: it follows where the scheduler places the two processes, not the server.
 2. get_table from 8 client processes: calls/s and server CPU per call, cache against limit_bench's limit server
    (hmsproxy's own reply bytes, replayed), and Java.
 3. get_partitions of the 10k-partition table received raw (server and transfer): cache against the limit server's
    copy of the same bytes; --no-cache and Java too.
 4. get_partitions_by_filter selecting 49 of the 10k partitions (filter_bench's first filter): client p50 and
    server CPU per call.
 5. hmsproxy's get_partitions_batch over the whole 10k table in batches of 1,000: cache and --no-cache.
 6. prewarm of 100k partitions over 1,000 tables: process start to /readyz 200, at +latency and with none.
 7. add_partitions in batches of 100 into a table growing to 20k partitions (Java within a time budget).
 8. alter_partition in a 20k-partition table against a 100-partition one (write_bench's tables).
 9. --no-cache against Java on the same listings (rows 3 and 4).
10. memory per cached partition: server RSS at ready and after every table was listed once, and the cache's own
    estimate (hmsproxy_cache_bytes).

Data: hmsproxy populates a MariaDB database once, through a --no-cache server with no delay; the Java HMS serves
that same database. Hive 2.3.10 reads and writes hmsproxy's Hive 4.0.0 schema with schema verification and
DataNucleus's schema creation off, as tests/multi/test_java_side_by_side.py runs it. The write rows use a second
database that is made again on every run (the run changes it), its partitions under file: locations because the
Java HMS creates and lists partition directories (it has no S3 file system).

The delay: every server reaches MariaDB through one relay (upstream_bench's DelayedRelay, a process of its own that
holds each chunk for half the delay in each direction). A --no-cache server with hmsproxy's built-in delay
(--db-latency-ms, a sleep per statement and commit) instead of the relay is measured beside ("built-in"), and the
relay's own cost is printed (SELECT 1 through it and direct).

The servers of the read rows run at once but are measured one at a time, in rounds whose order rotates; prewarms
(also in rotating rounds) and writes are measured with no other server running. Prints a table, writes
against_java.{txt,json,png} to --out.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tests") not in sys.path:  # support.* (the Java HMS's start)
    sys.path.insert(0, str(HERE.parent / "tests"))

import write_bench  # noqa: E402
from burn import BurnedCore  # noqa: E402
from cache_bench import (  # noqa: E402
    Server,
    _sd,
    client,
    empty_metastore,
    free_ports,
    hms,
    partition_values,
    percentile,
    timed,
)
from filter_bench import FILTERS, KEYS  # noqa: E402
from limit_bench import LimitServer, raw_listing_seconds, recorded_reply, request_bytes, throughput  # noqa: E402
from lock_bench import (  # noqa: E402
    JAVA_PASS,
    JAVA_USER,
    _guarded,
    cpu_seconds,
    drop_databases,
    java_user,
    source_version,
)
from upstream_bench import MARIADB, DelayedRelay, select_1_ms  # noqa: E402

from support.java_hms import JdbcDatabase  # noqa: E402
from support.reference_hms import start_reference_hms  # noqa: E402
from support.running import RunningServer  # noqa: E402

WRITE_DB = "hmsbench_against_java_writes"  # lock_bench's Java user may use the databases named hmsbench*
ENDS = 10                                  # row 7: batches at each end of the growing table compared
LISTED = "parts"                           # the 10k-partition table of rows 3, 4, 5 and 9
PROBE = "small_0001"                       # the get_table of rows 1 and 2 (limit_bench's throughput calls it)
FILTER = FILTERS[0]                        # 'ds = "2024-01-05" and hr > 50': 49 of 10k
# How the Java HMS serves hmsproxy's schema (tests/multi/test_java_side_by_side.py): as it is, unverified.
JAVA_PROPERTIES = {"datanucleus.schema.autoCreateAll": "false", "hive.metastore.schema.verification": "false"}
LABELS = {"java": "Java HMS 2.3.10", "cache": "hmsproxy cache", "nocache": "hmsproxy --no-cache",
          "builtin": "--no-cache, built-in delay", "limit": "limit server"}
T = TypeVar("T")
# Calls (or listings) per server per round: about the same time for each server.
CALLS = {"get_table": {"java": 100, "cache": 2000, "limit": 2000, "nocache": 200, "builtin": 200},
         "listing": {"java": 3, "cache": 10, "limit": 10, "nocache": 3, "builtin": 3},
         "filter": {"java": 10, "cache": 200, "nocache": 20, "builtin": 20},
         "batches": {"cache": 3, "nocache": 3},
         "alter": {"java": 30, "cache": 100}}


@dataclass(frozen=True)
class Plan:
    """Sizes and repeats: the issue's by default, smaller with --quick."""
    partitions: int = 100_000  # prewarmed, over `tables` tables (the listed table one of them)
    tables: int = 1000
    listed: int = 10_000
    big: int = 20_000          # write rows: alter in `big` against `small`, add_partitions up to `big`
    small: int = 100
    add_batch: int = 100
    list_batch: int = 1000     # row 5's batch size
    rounds: int = 5
    prewarm_rounds: int = 3
    seconds: float = 5.0       # of each 8-client get_table run
    scale: float = 1.0         # of CALLS
    prefix: str = "hmsbench_against_java"   # of the read database's name (hmsbench*: the Java user may use it)

    def calls(self, what: str, target: str) -> int:
        return max(2, round(CALLS[what][target] * self.scale))

    @property
    def read_db(self) -> str:
        """Named by its size, so that --skip-populate reuses the right one."""
        return f"{self.prefix}_{self.partitions // 1000}k_{self.tables}t"


QUICK = Plan(partitions=20_000, tables=100, big=2_000, rounds=2, prewarm_rounds=1, seconds=2.0, scale=0.25)


# ------------------------------------------------------------------------------------------------- servers


class Proxy(Server):
    """cache_bench's server process on any MariaDB port (the relay's) with any flags, its output in a log file."""

    def __init__(self, workdir: Path, db_port: int, database: str, *flags: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port, self.metrics_port = free_ports(2)
        args = [sys.executable, "-m", "hmsproxy.cli", "serve", "--port", str(self.port), "--metrics-port",
                str(self.metrics_port), "--db", f"mysql+pymysql://root@127.0.0.1:{db_port}/{database}",
                "--warehouse", str(workdir / "warehouse"), "--log-level", "WARNING", "--cache-max-bytes", "4gb",
                *flags]
        self.started = time.monotonic()
        self.process = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        assert self.process.stdout is not None
        log = open(workdir / "hmsproxy.log", "w")  # noqa: SIM115 - the copying thread closes it at the end
        for line in self.process.stdout:
            log.write(line)
            if "listening on" in line:
                break
        if self.process.poll() is not None:
            log.close()
            raise RuntimeError(f"hmsproxy did not start: see {workdir / 'hmsproxy.log'}")
        self.rss_at_listen = self.rss_bytes()
        threading.Thread(target=_copy_and_close, args=(self.process.stdout, log), daemon=True).start()

    def ready_s(self) -> float:
        """Seconds from the process's start to /readyz answering 200 (the cache's prewarm done)."""
        self.wait_ready()
        return time.monotonic() - self.started

    def target(self, name: str) -> Target:
        return Target(name, self.port, self.process.pid)


def _copy_and_close(source: Any, log: Any) -> None:
    with log:
        shutil.copyfileobj(source, log)


@dataclass
class Target:
    """A server under measurement, whatever it is: where it listens and which process does its work."""
    name: str
    port: int
    pid: int

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)


def start_java(workdir: Path, relay_port: int, database: str) -> tuple[RunningServer, Target]:
    """The Java HMS on an hmsproxy-made database through the relay (lock_bench's start_java runs it on a database of
    its own with Hive's transaction tables, which would need DataNucleus to create them)."""
    if not Path("/usr/share/java/mariadb-java-client.jar").is_file():
        raise RuntimeError("the Java HMS on MariaDB needs Debian's libmariadb-java (apt-get install libmariadb-java)")
    java_user()
    jdbc = JdbcDatabase(host="127.0.0.1", port=relay_port, name=database, user=JAVA_USER, password=JAVA_PASS)
    server = start_reference_hms(workdir, attempts=1, timeout=600, database=jdbc, properties=JAVA_PROPERTIES)
    assert server.pid is not None
    return server, Target("java", server.port, server.pid)


# ---------------------------------------------------------------------------------------------------- data


def _partition(table: str, i: int) -> Any:
    return hms.Partition(values=partition_values(i), dbName="bench", tableName=table,
                         parameters={"numFiles": "1", "totalSize": str(1000 + i)}, sd=_sd(f"s3a://bench/{table}/p{i}"))


def populate_reads(workdir: Path, plan: Plan) -> None:
    """The listed table (`plan.listed` partitions, cache_bench's columns and values) and `plan.tables - 1` more that
    share the rest of `plan.partitions`, through a --no-cache server with no delay."""
    workdir.mkdir(parents=True, exist_ok=True)
    server, c = empty_metastore(workdir, plan.read_db)
    keys = [hms.FieldSchema(name=k, type=t) for k, t in KEYS]
    others, rest = plan.tables - 1, plan.partitions - plan.listed
    sizes = {LISTED: plan.listed, **{f"small_{i:04d}": rest // others + (i < rest % others) for i in range(others)}}
    for name, size in sizes.items():
        c.create_table(hms.Table(tableName=name, dbName="bench", sd=_sd(None), partitionKeys=keys, parameters={},
                                 tableType="EXTERNAL_TABLE"))
        for start in range(0, size, 5000):
            parts = [_partition(name, i) for i in range(start, min(size, start + 5000))]
            c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName=name, parts=parts, ifNotExists=False,
                                                          needResult=False))
    c.close()
    server.stop()


def write_partitions(root: Path, table: str, start: int, end: int) -> list[Any]:
    """write_bench's partitions under file: locations: the Java HMS creates and lists their directories."""
    parts = write_bench._partitions(table, start, end)
    for i, part in zip(range(start, end), parts):
        part.sd.location = f"file:{root}/{table}/p{i}"
    return parts


def populate_writes(workdir: Path, root: Path, plan: Plan) -> None:
    """write_bench's `small` and `big` tables in a fresh database."""
    shutil.rmtree(root, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    server, c = empty_metastore(workdir, WRITE_DB)
    for name, size in (("small", plan.small), ("big", plan.big)):
        write_bench._create_table(c, name)
        for start in range(0, size, 5000):
            c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName=name, parts=write_partitions(
                root, name, start, min(size, start + 5000)), ifNotExists=False, needResult=False))
    c.close()
    server.stop()


# -------------------------------------------------------------------------------------------- measurements


def alternate(targets: dict[str, T], rounds: int, measure: Callable[[T], Any]) -> dict[str, Any]:
    """`measure` on each target, one at a time, `rounds` times, who goes first rotating from round to round: the
    machine's slow moments fall on all. A target whose measurement fails is reported so and not tried again."""
    names, runs, failed = list(targets), {name: [] for name in targets}, {}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if name not in failed:
                try:
                    runs[name].append(measure(targets[name]))
                except Exception as exc:
                    failed[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                    print(f"  {name} failed: {failed[name]}", flush=True)
    return {name: {"failed": failed[name]} if name in failed else runs[name] for name in names}


def summarise(runs: dict[str, Any], summary: Callable[[list[Any]], dict[str, Any]]) -> dict[str, Any]:
    return {name: r if isinstance(r, dict) else summary(r) for name, r in runs.items()}


def _latencies(runs: list[list[float]]) -> dict[str, Any]:
    samples = [s for run in runs for s in run]
    return {"p50_ms": percentile(samples, 0.5) * 1e3, "p99_ms": percentile(samples, 0.99) * 1e3, "n": len(samples)}


def get_table_samples(target: Target, count: int) -> list[float]:
    c = client(target.port)
    c.get_table("bench", PROBE)
    samples = timed(lambda: c.get_table("bench", PROBE), count)
    c.close()
    return samples


def wire_get_table_samples(target: Target, count: int) -> list[float]:
    """get_table timed from the request's bytes sent to the reply's bytes received, not decoded: the server and
    loopback, without the thriftpy2 client's decoding of the Table (50-60 us of its CPU per call here)."""
    arguments = {"dbname": "bench", "tbl_name": PROBE}
    reply = recorded_reply(target.port, "get_table", **arguments)
    samples = raw_listing_seconds(target.port, request_bytes("get_table", **arguments), len(reply), count)
    assert recorded_reply(target.port, "get_table", **arguments) == reply, f"{target.name}: get_table's reply changed"
    return samples


def filter_calls(target: Target, count: int) -> dict[str, Any]:
    c = client(target.port)
    matched = len(c.get_partitions_by_filter("bench", LISTED, FILTER, -1))
    cpu_before = target.cpu_seconds()
    samples = timed(lambda: c.get_partitions_by_filter("bench", LISTED, FILTER, -1), count)
    cpu = target.cpu_seconds() - cpu_before
    c.close()
    return {"samples": samples, "cpu_s": cpu, "matched": matched}


def batch_listings(target: Target, count: int, batch: int) -> dict[str, list[float]]:
    """Seconds to fetch the whole listed table with get_partitions_batch, as hmsproxy.client.iter_partitions does
    over one connection (with cache_bench's client, whose decoding the other rows share), and with one
    get_partitions decoded by the same client, to compare."""
    c = client(target.port)
    samples: dict[str, list[float]] = {"batches": [], "whole": []}
    for _ in range(count):
        started, start = time.perf_counter(), 0
        while start >= 0:
            start = c.get_partitions_batch(hms.PartitionBatchRequest(
                dbName="bench", tblName=LISTED, fromPartitionId=start, toPartitionId=-1,
                batchSize=batch)).nextPartitionId
        samples["batches"].append(time.perf_counter() - started)
        samples["whole"] += timed(lambda: c.get_partitions("bench", LISTED, -1), 1)
    c.close()
    return samples


def warm_up(target: Target) -> None:
    """Each read once or a few times: Java's JIT, every server's connections and lazy state."""
    c = client(target.port)
    for _ in range(50):
        c.get_table("bench", PROBE)
    for _ in range(2):
        c.get_partitions("bench", LISTED, -1)
    for _ in range(10):
        c.get_partitions_by_filter("bench", LISTED, FILTER, -1)
    c.close()


def measure_reads(targets: dict[str, Target], plan: Plan) -> dict[str, Any]:
    """Rows 1 to 5."""
    def pick(*names: str) -> dict[str, Target]:
        return {name: targets[name] for name in names if name in targets}

    results: dict[str, Any] = {}
    print("row 1: get_table p50 ...", flush=True)
    results["get_table"] = summarise(alternate(pick("java", "cache", "limit", "nocache", "builtin"), plan.rounds,
                                               lambda t: get_table_samples(t, plan.calls("get_table", t.name))),
                                     _latencies)
    results["get_table_wire"] = summarise(alternate(pick("java", "cache", "limit"), plan.rounds, lambda t: (
        wire_get_table_samples(t, plan.calls("get_table", t.name)))), _latencies)
    print("row 2: get_table from 8 client processes ...", flush=True)
    results["throughput"] = summarise(alternate(pick("java", "cache", "limit"), plan.rounds, lambda t: (
        throughput(t, 8, plan.seconds))), lambda runs: {k: statistics.median(r[k] for r in runs) for k in runs[0]})
    print("row 3: get_partitions received raw ...", flush=True)
    listing = pick("java", "cache", "limit", "nocache", "builtin")
    request = request_bytes("get_partitions", db_name="bench", tbl_name=LISTED, max_parts=-1)
    sizes = {name: len(recorded_reply(t.port, "get_partitions", db_name="bench", tbl_name=LISTED, max_parts=-1))
             for name, t in listing.items()}
    runs = alternate(listing, plan.rounds, lambda t: raw_listing_seconds(t.port, request, sizes[t.name], plan.calls(
        "listing", t.name)))
    results["listing"] = {name: r if isinstance(r, dict) else {
        "median_ms": statistics.median(s for run in r for s in run) * 1e3, "bytes": sizes[name],
        "n": sum(map(len, r))} for name, r in runs.items()}
    print("row 4: get_partitions_by_filter ...", flush=True)
    results["filter"] = summarise(alternate(pick("java", "cache", "nocache", "builtin"), plan.rounds, lambda t: (
        filter_calls(t, plan.calls("filter", t.name)))), lambda runs: {
            **_latencies([r["samples"] for r in runs]), "matched": runs[0]["matched"],
            "cpu_ms": sum(r["cpu_s"] for r in runs) / sum(len(r["samples"]) for r in runs) * 1e3})
    print("row 5: get_partitions_batch ...", flush=True)
    results["batches"] = summarise(alternate(pick("cache", "nocache"), plan.rounds, lambda t: batch_listings(
        t, plan.calls("batches", t.name), plan.list_batch)), lambda runs: {
            **{f"{key}_ms": statistics.median(s for run in runs for s in run[key]) * 1e3 for key in runs[0]},
            "n": sum(len(run["batches"]) for run in runs)})
    return results


def add_growing(target: Target, table: str, plan: Plan, root: Path, budget_s: float) -> dict[str, Any]:
    """add_partitions in batches of `plan.add_batch` into a new table, until it holds `plan.big` or `budget_s` ran
    out: partitions per second of the first and last batch and overall, and each batch's (size after, rate)."""
    c = client(target.port)
    write_bench._create_table(c, table)
    batches: list[tuple[int, float]] = []
    started = time.perf_counter()
    for start in range(0, plan.big, plan.add_batch):
        if time.perf_counter() - started > budget_s:
            break
        parts = write_partitions(root, table, start, min(plan.big, start + plan.add_batch))
        began = time.perf_counter()
        c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName=table, parts=parts, ifNotExists=False,
                                                      needResult=False))
        batches.append((start + len(parts), len(parts) / (time.perf_counter() - began)))
    elapsed = time.perf_counter() - started
    c.close()
    return {"reached": batches[-1][0], "seconds": elapsed, "first_per_s": batches[0][1],
            "last_per_s": batches[-1][1], "overall_per_s": batches[-1][0] / elapsed, "batches": batches}


def java_writes(workdir: Path, relay_port: int, plan: Plan, root: Path, budget_s: float) -> dict[str, Any]:
    java, target = start_java(workdir, relay_port, WRITE_DB)
    with java:
        return {"alter_partition": _guarded("Java alter_partition", lambda: write_bench.alter_partitions(
                    target, plan.calls("alter", "java"))),
                "add_partitions": _guarded("Java add_partitions", lambda: add_growing(
                    target, "growing_java", plan, root, budget_s))}


def write_root(workdir: Path) -> Path:
    """Where the write rows' partition directories go: tmpfs when the machine has one. On these VMs' ext4 a mkdir
    slowed from ~40 us to 100-400 us of kernel time within a session of runs that made and removed tens of thousands
    of directories, which moved row 7 more than the metastore did; both servers make the same directories."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / f"hmsbench-write-data-{os.getpid()}"
    return workdir / "write-data"


def measure_writes(workdir: Path, relay_port: int, plan: Plan, java_budget_s: float,
                   skip_java: bool) -> dict[str, Any]:
    """Rows 7 and 8, on a fresh write database: the cache server alone, then the Java HMS alone."""
    root = write_root(workdir)
    print("rows 7 and 8: populating the write tables ...", flush=True)
    populate_writes(workdir / "populate-writes", root, plan)
    results: dict[str, Any] = {"alter_partition": {}, "add_partitions": {}, "write_root": str(root)}
    try:
        server = Proxy(workdir / "cache-writes", relay_port, WRITE_DB)
        try:
            server.wait_ready()
            target = server.target("cache")
            print("  alter_partition and add_partitions, hmsproxy cache ...", flush=True)
            results["alter_partition"]["cache"] = write_bench.alter_partitions(target, plan.calls("alter", "cache"))
            results["add_partitions"]["cache"] = add_growing(target, "growing_cache", plan, root, float("inf"))
        finally:
            server.stop()
        if not skip_java:
            print(f"  alter_partition and add_partitions, Java HMS ({java_budget_s:.0f} s budget) ...", flush=True)
            java = _guarded("the Java HMS's writes", lambda: java_writes(workdir / "java-writes", relay_port, plan,
                                                                        root, java_budget_s))
            for row in ("alter_partition", "add_partitions"):
                results[row]["java"] = java if "failed" in java else java[row]
    finally:
        drop_databases([WRITE_DB])
        shutil.rmtree(root, ignore_errors=True)
    return results


def prewarm_figures(server: Proxy) -> dict[str, float]:
    """Seconds from a cache server's start to /readyz 200, what it loaded, its RSS and the cache's estimate."""
    seconds = server.ready_s()
    return {"seconds": seconds, "partitions": server.metric("hmsproxy_prewarm_partitions_loaded"),
            "tables": server.metric('hmsproxy_prewarm_tables{state="done"}'),
            "cache_bytes": server.metric("hmsproxy_cache_bytes"), "rss_at_listen": server.rss_at_listen,
            "rss_ready": server.rss_bytes()}


def listed_everything(server: Proxy) -> dict[str, float]:
    """The cache server's RSS after one get_partitions of every table: what the tables read lately keep expanded
    (within --cache-hot-bytes) comes on top of the packed rest."""
    c = client(server.port)
    for name in c.get_all_tables("bench"):
        c.get_partitions("bench", name, -1)
    c.close()
    return {"rss": server.rss_bytes(), "hot_bytes": server.metric("hmsproxy_cache_hot_bytes")}


def prewarm_alone(workdir: Path, db_port: int, database: str, *flags: str) -> float:
    server = Proxy(workdir, db_port, database, *flags)
    try:
        return server.ready_s()
    finally:
        server.stop()


def measure_read_servers(args: argparse.Namespace, plan: Plan, workdir: Path, relay_port: int,
                         results: dict[str, Any]) -> None:
    """Rows 1 to 6 and 10: the prewarms, each server alone, then the read rows with every read server up."""
    print("row 6: prewarms, each server alone ...", flush=True)
    latency = str(args.db_latency_ms)
    modes = {"none": (MARIADB[1],), "builtin": (MARIADB[1], "--db-latency-ms", latency), "relay": (relay_port,)}
    results["prewarm_s"] = alternate({name: (name, *mode) for name, mode in modes.items()}, plan.prewarm_rounds,
                                     lambda mode: prewarm_alone(workdir / f"prewarm-{mode[0]}", mode[1], plan.read_db,
                                                                *mode[2:]))
    with contextlib.ExitStack() as stack:
        cache = Proxy(workdir / "cache", relay_port, plan.read_db)
        stack.callback(cache.stop)
        results["cache_ready"] = prewarm_figures(cache)
        results["cache_listed_all"] = listed_everything(cache)
        if isinstance(results["prewarm_s"]["relay"], list):  # its prewarm is one more sample
            results["prewarm_s"]["relay"].append(results["cache_ready"]["seconds"])
        if results["cache_ready"]["partitions"] != plan.partitions:
            raise SystemExit(f"{plan.read_db} holds {results['cache_ready']['partitions']:.0f} partitions, not "
                             f"{plan.partitions}: run without --skip-populate")
        nocache = Proxy(workdir / "nocache", relay_port, plan.read_db, "--no-cache")
        stack.callback(nocache.stop)
        builtin = Proxy(workdir / "builtin", MARIADB[1], plan.read_db, "--no-cache", "--db-latency-ms", latency)
        stack.callback(builtin.stop)
        results["rss_nocache_at_listen"] = nocache.rss_at_listen
        limit = LimitServer({
            "get_table": recorded_reply(cache.port, "get_table", dbname="bench", tbl_name=PROBE),
            "get_partitions": recorded_reply(cache.port, "get_partitions", db_name="bench", tbl_name=LISTED,
                                             max_parts=-1)})
        stack.callback(limit.stop)
        targets = {"cache": cache.target("cache"), "limit": Target("limit", limit.port, limit.process.pid),
                   "nocache": nocache.target("nocache"), "builtin": builtin.target("builtin")}
        if not args.skip_java:
            print("starting the Java HMS on the same database ...", flush=True)
            started = time.monotonic()
            try:
                java, targets["java"] = start_java(workdir / "java-reads", relay_port, plan.read_db)
                stack.enter_context(java)
                results["java_start_s"] = time.monotonic() - started
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                results["java_failed"] = f"{type(exc).__name__}: {exc}"[:2000]
                print(f"  the Java HMS did not start: {results['java_failed']}", flush=True)
        for name, target in targets.items():
            if name != "limit":  # it answers only the two calls it recorded
                warm_up(target)
        results.update(measure_reads(targets, plan))
        results["cache_passing_through"] = cache.metric("hmsproxy_cache_passing_through")


def run(args: argparse.Namespace, plan: Plan, workdir: Path) -> dict[str, Any]:
    """Everything, in order; every server and the relay stopped whatever happens."""
    results: dict[str, Any] = {"plan": asdict(plan), "db_latency_ms": args.db_latency_ms, "read_db": plan.read_db,
                               "filter": FILTER, "machine": f"{os.cpu_count()} cores"}
    java_user()  # select_1_ms logs in as it too
    with DelayedRelay(MARIADB, args.db_latency_ms) as relay:
        results["select_1_ms"] = {"direct": select_1_ms(MARIADB[1]), "relay": select_1_ms(relay.port)}
        if not args.skip_populate:
            print(f"populating {plan.read_db}: {plan.partitions} partitions over {plan.tables} tables ...", flush=True)
            started = time.monotonic()
            populate_reads(workdir / "populate-reads", plan)
            results["populate_s"] = time.monotonic() - started
        measure_read_servers(args, plan, workdir, relay.port, results)
        results.update(measure_writes(workdir, relay.port, plan, args.java_write_budget_s, args.skip_java))
    return results


# -------------------------------------------------------------------------------------------------- report


@dataclass
class Line:
    """One line of the table: a value per server, and what else the row compares."""
    row: str
    what: str
    java: Any = None
    cache: Any = None
    nocache: Any = None
    other: str = ""
    ratio: str = ""
    goal: str = ""
    plot: dict[str, float] | None = None  # the bars of this line's panel in the PNG


def num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else \
        f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def _get(results: dict[str, Any], row: str, server: str, key: str) -> Any:
    """A server's value in a row: None when it was not run, "failed" when its measurement failed."""
    cell = results.get(row, {}).get(server)
    if cell is None:
        return None
    return "failed" if "failed" in cell else cell[key]


def _ratio(a: Any, b: Any) -> float | None:
    return a / b if isinstance(a, float | int) and isinstance(b, float | int) and b else None


def _goal(value: float | None, goal: str) -> str:
    """`goal` such as ">= 400" checked against `value`."""
    if value is None:
        return f"{goal}: —"
    op, bound = goal.split()
    met = value >= float(bound) if op == ">=" else value <= float(bound)
    return f"{goal}: {'met' if met else 'NOT met'}"


def _last_to_first(add: Any) -> float | None:
    """How fast the last ENDS batches of a growing table went, against its first ENDS (medians of their rates): "the
    last batch as fast as the first", with one batch's noise (a tenth, either way) left out."""
    if not isinstance(add, dict) or "batches" not in add or len(add["batches"]) < 2 * ENDS:
        return None
    rates = [rate for _, rate in add["batches"]]
    return statistics.median(rates[-ENDS:]) / statistics.median(rates[:ENDS])


def _bars(**values: Any) -> dict[str, float]:
    return {LABELS[k]: v for k, v in values.items() if isinstance(v, float | int)}


def table_lines(results: dict[str, Any]) -> list[Line]:
    plan, ms = results["plan"], results["db_latency_ms"]
    g = {s: _get(results, "get_table", s, "p50_ms") for s in ("java", "cache", "limit", "nocache", "builtin")}
    w = {s: _get(results, "get_table_wire", s, "p50_ms") for s in ("java", "cache", "limit")}
    tp = {s: (_get(results, "throughput", s, "calls_per_s"), _get(results, "throughput", s, "cpu_us_per_call"))
          for s in ("java", "cache", "limit")}
    ls = {s: _get(results, "listing", s, "median_ms") for s in ("java", "cache", "limit", "nocache", "builtin")}
    fl = {s: (_get(results, "filter", s, "p50_ms"), _get(results, "filter", s, "cpu_ms"))
          for s in ("java", "cache", "nocache", "builtin")}
    matched = next((results["filter"][s]["matched"] for s in ("cache", "java") if isinstance(fl[s][0], float)), "?")
    bt = {s: _get(results, "batches", s, "batches_ms") for s in ("cache", "nocache")}
    whole = {s: _get(results, "batches", s, "whole_ms") for s in ("cache", "nocache")}
    pw = {mode: "failed" if isinstance(r, dict) else statistics.median(r) for mode, r in results["prewarm_s"].items()}
    listed_k = f"{plan['listed'] // 1000}k"
    lines = [
        Line("1", f"get_table p50 (ms), +{ms:g} ms, Python client", g["java"], g["cache"], g["nocache"],
             f"limit: {num(g['limit'])}; built-in: {num(g['builtin'])}",
             f"Java/cache {num(_ratio(g['java'], g['cache']))}x", _goal(_ratio(g["java"], g["cache"]), ">= 400"),
             _bars(java=g["java"], cache=g["cache"], limit=g["limit"], nocache=g["nocache"], builtin=g["builtin"])),
        Line("", "  the same, bytes on the wire (not decoded)", w["java"], w["cache"], None,
             f"limit: {num(w['limit'])}",
             f"Java/cache {num(_ratio(w['java'], w['cache']))}x", "",
             _bars(java=w["java"], cache=w["cache"], limit=w["limit"])),
        Line("", "  against the limit server: Python client; wire", None, None, None,
             f"cache/limit {num(_ratio(g['cache'], g['limit']))}x; {num(_ratio(w['cache'], w['limit']))}x",
             f"Java/limit {num(_ratio(g['java'], g['limit']))}x; {num(_ratio(w['java'], w['limit']))}x"),
        Line("2", "get_table, 8 clients (calls/s)", tp["java"][0], tp["cache"][0], None,
             f"limit: {num(tp['limit'][0])}", f"cache/limit {num(_ratio(tp['cache'][0], tp['limit'][0]))}x",
             _goal(_ratio(tp["cache"][0], tp["limit"][0]), ">= 0.8"),
             _bars(java=tp["java"][0], cache=tp["cache"][0], limit=tp["limit"][0])),
        Line("", "  server CPU per call (µs)", tp["java"][1], tp["cache"][1], None, f"limit: {num(tp['limit'][1])}",
             "", _goal(tp["cache"][1] if isinstance(tp["cache"][1], float) else None, "<= 30"),
             _bars(java=tp["java"][1], cache=tp["cache"][1], limit=tp["limit"][1])),
        Line("3", f"get_partitions {listed_k}, received raw (ms)", ls["java"], ls["cache"], ls["nocache"],
             f"limit: {num(ls['limit'])}; built-in: {num(ls['builtin'])}",
             f"cache/limit {num(_ratio(ls['cache'], ls['limit']))}x", _goal(_ratio(ls["cache"], ls["limit"]), "<= 1.5"),
             _bars(**ls)),
        Line("4", f"by_filter {matched} of {listed_k}, p50 (ms)", fl["java"][0], fl["cache"][0], fl["nocache"][0],
             f"built-in: {num(fl['builtin'][0])}", f"Java/cache {num(_ratio(fl['java'][0], fl['cache'][0]))}x", "",
             _bars(**{s: v[0] for s, v in fl.items()})),
        Line("", "  server CPU per call (ms)", fl["java"][1], fl["cache"][1], fl["nocache"][1],
             f"built-in: {num(fl['builtin'][1])}", "", "", _bars(**{s: v[1] for s, v in fl.items()})),
        Line("5", f"get_partitions_batch {listed_k}, by {plan['list_batch']} (ms)", None, bt["cache"], bt["nocache"],
             f"one get_partitions: {num(whole['cache'])} / {num(whole['nocache'])}",
             f"no-cache/cache {num(_ratio(bt['nocache'], bt['cache']))}x", "", _bars(**bt)),
        Line("6", f"prewarm {plan['partitions'] // 1000}k / {plan['tables']} tables (s), +{ms:g} ms", None,
             pw["relay"], None, f"built-in: {num(pw['builtin'])}; none: {num(pw['none'])}", "", "",
             {name: pw[mode] for mode, name in (("relay", "relay"), ("builtin", "built-in"), ("none", "no delay"))
              if isinstance(pw[mode], float)}),
    ]
    add, alter = results["add_partitions"], results["alter_partition"]
    a = {s: add.get(s) for s in ("java", "cache")}

    def add_value(s: str, key: str) -> Any:
        return None if a[s] is None else "failed" if "failed" in a[s] else a[s][key]
    java_reached = add_value("java", "reached")
    cache_there = next((rate for size, rate in a["cache"]["batches"] if size == java_reached), None) \
        if isinstance(java_reached, int) else None
    for key, label in (("first_per_s", "first batch"), ("last_per_s", "last batch"), ("overall_per_s", "overall")):
        other = ""
        if key == "last_per_s" and isinstance(java_reached, int):
            other = f"cache at {java_reached:,}: {num(cache_there)}"
        elif key == "overall_per_s" and isinstance(java_reached, int):
            other = f"Java reached {java_reached:,} in {add['java']['seconds']:.0f} s"
        overall = add_value("cache", key) if key == "overall_per_s" else None
        lines.append(Line("7" if key == "first_per_s" else "",
                          f"add_partitions by {plan['add_batch']} to {plan['big'] // 1000}k, {label} (/s)",
                          add_value("java", key), add_value("cache", key), None, other,
                          f"cache/Java {num(_ratio(add_value('cache', key), add_value('java', key)))}x",
                          _goal(overall if isinstance(overall, float) else None, ">= 5000")
                          if key == "overall_per_s" else "",
                          _bars(java=add_value("java", key), cache=add_value("cache", key))))
    ends = {s: _last_to_first(a[s]) for s in ("java", "cache")}
    lines.append(Line("", f"  last {ENDS} / first {ENDS} batches, median rates", ends["java"], ends["cache"], None,
                      "", "", _goal(ends["cache"], ">= 0.9")))

    def alter_p50(s: str, table: str) -> Any:
        cell = alter.get(s)
        return None if cell is None else "failed" if "failed" in cell else cell[table]["p50_ms"]
    small = {s: alter_p50(s, "small") for s in ("java", "cache")}
    big = {s: alter_p50(s, "big") for s in ("java", "cache")}
    lines += [
        Line("8", f"alter_partition p50, {plan['small']}-partition table (ms)", small["java"], small["cache"], None,
             plot=_bars(java=small["java"], cache=small["cache"])),
        Line("", f"alter_partition p50, {plan['big'] // 1000}k-partition table (ms)", big["java"], big["cache"], None,
             f"Java big/small {num(_ratio(big['java'], small['java']))}x",
             f"cache big/small {num(_ratio(big['cache'], small['cache']))}x",
             _goal(_ratio(big["cache"], small["cache"]), "<= 2"), _bars(java=big["java"], cache=big["cache"])),
        Line("9", f"--no-cache vs Java: get_partitions {listed_k} raw (ms)", ls["java"], None, ls["nocache"], "",
             f"Java/no-cache {num(_ratio(ls['java'], ls['nocache']))}x",
             _goal(_ratio(ls["java"], ls["nocache"]), ">= 1")),
        Line("", f"--no-cache vs Java: by_filter {matched} of {listed_k} p50 (ms)", fl["java"][0], None,
             fl["nocache"][0], "", f"Java/no-cache {num(_ratio(fl['java'][0], fl['nocache'][0]))}x",
             _goal(_ratio(fl["java"][0], fl["nocache"][0]), ">= 1")),
    ]
    relay = results["cache_ready"]
    per_partition = (relay["rss_ready"] - results["rss_nocache_at_listen"]) / relay["partitions"]
    listed_per_partition = (results["cache_listed_all"]["rss"] - results["rss_nocache_at_listen"]) / relay["partitions"]
    lines.append(Line("10", "memory per cached partition (bytes)", None, per_partition, None,
                      f"estimate: {num(relay['cache_bytes'] / relay['partitions'])}; all listed: "
                      f"{num(listed_per_partition)}", "", _goal(per_partition, "<= 300"),
                      {"RSS, cache ready - idle --no-cache": per_partition,
                       "RSS, every table listed once - idle --no-cache": listed_per_partition,
                       "RSS, ready - at listening": (relay["rss_ready"] - relay["rss_at_listen"]) / relay["partitions"],
                       "hmsproxy_cache_bytes": relay["cache_bytes"] / relay["partitions"]}))
    return lines


def table_text(results: dict[str, Any], lines: list[Line]) -> str:
    head = f"{'#':>2}  {'measurement':50} {'Java':>9} {'cache':>9} {'no-cache':>9}  {'other':34} {'ratio':22} goal"
    out = [head, "-" * (len(head) + 12)]
    for line in lines:
        out.append(f"{line.row:>2}  {line.what:50} {num(line.java):>9} {num(line.cache):>9} {num(line.nocache):>9}  "
                   f"{line.other:34} {line.ratio:22} {line.goal}".rstrip())
    s1, pw, plan = results["select_1_ms"], results["cache_ready"], results["plan"]
    rss_mib = (pw["rss_ready"] - results["rss_nocache_at_listen"]) / 2**20
    out += [
        "",
        f"+{results['db_latency_ms']:g} ms per database round trip, through a relay for every server (SELECT 1: "
        f"{s1['relay']:.2f} ms through it, {s1['direct']:.2f} ms direct); built-in: a --no-cache server with "
        f"hmsproxy's own --db-latency-ms instead of the relay (prewarm: a cache server so).",
        f"Data: {plan['partitions']:,} partitions over {plan['tables']:,} tables in {results['read_db']}, made by "
        f"hmsproxy, served by all; cache RSS {rss_mib:.0f} MiB over an idle --no-cache server "
        f"({pw['rss_ready'] / 2**20:.0f} MiB); Java started in {results.get('java_start_s', 0):.0f} s.",
        f"Medians over {plan['rounds']} rounds (the servers one at a time, the order rotating; prewarm: "
        f"{plan['prewarm_rounds']} starts per mode so, the kept relay server's one more); latencies include the "
        f"client (thriftpy2) decoding the reply, except 'raw' and 'wire' (the reply's bytes received, not decoded).",
    ]
    if "java_failed" in results:
        out.append(f"the Java HMS did not start: {results['java_failed'].splitlines()[0][:300]}")
    if results.get("cache_passing_through"):
        out.append("WARNING: the cache server passed reads through to the database (hmsproxy_cache_passing_through)")
    for row in ("get_table", "get_table_wire", "throughput", "listing", "filter", "batches"):
        for server, cell in results.get(row, {}).items():
            if "failed" in cell:
                out.append(f"{row} on {server} failed: {cell['failed']}")
    for row in ("add_partitions", "alter_partition"):
        if "failed" in results[row].get("java", {}):
            out.append(f"{row} on java failed: {results[row]['java']['failed'].splitlines()[0][:300]}")
    return "\n".join(out)


def plot(lines: list[Line], path: Path, title: str) -> None:
    """One small bar chart per line of the table (log scale where the values differ tenfold or more)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [line for line in lines if line.plot]
    cols = 4
    fig, axes = plt.subplots(-(-len(panels) // cols), cols, figsize=(4.2 * cols, 3.2 * -(-len(panels) // cols)),
                             squeeze=False)
    for ax, line in zip(axes.flat, panels):
        assert line.plot is not None
        names = list(line.plot)
        ax.bar(range(len(names)), list(line.plot.values()), color=[f"C{i}" for i in range(len(names))])
        for x, value in enumerate(line.plot.values()):
            ax.annotate(num(value), (x, value), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=7)
        values = list(line.plot.values())
        if max(values) > 10 * min(values) > 0:  # else a linear scale from 0 shows the difference plainer
            ax.set_yscale("log")
        ax.set_title(f"{line.row} {line.what.strip()}", fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def hmsproxy_package() -> Path:
    """The hmsproxy the servers run: they inherit this process's PYTHONPATH."""
    import hmsproxy

    return Path(hmsproxy.__file__).resolve().parent


def hmsproxy_source() -> str:
    """Which hmsproxy the servers ran: this checkout's src and its state, or another copy."""
    package = hmsproxy_package()
    return source_version() if package == HERE.parent / "src" / "hmsproxy" else f"{package.parent} (PYTHONPATH)"


def compile_as_installed() -> None:
    """Compiles hmsproxy's bytecode (into the checkout's __pycache__, which git ignores), as `pip install` does for
    an installed hmsproxy (the Dockerfile's): run from a checkout with PYTHONDONTWRITEBYTECODE set, every server
    start would compile its ~110 modules again, 0.2-0.3 s of row 6's start."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(hmsproxy_package())], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK.partitions:,} partitions over {QUICK.tables} "
                        f"tables, a {QUICK.big:,}-partition write table, fewer repeats (under 10 min)")
    parser.add_argument("--skip-populate", action="store_true", help="reuse the read database of an earlier run "
                        "of the same size (the write database is made again every run)")
    parser.add_argument("--skip-java", action="store_true", help="hmsproxy only")
    parser.add_argument("--db-latency-ms", type=float, default=1.0, help="added to every database round trip")
    parser.add_argument("--burn-core", action="store_true", help="a process spinning on one core throughout "
                        "(burn.py): the figures of a deliberately loaded machine")
    parser.add_argument("--java-write-budget-s", type=float, default=None,
                        help="most seconds the Java HMS's add_partitions may take (default 300, 30 with --quick)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    plan = QUICK if args.quick else Plan()
    if args.java_write_budget_s is None:
        args.java_write_budget_s = 30.0 if args.quick else 300.0
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = (args.out / "work" / "against_java").resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    compile_as_installed()
    started = time.monotonic()
    with BurnedCore(args.burn_core) as burner:
        results = run(args, plan, workdir)
    if args.burn_core:
        results["machine"] += f", one core burned (the burner had {burner.share:.2f} of a core)"
    results["src"], results["seconds"] = hmsproxy_source(), time.monotonic() - started
    lines = table_lines(results)
    text = table_text(results, lines) + (f"\nsrc at {results['src']}; {results['machine']}; "
                                         f"{results['seconds'] / 60:.0f} min in all")
    print(text)
    (args.out / "against_java.txt").write_text(text + "\n")
    (args.out / "against_java.json").write_text(json.dumps(results, indent=1))
    plot(lines, args.out / "against_java.png", f"hmsproxy against the Java HMS 2.3.10 on MariaDB, "
         f"+{args.db_latency_ms:g} ms per database round trip (src {results['src']})")
    print(f"wrote {args.out}/against_java.txt, .json and .png (server logs under {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
