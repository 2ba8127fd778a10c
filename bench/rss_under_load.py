"""Server memory under a sustained mixed write load: does RSS stay flat?

    python bench/rss_under_load.py [--minutes 10] [--backend mariadb|postgres|sqlite] [--writers 4]
                                   [--sample-s 10] [--out-dir bench/results]

One `hmsproxy serve` process (cache on) on a fresh database of the backend. `--writers` client processes
loop over a mixed workload whose live data stays constant: create a partitioned table, add partitions,
alter it, read it and its partitions, look up a table that does not exist, lock and unlock it inside a
transaction, drop the oldest of the writer's tables once it holds more than a few. Every `--sample-s` the
server's RSS and its cache bookkeeping gauges are sampled. The verdict compares the second half of the
run with the first: a leak shows as a slope that stays positive after warm-up (issue 11 saw ~9 MB/min).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import statistics
import sys
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import thriftpy2.rpc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))  # support.* (databases, server processes)

from hmsproxy.idl import hms  # noqa: E402
from support.databases import fresh_database  # noqa: E402
from support.hmsproxy_server import start_hmsproxy_process  # noqa: E402

LIVE_TABLES_PER_WRITER = 4
PARTITIONS_PER_TABLE = 20


@dataclass
class Sample:
    seconds: float
    rss_mib: float
    operations: int
    cached_tables: float
    generations: float
    key_locks: float


def _client(port: int):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", port, timeout=120_000)


def _sd(location: str) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(cols=[hms.FieldSchema(name=f"c{i}", type="string") for i in range(6)],
                                 location=location, inputFormat="i", outputFormat="o", compressed=False,
                                 numBuckets=-1, serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}),
                                 bucketCols=[], sortCols=[], parameters={}, storedAsSubDirectories=False)


def _one_round(client, db: str, name: str) -> int:
    """Creates, fills, changes, reads and locks one table; returns the calls made."""
    client.create_table(hms.Table(tableName=name, dbName=db, sd=_sd(f"file:/tmp/rssbench/{db}/{name}"),
                                  partitionKeys=[hms.FieldSchema(name="p", type="string")], parameters={},
                                  tableType="EXTERNAL_TABLE"))
    client.add_partitions([hms.Partition(dbName=db, tableName=name, values=[f"v{i}"], parameters={},
                                         sd=_sd(f"file:/tmp/rssbench/{db}/{name}/p=v{i}"))
                           for i in range(PARTITIONS_PER_TABLE)])
    table = client.get_table(db, name)
    table.parameters["round"] = uuid.uuid4().hex
    client.alter_table(db, name, table)
    client.get_partitions(db, name, -1)
    try:
        client.get_table(db, f"missing_{uuid.uuid4().hex[:12]}")
    except hms.NoSuchObjectException:
        pass
    [txn] = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="bench", hostname="bench")).txn_ids
    lock = client.lock(hms.LockRequest(component=[hms.LockComponent(
        type=hms.LockType.SHARED_WRITE, level=hms.LockLevel.TABLE, dbname=db, tablename=name)],
        txnid=txn, user="bench", hostname="bench"))
    client.commit_txn(hms.CommitTxnRequest(txnid=txn))
    return 9 if lock.lockid else 8


def _writer(port: int, index: int, stop_at: float, counter) -> None:
    client = _client(port)
    db = "rssbench"
    live: list[str] = []
    round_ = 0
    while time.time() < stop_at:
        name = f"w{index}_t{round_}"
        calls = _one_round(client, db, name)
        live.append(name)
        if len(live) > LIVE_TABLES_PER_WRITER:
            client.drop_table(db, live.pop(0), True)
            calls += 1
        with counter.get_lock():
            counter.value += calls
        round_ += 1
    client.close()


def _gauges(metrics_port: int) -> dict[str, float]:
    body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()

    def value(pattern: str) -> float:
        match = re.search(rf"^{pattern} ([0-9.e+-]+)$", body, re.MULTILINE)
        return float(match.group(1)) if match else float("nan")
    return {"cached_tables": value(r'hmsproxy_cache_objects\{kind="table"\}'),
            "generations": value(r'hmsproxy_cache_bookkeeping_entries\{kind="generations"\}'),
            "key_locks": value(r'hmsproxy_cache_bookkeeping_entries\{kind="key_locks"\}')}


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def _slope_mib_per_min(samples: list[Sample]) -> float:
    """Least-squares slope of RSS over time."""
    if len(samples) < 2:
        return 0.0
    xs = [s.seconds / 60 for s in samples]
    ys = [s.rss_mib for s in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread if spread else 0.0


def run(backend: str, minutes: float, writers: int, sample_s: float, workdir: Path) -> dict:
    with fresh_database(backend, workdir) as url:
        server = start_hmsproxy_process(workdir / "server", url)
        try:
            setup = _client(server.port)
            setup.create_database(hms.Database(name="rssbench", parameters={}))
            setup.close()
            pid = server.pid
            counter = multiprocessing.Value("q", 0)
            started = time.time()
            stop_at = started + minutes * 60
            processes = [multiprocessing.Process(target=_writer, args=(server.port, i, stop_at, counter))
                         for i in range(writers)]
            for process in processes:
                process.start()
            samples: list[Sample] = []
            while True:
                now = time.time()
                samples.append(Sample(round(now - started, 1), _rss_mib(pid), counter.value,
                                      **_gauges(server.metrics_port)))
                print(f"  {samples[-1].seconds:7.1f} s  RSS {samples[-1].rss_mib:7.1f} MiB  "
                      f"{samples[-1].operations:8d} calls  generations {samples[-1].generations:.0f}", flush=True)
                if now >= stop_at:
                    break
                time.sleep(min(sample_s, max(0.0, stop_at - now)))  # the sampling period of a benchmark
            for process in processes:
                process.join(timeout=120)
            failed = [p.exitcode for p in processes if p.exitcode != 0]
        finally:
            server.stop()
    half = len(samples) // 2
    return {"backend": backend, "minutes": minutes, "writers": writers, "failed_writers": failed,
            "samples": [asdict(s) for s in samples],
            "calls_per_minute": samples[-1].operations / minutes if minutes else 0.0,
            "rss_first_mib": samples[0].rss_mib, "rss_last_mib": samples[-1].rss_mib,
            "slope_first_half_mib_per_min": _slope_mib_per_min(samples[:half + 1]),
            "slope_second_half_mib_per_min": _slope_mib_per_min(samples[half:])}


def report(result: dict, out_dir: Path) -> None:
    lines = [f"hmsproxy RSS under a mixed write load: {result['backend']}, {result['writers']} writers, "
             f"{result['minutes']} min, {result['calls_per_minute']:.0f} calls/min",
             f"{'seconds':>8} {'RSS MiB':>9} {'calls':>9} {'cached tables':>14} {'generations':>12} {'key locks':>10}"]
    for s in result["samples"]:
        lines.append(f"{s['seconds']:8.1f} {s['rss_mib']:9.1f} {s['operations']:9d} {s['cached_tables']:14.0f} "
                     f"{s['generations']:12.0f} {s['key_locks']:10.0f}")
    lines.append(f"RSS slope: first half {result['slope_first_half_mib_per_min']:+.2f} MiB/min, "
                 f"second half {result['slope_second_half_mib_per_min']:+.2f} MiB/min "
                 f"({result['rss_first_mib']:.1f} -> {result['rss_last_mib']:.1f} MiB)")
    if result["failed_writers"]:
        lines.append(f"writers that failed: {result['failed_writers']}")
    print("\n".join(lines))
    (out_dir / "rss_under_load.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "rss_under_load.json").write_text(json.dumps(result, indent=1))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    minutes = [s["seconds"] / 60 for s in result["samples"]]
    ax.plot(minutes, [s["rss_mib"] for s in result["samples"]], marker=".", label="server RSS")
    ax.set_xlabel("minutes of load")
    ax.set_ylabel("RSS (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"hmsproxy RSS, {result['writers']} writers, {result['backend']} "
                 f"(second-half slope {result['slope_second_half_mib_per_min']:+.2f} MiB/min)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "rss_under_load.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--backend", default="mariadb", choices=("mariadb", "postgres", "sqlite"))
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--out-dir", default=str(HERE / "results"))
    args = parser.parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    workdir = out_dir / f"rss-work-{uuid.uuid4().hex[:6]}"
    workdir.mkdir()
    report(run(args.backend, args.minutes, args.writers, args.sample_s, workdir), out_dir)


if __name__ == "__main__":
    main()
