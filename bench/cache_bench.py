"""Cache benchmark: hmsproxy with the cache vs --no-cache on MariaDB, side by side in one run.

    python bench/cache_bench.py [--db-latency-ms 1] [--sizes 1000,10000,100000] [--tables 1000]

Builds a metastore database (1,000 small tables and partitioned tables of the given sizes) through the
server, then starts a server per mode as its own process with an added delay per database round trip (to
model a remote database) and measures: per-call latency p50/p99 with one client, get_table throughput
with 8 client processes, prewarm time, bytes per cached partition, and another client's get_table
latency while one client pulls the largest table. Prints a table, writes JSON and a PNG plot.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import thriftpy2
import thriftpy2.rpc
from sqlalchemy import create_engine, text

from hmsproxy.idl import THRIFT_DIR

TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:  # support.ports
    sys.path.insert(0, str(TESTS))

from support.ports import free_ports  # noqa: E402

# Loaded again without idl.py's skew-map fix-up, so the client decodes with the compiled decoder only
# (the benchmark data has no list-keyed skew maps): client decoding cost stays out of the comparison.
hms = thriftpy2.load(str(THRIFT_DIR / "hive_metastore.thrift"), module_name="bench_hive_metastore_thrift")

ADMIN_URL = "mysql+pymysql://root@127.0.0.1:3306/test"
BENCH_DB = "hmsproxy_bench"


class Server:
    """An `hmsproxy serve` process."""

    def __init__(self, workdir: Path, cache: bool, latency_ms: float, database: str = BENCH_DB) -> None:
        self.port, self.metrics_port = free_ports(2)
        args = [sys.executable, "-m", "hmsproxy.cli", "serve", "--port", str(self.port), "--metrics-port",
                str(self.metrics_port), "--db", f"mysql://root@127.0.0.1:3306/{database}", "--warehouse",
                str(workdir / "warehouse"), "--db-latency-ms", str(latency_ms), "--log-level", "WARNING",
                "--cache-max-bytes", "4gb"] + ([] if cache else ["--no-cache"])
        self.process = subprocess.Popen(args, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.process.stdout:
            if "listening on" in line:
                break
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def metric(self, name: str) -> float:
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read().decode()
        match = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", body, re.MULTILINE)
        return float(match.group(1)) if match else float("nan")

    def wait_ready(self) -> float:
        started = time.monotonic()
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/readyz").status == 200:
                    return time.monotonic() - started
            except urllib.error.HTTPError:
                pass
            time.sleep(0.05)  # polling a readiness endpoint, not synchronising a test

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def client(port: int):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=600_000)


def _sd(location: str):
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name=f"c{i}", type="string") for i in range(8)], location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", compressed=False,
        numBuckets=-1, serdeInfo=hms.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde."
                                               "ParquetHiveSerDe", parameters={"serialization.format": "1"}),
        bucketCols=[], sortCols=[], parameters={}, skewedInfo=None, storedAsSubDirectories=False)


def partition_values(i: int) -> list[str]:
    return [f"2024-{1 + i // 2400 % 12:02d}-{1 + i // 100 % 24:02d}", str(i % 100), f"s{i // 28800}"]


def empty_metastore(workdir: Path, database: str) -> tuple[Server, Any]:
    """A --no-cache server on a new, empty MariaDB database, with the metastore database `bench`, and a client."""
    engine = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {database}"))
        conn.execute(text(f"CREATE DATABASE {database}"))
    engine.dispose()
    server = Server(workdir, cache=False, latency_ms=0, database=database)
    c = client(server.port)
    c.create_database(hms.Database(name="bench", parameters={}))
    return server, c


def populate(workdir: Path, sizes: list[int], tables: int) -> None:
    server, c = empty_metastore(workdir, BENCH_DB)
    for i in range(tables):
        c.create_table(hms.Table(tableName=f"small_{i:04d}", dbName="bench", sd=_sd(None), parameters={},
                                 partitionKeys=[], tableType="EXTERNAL_TABLE"))
    keys = [hms.FieldSchema(name="ds", type="string"), hms.FieldSchema(name="hr", type="int"),
            hms.FieldSchema(name="shard", type="string")]
    for size in sizes:
        name = f"parts_{size}"
        c.create_table(hms.Table(tableName=name, dbName="bench", sd=_sd(None), partitionKeys=keys, parameters={},
                                 tableType="EXTERNAL_TABLE"))
        for start in range(0, size, 5000):
            parts = [hms.Partition(values=partition_values(i), dbName="bench", tableName=name, parameters={
                "numFiles": "1", "totalSize": str(1000 + i)}, sd=_sd(f"file:/data/{name}/p{i}"))
                for i in range(start, min(size, start + 5000))]
            c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName=name, parts=parts, ifNotExists=False,
                                                          needResult=False))
        print(f"  populated {name}", flush=True)
    c.close()
    server.stop()


def timed(call, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _get_table_worker(port: int, count: int, queue) -> None:
    c = client(port)
    started = time.perf_counter()
    for _ in range(count):
        c.get_table("bench", "small_0001")
    queue.put(count / (time.perf_counter() - started))
    c.close()


def throughput(port: int, clients: int, calls_each: int) -> float:
    queue = multiprocessing.get_context("fork").Queue()
    workers = [multiprocessing.get_context("fork").Process(target=_get_table_worker, args=(port, calls_each, queue))
               for _ in range(clients)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return clients * calls_each / (time.perf_counter() - started)


def _pull(port: int, table: str, pulls: int) -> None:
    c = client(port)
    for _ in range(pulls):
        c.get_partitions("bench", table, -1)
    c.close()


def interference(port: int, big_table: str, pulls: int) -> dict[str, float]:
    """get_table latency of one client while another client process pulls the big table `pulls` times."""
    puller = multiprocessing.get_context("fork").Process(target=_pull, args=(port, big_table, pulls))
    probe = client(port)
    samples: list[float] = []
    puller.start()
    while puller.is_alive():
        started = time.perf_counter()
        probe.get_table("bench", "small_0001")
        samples.append(time.perf_counter() - started)
    puller.join()
    probe.close()
    return {"p50_ms": percentile(samples, 0.5) * 1e3, "p99_ms": percentile(samples, 0.99) * 1e3, "calls": len(samples)}


def prewarm_time(workdir: Path) -> dict[str, float]:
    """Prewarm of the whole metastore with no added latency (a database next to the server)."""
    server = Server(workdir, cache=True, latency_ms=0)
    result = {"seconds": server.wait_ready(), "partitions": server.metric("hmsproxy_prewarm_partitions_loaded"),
              "tables": server.metric('hmsproxy_prewarm_tables{state="done"}')}
    server.stop()
    return result


def measure(workdir: Path, cache: bool, latency_ms: float, sizes: list[int], repeats: int) -> dict:
    server = Server(workdir, cache=cache, latency_ms=latency_ms)
    result: dict = {"mode": "cache" if cache else "no-cache"}
    rss_before = server.rss_bytes()
    if cache:
        result["prewarm_s"] = server.wait_ready()
        result["prewarm_metric_s"] = server.metric("hmsproxy_prewarm_duration_seconds")
        partitions = server.metric("hmsproxy_prewarm_partitions_loaded")
        result["cache_bytes_per_partition"] = server.metric("hmsproxy_cache_bytes") / max(partitions, 1)
        result["rss_growth_bytes_per_partition"] = (server.rss_bytes() - rss_before) / max(partitions, 1)
    c = client(server.port)
    filtered = f"parts_{sizes[min(1, len(sizes) - 1)]}"
    calls = {
        "get_database": (lambda: c.get_database("bench"), repeats),
        "get_table": (lambda: c.get_table("bench", "small_0001"), repeats),
        "get_partitions_by_filter": (lambda: c.get_partitions_by_filter(
            "bench", filtered, 'ds = "2024-01-05" and hr > 50', -1), max(10, repeats // 10)),
    }
    for size in sizes:
        calls[f"get_partitions_{size // 1000}k"] = (lambda s=size: c.get_partitions("bench", f"parts_{s}", -1),
                                                    max(3, repeats * 1000 // size // 3))
    for name, (call, count) in calls.items():
        call()  # warm the connection and any lazy state
        cpu_before = server.cpu_seconds()
        samples = timed(call, count)
        result[name] = {"p50_ms": percentile(samples, 0.5) * 1e3, "p99_ms": percentile(samples, 0.99) * 1e3,
                        "server_cpu_ms": (server.cpu_seconds() - cpu_before) / count * 1e3, "n": count}
    c.close()
    result["get_table_8_clients_per_s"] = throughput(server.port, 8, max(50, repeats))
    result["get_table_while_pulling"] = interference(server.port, f"parts_{max(sizes)}", 3)
    server.stop()
    return result


def report(results: dict, out_dir: Path) -> None:
    cached, uncached = results["cache"], results["no-cache"]
    ops = [k for k, v in cached.items() if isinstance(v, dict) and "p50_ms" in v and k != "get_table_while_pulling"]
    lines = [f"{'call':26} {'cache p50':>10} {'p99':>9} {'cpu':>8} {'no-cache p50':>13} {'p99':>9} {'cpu':>8} "
             f"{'speed-up':>9}"]
    for op in ops:
        a, b = cached[op], uncached[op]
        lines.append(f"{op:26} {a['p50_ms']:9.3f}ms {a['p99_ms']:7.3f}ms {a['server_cpu_ms']:6.2f}ms "
                     f"{b['p50_ms']:11.3f}ms {b['p99_ms']:7.3f}ms {b['server_cpu_ms']:6.2f}ms "
                     f"{b['p50_ms'] / a['p50_ms']:8.1f}x")
    lines.append(f"{'get_table, 8 clients':26} {cached['get_table_8_clients_per_s']:8.0f}/s {'':18} "
                 f"{uncached['get_table_8_clients_per_s']:11.0f}/s")
    for mode in ("cache", "no-cache"):
        w = results[mode]["get_table_while_pulling"]
        lines.append(f"get_table p50/p99 while another client pulls the largest table ({mode}): "
                     f"{w['p50_ms']:.3f} / {w['p99_ms']:.3f} ms over {w['calls']} calls")
    p0 = results["prewarm_no_latency"]
    lines.append(f"prewarm of {p0['tables']:.0f} tables / {p0['partitions']:.0f} partitions: {p0['seconds']:.2f} s "
                 f"with no added latency, {cached['prewarm_s']:.2f} s at +{results['db_latency_ms']} ms per round trip")
    lines.append(f"bytes per cached partition: {cached['cache_bytes_per_partition']:.0f} estimated, "
                 f"{cached['rss_growth_bytes_per_partition']:.0f} server RSS growth over prewarm")
    lines.append("cpu = server CPU time per call; latencies include the client decoding the reply")
    print("\n".join(lines))
    (out_dir / "cache_bench.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "cache_bench.json").write_text(json.dumps(results, indent=2))
    paired_bars(out_dir / "cache_bench.png", ops, ("--no-cache", [uncached[o]["p50_ms"] for o in ops]),
                ("cache", [cached[o]["p50_ms"] for o in ops]), "p50 latency (ms, log scale)",
                f"hmsproxy on MariaDB, +{results['db_latency_ms']} ms per database round trip")


def paired_bars(path: Path, labels: list[str], before: tuple[str, list[float]], after: tuple[str, list[float]],
                ylabel: str, title: str) -> None:
    """A PNG of two bars per label on a log scale: (legend, values) before and after."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5))
    xs = range(len(labels))
    for offset, (legend, values) in ((-0.2, before), (0.2, after)):
        ax.bar([x + offset for x in xs], values, 0.4, label=legend)
    ax.set_xticks(list(xs), labels, rotation=20, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-latency-ms", type=float, default=1.0)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--skip-populate", action="store_true", help="reuse the database of an earlier run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    workdir = out_dir / "work"
    workdir.mkdir(exist_ok=True)
    if not args.skip_populate:
        print("populating the metastore database ...", flush=True)
        populate(workdir, sizes, args.tables)
    results = {"db_latency_ms": args.db_latency_ms, "sizes": sizes, "tables": args.tables,
               "machine": f"{os.cpu_count()} cores"}
    for cache in (False, True):
        print(f"measuring {'cache' if cache else 'no-cache'} ...", flush=True)
        results["cache" if cache else "no-cache"] = measure(workdir, cache, args.db_latency_ms, sizes, args.repeats)
    print("measuring prewarm without added latency ...", flush=True)
    results["prewarm_no_latency"] = prewarm_time(workdir)
    report(results, out_dir)


if __name__ == "__main__":
    main()
