"""Listing partitions at scale on MariaDB: get_partitions vs the batch API, cache vs --no-cache, and Spark's
planning time of a selective partition predicate, side by side in one run.

    python bench/listing_bench.py [--sizes 10000,100000,1000000] [--out bench/results] [--skip-populate] [--quick]

--quick measures the sizes 10000,100000 only; --skip-populate reuses the database of an earlier run.

1. Data: a fresh MariaDB database `hmsproxy_listing_bench`. A PySpark pipeline (a SparkSession with
   spark.hadoop.hive.metastore.uris pointing at an `hmsproxy serve` process, enableHiveSupport) creates the
   external parquet tables `bench.parts_<size>` PARTITIONED BY (ds string, hr int) and adds the partitions of
   the sizes up to 100k with `ALTER TABLE ... ADD PARTITION (...) PARTITION (...) ...` statements of 1,000
   partitions each (spark.sql.addPartitionInBatch.size=1000: one add_partitions call per statement; metadata
   only, the server creates the empty partition directories under the work directory). Larger sizes are
   added through the server's Thrift add_partitions_req in batches of 5,000 (needResult=False), with the
   table's storage descriptor and a non-local location (s3a://...) so the server makes no directories;
   --populate-budget-s bounds that step (the table is then measured with the partitions it got).
2. Fetching all partitions of each table, against a server with the cache (prewarmed, --cache-max-bytes 8gb)
   and one with --no-cache, each fetch in a fresh client process (hmsproxy.client.MetastoreClient):
   `get_partitions` in one call, `iter_partitions(batch_size=5000)` and the same with connections=4. Wall
   time, peak server RSS (VmRSS sampled every 20 ms, and the RSS before the fetch) and peak client RSS
   (the client's VmHWM at its end). A reply larger than --max-message-bytes (default 100mb) is refused by the
   server: that is reported as is; the refused fetch is then run again against a cache server with
   --max-message-bytes 2gb.
   A watchdog kills the client (or the server) if the machine's MemAvailable drops below --min-available.
3. Spark planning: `EXPLAIN SELECT ... WHERE ds = '2024-03-05' AND hr = 7` on the 100k table with one
   SparkSession per server (cache / --no-cache, each at --db-latency-ms 0 and 1; the cache servers cache
   only that table, --cache-whitelist, so that their prewarm does not load the larger tables), one warm-up
   EXPLAIN, then the median of --explain-repeats. The server's request counters show which metastore calls
   each EXPLAIN made (get_partitions_by_filter: pruning went through the metastore).

Prints a table and writes listing_bench.{txt,json,png} to --out.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import date, timedelta
from pathlib import Path

BENCH_DB = "hmsproxy_listing_bench"   # the MariaDB database
HMS_DB = "bench"                      # the metastore database the tables are in
THRIFT_BATCH = 5000
FETCH_METHODS = ("get_partitions", "batch_seq", "batch_4conn")
PREDICATE = "ds = '2024-03-05' AND hr = 7"


def table_name(size: int) -> str:
    return f"parts_{size}"


def partition_spec(i: int) -> tuple[str, int]:
    """(ds, hr) of the i-th partition: 24 hours a day from 2020-01-01."""
    return (date(2020, 1, 1) + timedelta(days=i // 24)).isoformat(), i % 24


def parse_bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*([kmgt]?)b?", text.strip().lower())
    if not match:
        raise ValueError(f"not a size: {text}")
    return int(match.group(1)) << (10 * " kmgt".index(match.group(2) or " "))


def rss_of(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else 0


def mem_available() -> int:
    return int(re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text()).group(1)) * 1024


# ---- child processes (fresh interpreters: client RSS and Spark sessions of their own) --------------------

def child_fetch(port: int, table: str, method: str, timeout_s: float) -> dict:
    from hmsproxy.client import MetastoreClient

    result: dict = {"count": 0}
    with MetastoreClient("127.0.0.1", port, timeout_s=timeout_s) as client:
        client.get_table(HMS_DB, table)  # connect and warm the connection outside the timing
        started = time.perf_counter()
        try:
            if method == "get_partitions":
                parts = client.get_partitions(HMS_DB, table, -1)
                result["count"] = len(parts)
            else:
                result["count"] = sum(1 for _ in client.iter_partitions(
                    HMS_DB, table, batch_size=THRIFT_BATCH, connections=4 if method == "batch_4conn" else 1))
        except Exception as exc:  # a refusal is a result to report
            result["error"] = f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"[:400]
        result["seconds"] = time.perf_counter() - started
    result["client_maxrss_bytes"] = peak_rss_self()
    return result


def peak_rss_self() -> int:
    """This process's peak RSS: VmHWM of its own address space. (ru_maxrss is not used: Linux carries the
    maximum over exec, so a child started by a large parent would report the parent's RSS at the fork.)"""
    match = re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text())
    return int(match.group(1)) * 1024 if match else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def make_spark(port: int, workdir: Path):
    from pyspark.sql import SparkSession

    tmp = workdir / "spark"
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "log4j2.properties").write_text(LOG4J2)
    spark = (SparkSession.builder.master("local[2]").appName("hmsproxy-listing-bench")
             .config("spark.hadoop.hive.metastore.uris", f"thrift://127.0.0.1:{port}")
             .config("spark.sql.warehouse.dir", (workdir / "warehouse").resolve().as_uri())
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.local.dir", str(tmp / "local"))
             .config("spark.driver.extraJavaOptions",
                     f"-Dlog4j2.configurationFile={(tmp / 'log4j2.properties').as_uri()} -Dderby.system.home={tmp}")
             .config("spark.hadoop.hive.metastore.client.socket.timeout", "1800")
             .config("spark.sql.addPartitionInBatch.size", "1000")
             .config("spark.sql.hive.metastorePartitionPruning", "true")  # the default, stated
             .enableHiveSupport().getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def child_spark_populate(port: int, workdir: Path, sizes: list[int], spark_max: int) -> dict:
    """The Spark pipeline: create the tables; add the partitions of the sizes up to spark_max."""
    spark = make_spark(port, workdir)
    timings: dict = {}
    try:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {HMS_DB}")
        for size in sizes:
            name = table_name(size)
            location = (workdir / "data" / name).resolve().as_uri()
            started = time.perf_counter()
            spark.sql(f"CREATE EXTERNAL TABLE {HMS_DB}.{name} (id BIGINT, payload STRING) PARTITIONED BY "
                      f"(ds STRING, hr INT) STORED AS PARQUET LOCATION '{location}'")
            if size > spark_max:
                continue
            for start in range(0, size, 1000):
                specs = " ".join("PARTITION (ds='{}', hr={:d})".format(*partition_spec(i))
                                 for i in range(start, min(size, start + 1000)))
                spark.sql(f"ALTER TABLE {HMS_DB}.{name} ADD {specs}")
            timings[name] = {"seconds": time.perf_counter() - started, "partitions": size,
                             "statements": -(-size // 1000), "method": "spark ALTER TABLE ADD PARTITION x1000"}
            print(f"  spark: {name} in {timings[name]['seconds']:.1f} s", flush=True)
    finally:
        spark.stop()
    return timings


def child_spark_plan(port: int, workdir: Path, table: str, repeats: int) -> dict:
    spark = make_spark(port, workdir)
    try:
        query = f"EXPLAIN SELECT id, payload FROM {HMS_DB}.{table} WHERE {PREDICATE}"
        started = time.perf_counter()
        plan = spark.sql(query).collect()[0][0]  # warm-up: session, metastore client, table, file index
        warmup = time.perf_counter() - started
        before = requests_total(os.environ["LISTING_BENCH_METRICS_PORT"])
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            spark.sql(query).collect()
            samples.append(time.perf_counter() - started)
        after = requests_total(os.environ["LISTING_BENCH_METRICS_PORT"])
    finally:
        spark.stop()
    calls = {m: (after.get(m, 0) - before.get(m, 0)) / repeats for m in after if after.get(m, 0) != before.get(m, 0)}
    pruned = re.search(r"PartitionFilters: \[[^\]]*\]", plan)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples), "samples_s": samples,
            "warmup_s": warmup, "metastore_calls_per_explain": calls,
            "partition_filters": pruned.group(0) if pruned else None, "plan_excerpt": plan[:1500]}


def requests_total(metrics_port) -> dict[str, float]:
    """hmsproxy_requests_total per method (all outcomes)."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
    totals: dict[str, float] = {}
    pattern = r'^hmsproxy_requests_total\{[^}]*method="([^"]+)"[^}]*\} ([0-9.e+-]+)$'
    for method, value in re.findall(pattern, body, re.M):
        totals[method] = totals.get(method, 0) + float(value)
    return totals


def child_main(argv: list[str]) -> None:
    kind, port, rest = argv[0], int(argv[1]), argv[2:]
    if kind == "fetch":
        result = child_fetch(port, rest[0], rest[1], float(rest[2]))
    elif kind == "spark_populate":
        result = child_spark_populate(port, Path(rest[0]), [int(s) for s in rest[1].split(",")], int(rest[2]))
    else:
        result = child_spark_plan(port, Path(rest[0]), rest[1], int(rest[2]))
    print("RESULT " + json.dumps(result), flush=True)


def run_child(args: list[str], timeout_s: float, watch: Watch | None = None, env: dict | None = None) -> dict:
    """Runs this file as a child process; its result is the JSON on its last `RESULT` line."""
    process = subprocess.Popen([sys.executable, __file__, "_child", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=dict(os.environ, **(env or {})),
                               start_new_session=True)
    if watch:
        watch.watch_client(process)
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"error": f"timeout: no result after {timeout_s:.0f} s (client killed)", "seconds": timeout_s}
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": f"child exited {process.returncode}: " + " | ".join(err.strip().splitlines()[-3:])[:600]}


# ---- servers and measurement ---------------------------------------------------------------------------

def server_class():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import cache_bench

    class Server(cache_bench.Server):
        """cache_bench's server process (metrics, readiness, RSS, stop) on this benchmark's database, with
        extra flags."""

        def __init__(self, workdir: Path, cache: bool, latency_ms: float = 0, extra: tuple[str, ...] = ()) -> None:
            self.port, self.metrics_port = cache_bench.free_ports(2)
            self.flags = (["--db-latency-ms", str(latency_ms)]
                          + (["--cache-max-bytes", "8gb"] if cache else ["--no-cache"])
                          + list(extra))
            args = [sys.executable, "-m", "hmsproxy.cli", "serve", "--port", str(self.port), "--metrics-port",
                    str(self.metrics_port), "--db", f"mysql://root@127.0.0.1:3306/{BENCH_DB}", "--warehouse",
                    str(workdir / "warehouse"), "--log-level", "WARNING"] + self.flags
            self.process = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True)
            self.log: list[str] = []
            for line in self.process.stdout:
                if "listening on" in line:
                    break
                self.log.append(line.rstrip())
            else:
                self.process.wait()
                raise RuntimeError(f"server did not start ({' '.join(self.flags)}): {self.log[-5:]}")
            threading.Thread(target=self._drain, daemon=True).start()

        def _drain(self) -> None:
            for line in self.process.stdout:
                self.log.append(line.rstrip())
                del self.log[:-50]

        def alive(self) -> bool:
            return self.process.poll() is None

        def stop(self) -> None:
            if self.process.poll() is not None:
                return
            try:
                super().stop()
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    return Server


@contextlib.contextmanager
def serving(workdir: Path, cache: bool, latency_ms: float = 0, extra: tuple[str, ...] = ()):
    server = server_class()(workdir, cache, latency_ms, extra)
    try:
        yield server
    finally:
        server.stop()


class Watch:
    """Samples the server's and the current client's VmRSS every 20 ms and keeps the maxima; kills the client
    (else the server) when the machine's MemAvailable drops below the floor."""

    def __init__(self, server_pid: int, min_available: int) -> None:
        self.server_pid, self.min_available = server_pid, min_available
        self.client: subprocess.Popen | None = None
        self.server_peak = self.client_peak = 0
        self.killed: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch_client(self, process: subprocess.Popen) -> None:
        self.client = process

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.server_peak = max(self.server_peak, rss_of(self.server_pid))
            client = self.client
            if client is not None and client.poll() is None:
                self.client_peak = max(self.client_peak, rss_of(client.pid))
            if self.killed is None and mem_available() < self.min_available:
                if client is not None and client.poll() is None:
                    self.killed = f"client killed at MemAvailable < {self.min_available >> 20} MB"
                    os.killpg(client.pid, signal.SIGKILL)
                else:
                    self.killed = f"server killed at MemAvailable < {self.min_available >> 20} MB"
                    os.kill(self.server_pid, signal.SIGKILL)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def fetch(server, table: str, method: str, args) -> dict:
    baseline = server.rss_bytes()
    with Watch(server.process.pid, args.min_available) as watch:
        result = run_child(["fetch", str(server.port), table, method, str(args.fetch_timeout_s)],
                           args.fetch_timeout_s + 60, watch)
    result.update(server_rss_before_bytes=baseline, server_peak_rss_bytes=watch.server_peak)
    result.setdefault("client_maxrss_bytes", watch.client_peak)  # killed clients: the sampled peak
    if watch.killed:
        result["error"] = watch.killed + "; " + result.get("error", "")
    if not server.alive():
        result["error"] = f"server died (exit {server.process.returncode}); " + result.get("error", "")
    return result


def table_sizes(server) -> dict[int, int]:
    """Requested size -> the partitions the table really has (a bounded populate may have stopped early)."""
    from hmsproxy.client import MetastoreClient

    with MetastoreClient("127.0.0.1", server.port) as client:
        sizes = {}
        for name in client.get_tables(HMS_DB, "parts_*"):
            sizes[int(name.split("_")[1])] = len(client.get_partition_names(HMS_DB, name, -1))
    return sizes


def measure_fetches(workdir: Path, sizes: list[int], args) -> dict:
    results: dict = {}
    largest = table_name(max(sizes))
    for cache in (True, False):
        mode = "cache" if cache else "no-cache"
        results[mode] = {}
        server = server_class()(workdir, cache)
        try:
            if cache:
                results[mode]["prewarm_s"] = server.wait_ready()
                results[mode]["cache_bytes"] = server.metric("hmsproxy_cache_bytes")
                print(f"  {mode}: prewarm {results[mode]['prewarm_s']:.1f} s", flush=True)
            for size in sizes:
                for method in ("batch_seq", "batch_4conn", "get_partitions"):  # the riskiest one last
                    if not server.alive():
                        server = server_class()(workdir, cache)
                        if cache:
                            server.wait_ready()
                    r = fetch(server, table_name(size), method, args)
                    results[mode][f"{size}/{method}"] = r
                    print(f"  {mode:8} {table_name(size):16} {method:15} {r.get('seconds', float('nan')):8.2f} s "
                          f"count={r.get('count')} server peak {r['server_peak_rss_bytes'] / 2**20:6.0f} MB "
                          f"client {r['client_maxrss_bytes'] / 2**20:6.0f} MB {r.get('error', '')[:160]}", flush=True)
        finally:
            server.stop()
    refused = [mode for mode in ("cache", "no-cache")
               if "maximum message size" in results[mode].get(f"{max(sizes)}/get_partitions", {}).get("error", "")]
    if refused:
        print(f"  get_partitions of {largest} refused ({', '.join(refused)}); again with --max-message-bytes 2gb",
              flush=True)
        for mode in refused:
            cache = mode == "cache"
            extra = ("--max-message-bytes", "2gb") + (("--cache-whitelist", rf"{HMS_DB}\.{largest}") if cache else ())
            with serving(workdir, cache, extra=extra) as server:
                if cache:
                    server.wait_ready()
                r = fetch(server, largest, "get_partitions", args)
            r["server_flags"] = " ".join(server.flags)
            results[mode][f"{max(sizes)}/get_partitions_2gb"] = r
            print(f"  {mode:8} {largest:16} get_partitions (2gb) {r.get('seconds', float('nan')):8.2f} s "
                  f"count={r.get('count')} server peak {r['server_peak_rss_bytes'] / 2**20:6.0f} MB "
                  f"client {r['client_maxrss_bytes'] / 2**20:6.0f} MB {r.get('error', '')[:160]}", flush=True)
    return results


def measure_planning(workdir: Path, size: int, args) -> dict:
    results: dict = {}
    for latency in (0.0, 1.0):
        for cache in (True, False):
            key = f"{'cache' if cache else 'no-cache'}@{latency:g}ms"
            extra = ("--cache-whitelist", rf"{HMS_DB}\.{table_name(size)}") if cache else ()
            with serving(workdir, cache, latency, extra) as server:
                if cache:
                    server.wait_ready()
                r = run_child(["spark_plan", str(server.port), str(workdir), table_name(size),
                               str(args.explain_repeats)],
                              900, env={"LISTING_BENCH_METRICS_PORT": str(server.metrics_port)})
            results[key] = r
            if "error" in r:
                print(f"  spark EXPLAIN {key}: {r['error']}", flush=True)
            else:
                print(f"  spark EXPLAIN {key}: median {r['median_s'] * 1e3:.0f} ms; metastore calls per EXPLAIN "
                      f"{r['metastore_calls_per_explain']}", flush=True)
    return results


# ---- populate ------------------------------------------------------------------------------------------

def reset_database(workdir: Path) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine("mysql+pymysql://root@127.0.0.1:3306/test", isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {BENCH_DB}"))
        conn.execute(text(f"CREATE DATABASE {BENCH_DB}"))
    engine.dispose()
    subprocess.run(["rm", "-rf", str(workdir / "data"), str(workdir / "warehouse")], check=True)


def thrift_populate(server, size: int, budget_s: float) -> dict:
    from hmsproxy.client import MetastoreClient
    from hmsproxy.idl import hms

    name = table_name(size)
    started = time.perf_counter()
    added = 0
    with MetastoreClient("127.0.0.1", server.port, timeout_s=1800) as client:
        sd = client.get_table(HMS_DB, name).sd
        for start in range(0, size, THRIFT_BATCH):
            if time.perf_counter() - started > budget_s:
                break
            parts = []
            for i in range(start, min(size, start + THRIFT_BATCH)):
                ds, hr = partition_spec(i)
                part_sd = copy.copy(sd)
                part_sd.location = f"s3a://hmsproxy-bench/{name}/ds={ds}/hr={hr}"
                parts.append(hms.Partition(values=[ds, str(hr)], dbName=HMS_DB, tableName=name, sd=part_sd,
                                           parameters={}))
            client.add_partitions_req(hms.AddPartitionsRequest(dbName=HMS_DB, tblName=name, parts=parts,
                                                               ifNotExists=False, needResult=False))
            added += len(parts)
            if added % 100_000 == 0:
                print(f"  thrift: {name} {added} partitions in {time.perf_counter() - started:.0f} s", flush=True)
    seconds = time.perf_counter() - started
    print(f"  thrift: {name} {added} partitions in {seconds:.1f} s", flush=True)
    return {"seconds": seconds, "partitions": added, "requested": size, "complete": added == size,
            "method": f"thrift add_partitions_req x{THRIFT_BATCH}, needResult=False"}


def populate(workdir: Path, sizes: list[int], args) -> dict:
    reset_database(workdir)
    timings: dict = {}
    with serving(workdir, cache=True) as server:
        server.wait_ready()
        spark = run_child(["spark_populate", str(server.port), str(workdir), ",".join(map(str, sizes)),
                           str(args.spark_max)], 3600)
        if "error" in spark:
            raise RuntimeError(f"the Spark pipeline failed: {spark['error']}")
        timings.update(spark)
        for size in sizes:
            if size > args.spark_max:
                timings[table_name(size)] = thrift_populate(server, size, args.populate_budget_s)
    return timings


# ---- report --------------------------------------------------------------------------------------------

def mb(value: float) -> str:
    return f"{value / 2**20:.0f}"


def report(results: dict, out_dir: Path) -> None:
    lines = []
    pop = results.get("populate", {})
    if pop:
        lines.append("populate: " + "; ".join(
            f"{name} {p['partitions']} partitions in {p['seconds']:.1f} s ({p['method']})" for name, p in pop.items()))
    fetches = results["fetch"]
    lines.append(f"prewarm of the cache server: {fetches['cache']['prewarm_s']:.1f} s, "
                 f"{fetches['cache']['cache_bytes'] / 2**20:.0f} MB cached")
    lines.append(f"{'partitions':>10} {'method':22} {'mode':8} {'wall':>9} {'server RSS before/peak MB':>26} "
                 f"{'client MB':>10}  result")
    for size in results["sizes"]:
        for method in FETCH_METHODS + ("get_partitions_2gb",):
            for mode in ("cache", "no-cache"):
                r = fetches[mode].get(f"{size}/{method}")
                if r is None:
                    continue
                label = method if method != "get_partitions_2gb" else "get_partitions (2gb)"
                outcome = r.get("error") or f"{r['count']} partitions"
                lines.append(f"{results['actual_sizes'].get(str(size), size):>10} {label:22} {mode:8} "
                             f"{r.get('seconds', float('nan')):8.2f}s {mb(r['server_rss_before_bytes']):>12} / "
                             f"{mb(r['server_peak_rss_bytes']):>6}      {mb(r['client_maxrss_bytes']):>10}  "
                             f"{outcome[:150]}")
    plan = results.get("planning", {})
    if plan:
        lines.append(f"Spark EXPLAIN ... WHERE {PREDICATE} on {table_name(results['planning_size'])} "
                     f"(median of {results['explain_repeats']}, one SparkSession per server):")
        for key, r in plan.items():
            if "error" in r:
                lines.append(f"  {key:16} {r['error']}")
            else:
                calls = ", ".join(f"{m} {n:g}" for m, n in sorted(r["metastore_calls_per_explain"].items()))
                lines.append(f"  {key:16} median {r['median_s'] * 1e3:8.1f} ms  (min {r['min_s'] * 1e3:.1f}, max "
                             f"{r['max_s'] * 1e3:.1f}, warm-up {r['warmup_s']:.1f} s)  "
                             f"metastore calls per EXPLAIN: {calls}")
    lines.append(f"total runtime {results['runtime_s'] / 60:.1f} min; {results['machine']}")
    text = "\n".join(lines)
    print(text)
    (out_dir / "listing_bench.txt").write_text(text + "\n")
    (out_dir / "listing_bench.json").write_text(json.dumps(results, indent=2))
    plot(results, out_dir / "listing_bench.png")


def plot(results: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fetches = results["fetch"]
    sizes = results["sizes"]
    fig, axes = plt.subplots(1, 2 if results.get("planning") else 1, figsize=(13, 5), squeeze=False)
    ax = axes[0][0]
    styles = {"cache": "-", "no-cache": "--"}
    markers = {"get_partitions": "o", "batch_seq": "s", "batch_4conn": "^"}
    for method in FETCH_METHODS:
        for mode in ("cache", "no-cache"):
            xs, ys = [], []
            for size in sizes:
                r = fetches[mode].get(f"{size}/{method}")
                if r and "error" not in r:
                    xs.append(r["count"])
                    ys.append(r["seconds"])
            if xs:
                ax.plot(xs, ys, styles[mode], marker=markers[method], label=f"{method} ({mode})")
            for size in sizes:  # refusals and failures: an x at the time they took
                r = fetches[mode].get(f"{size}/{method}")
                if r and "error" in r:
                    ax.plot([int(results["actual_sizes"].get(str(size), size))], [max(r.get("seconds", 0), 1e-3)], "x",
                            color="red", markersize=10)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions")
    ax.set_ylabel("wall time of fetching all (s, log)")
    ax.set_title("all partitions of a table (red x: refused / failed)")
    ax.legend(fontsize=8)
    if results.get("planning"):
        ax = axes[0][1]
        keys = [k for k, r in results["planning"].items() if "error" not in r]
        ax.bar(keys, [results["planning"][k]["median_s"] * 1e3 for k in keys],
               color=["tab:blue" if k.startswith("cache") else "tab:orange" for k in keys])
        ax.set_ylabel("median EXPLAIN time (ms)")
        planned = results["actual_sizes"].get(str(results["planning_size"]))
        ax.set_title(f"Spark planning, {PREDICATE}\non {planned} partitions")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--quick", action="store_true", help="sizes 10000,100000 only")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--skip-populate", action="store_true", help="reuse the database of an earlier run")
    parser.add_argument("--populate-budget-s", type=float, default=900, help="time bound of the Thrift populate")
    parser.add_argument("--fetch-timeout-s", type=float, default=900, help="time bound of one fetch")
    parser.add_argument("--explain-repeats", type=int, default=10)
    parser.add_argument("--min-available", default="1500mb", help="kill a fetch below this much MemAvailable")
    parser.add_argument("--skip-planning", action="store_true")
    parser.add_argument("--spark-max", type=int, default=100_000,
                        help="sizes up to this are written by the Spark pipeline, larger ones through Thrift")
    args = parser.parse_args()
    args.min_available = parse_bytes(args.min_available)
    sizes = [10000, 100000] if args.quick else sorted(int(s) for s in args.sizes.split(","))
    out_dir = Path(args.out).resolve()
    workdir = out_dir / "work" / "listing"
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict = {"sizes": sizes, "machine": f"{os.cpu_count()} cores, MariaDB on 127.0.0.1",
                     "explain_repeats": args.explain_repeats}
    if not args.skip_populate:
        print("populating (Spark pipeline, then Thrift for the sizes above 100k) ...", flush=True)
        results["populate"] = populate(workdir, sizes, args)
    with serving(workdir, cache=False) as server:
        actual = table_sizes(server)
    missing = [s for s in sizes if s not in actual]
    if missing:
        raise SystemExit(f"tables missing for sizes {missing}: run without --skip-populate")
    results["actual_sizes"] = {str(s): actual[s] for s in sizes}
    planning_size = max([s for s in sizes if s <= args.spark_max], default=None)
    if planning_size and not args.skip_planning:
        print(f"Spark planning on {table_name(planning_size)} ...", flush=True)
        results["planning_size"] = planning_size
        results["planning"] = measure_planning(workdir, planning_size, args)
    print("fetching all partitions ...", flush=True)
    results["fetch"] = measure_fetches(workdir, sizes, args)
    results["runtime_s"] = time.perf_counter() - started
    report(results, out_dir)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        child_main(sys.argv[2:])
    else:
        main()
