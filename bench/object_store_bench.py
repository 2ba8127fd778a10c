"""hmsproxy's warehouse on S3: quick statistics, drop and rename of many objects, at +20 ms per S3 request.

    python bench/object_store_bench.py [--quick] [--rounds 5] [--objects 10000] [--rename-objects 1000]
                                       [--latency-ms 20] [--out bench/results]

One `hmsproxy serve` process (SQLite, --warehouse s3a://<bucket>/warehouse) reaches moto's S3 server
(tests/support/s3_server.py) through a relay that holds every chunk for half of --latency-ms in each direction
(upstream_bench's DelayedRelay, in a process of its own): each HTTP request/response exchange on a kept-alive
connection costs +20 ms, as a store in another region would. The server gets the standard AWS_* variables,
AWS_ENDPOINT_URL naming the relay. The objects measured are written beforehand by boto3 straight to moto (no relay),
from a thread pool.

Rows, each over --rounds rounds (medians):
- quick statistics: add_partition over a prefix that already holds --objects objects; the server lists the prefix
  (numFiles/totalSize). Between rounds the partition is dropped without its data and added again;
- drop: drop_table(deleteData=true) of a managed table whose prefix holds --objects objects (filled every round);
- rename: alter_table renaming a managed table of --rename-objects objects at its default location, so its objects
  move (copied by the store one request each, the sources deleted in batches); renamed back and forth.
S3 requests of each call are the deltas of the server's hmsproxy_object_store_requests counter (one per
list_objects_v2 page, delete_objects batch, copy_object; botocore's own retries inside one are not counted apart).
Goal: quick statistics and drop within a few requests per 1,000 objects (paged listing, batched deletes), not one
per object. Prints a table, writes JSON and a PNG plot to --out.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tests") not in sys.path:  # support.* (moto's server, the server's process)
    sys.path.insert(0, str(HERE.parent / "tests"))

from upstream_bench import DelayedRelay  # noqa: E402

from hmsproxy.idl import hms  # noqa: E402
from support.builders import connect_thrift, database, partition, table  # noqa: E402
from support.hmsproxy_server import start_hmsproxy_process  # noqa: E402
from support.running import RunningServer  # noqa: E402
from support.s3_server import S3Server, running_s3_server  # noqa: E402

GOAL_PER_THOUSAND = 5.0   # "a few requests per 1,000 objects": the listing's pages and the delete batches
FILL_THREADS = 32
SAMPLE = re.compile(r'^(hmsproxy_object_store_requests_total|hmsproxy_object_store_request_seconds_sum)\{([^}]*)\} '
                    r'([0-9.e+-]+)$', re.MULTILINE)
IN_REQUESTS = "seconds in requests"   # the key of the time spent inside S3 requests, beside operation/outcome
LABEL = re.compile(r'(\w+)="([^"]*)"')


def request_counts(server: RunningServer) -> dict[str, float]:
    """The server's object-store requests so far, by `operation/outcome`, and the seconds spent in them."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
    counts: dict[str, float] = {}
    for metric, labels, value in SAMPLE.findall(body):
        named = dict(LABEL.findall(labels))
        key = IN_REQUESTS if metric.endswith("_sum") else f"{named['operation']}/{named['outcome']}"
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


Sample = tuple[float, float, dict[str, int]]   # seconds of the call, seconds inside S3 requests, requests made


def counted(server: RunningServer, call: Callable[..., object], *arguments: object) -> Sample:
    """Seconds `call(*arguments)` took, the seconds of it the server spent inside S3 requests (the relay's delay and
    moto's own work), and the S3 requests it made, by operation/outcome."""
    before = request_counts(server)
    started = time.perf_counter()
    call(*arguments)
    elapsed = time.perf_counter() - started
    after = request_counts(server)
    in_requests = after.pop(IN_REQUESTS, 0.0) - before.get(IN_REQUESTS, 0.0)
    made = {key: int(value - before.get(key, 0.0)) for key, value in after.items()}
    return elapsed, in_requests, {key: value for key, value in made.items() if value}


def fill(s3: S3Server, bucket: str, prefix: str, count: int) -> None:
    """`count` small objects under `prefix`, written straight to moto (not through the relay) by a thread pool."""
    local = s3.client()   # boto3 clients are thread-safe; one pool of connections for all the threads
    body = b"x" * 100

    def put(i: int) -> None:
        local.put_object(Bucket=bucket, Key=f"{prefix}part-{i:05d}.parquet", Body=body)
    with ThreadPoolExecutor(FILL_THREADS) as pool:
        list(pool.map(put, range(count)))


def exchange_ms(s3: S3Server, endpoint: str, repeats: int = 20) -> float:
    """Median time of one small S3 request (head_bucket) from boto3 at `endpoint`."""
    client = s3.client(endpoint)
    bucket = s3.new_bucket()
    client.head_bucket(Bucket=bucket)   # the connection, opened outside the measure
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        client.head_bucket(Bucket=bucket)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e3


class Bench:
    """The three calls, round after round, against one server and one bucket."""

    def __init__(self, s3: S3Server, bucket: str, server: RunningServer) -> None:
        self.s3, self.bucket, self.server = s3, bucket, server
        self.client = connect_thrift(server, timeout_ms=600_000)
        self.client.create_database(database(hms, "bench"))

    def prefix(self, *parts: str) -> str:
        """The key prefix of a location under the warehouse's bench.db."""
        return "warehouse/bench.db/" + "".join(part + "/" for part in parts)

    def quick_stats(self, objects: int, rounds: int) -> list[Sample]:
        parted = table(hms, "bench", "stats_t", part_keys=(("p", "string"),))
        self.client.create_table(parted)
        parted = self.client.get_table("bench", "stats_t")
        fill(self.s3, self.bucket, self.prefix("stats_t", "p=full"), objects)
        samples = []
        for _ in range(rounds):
            samples.append(counted(self.server, self.client.add_partition, partition(hms, parted, ["full"])))
            stats = self.client.get_partition("bench", "stats_t", ["full"]).parameters
            assert stats.get("numFiles") == str(objects), stats
            self.client.drop_partition("bench", "stats_t", ["full"], False)
        return samples

    def drop(self, objects: int, rounds: int) -> list[Sample]:
        samples = []
        for round_ in range(rounds):
            name = f"drop_t{round_}"
            self.client.create_table(table(hms, "bench", name))
            fill(self.s3, self.bucket, self.prefix(name), objects)
            samples.append(counted(self.server, self.client.drop_table, "bench", name, True))
            assert not self.s3.keys(self.bucket, self.prefix(name)), f"{name}'s objects survived the drop"
        return samples

    def rename(self, objects: int, rounds: int) -> list[Sample]:
        self.client.create_table(table(hms, "bench", "move_a"))
        fill(self.s3, self.bucket, self.prefix("move_a"), objects)
        samples = []
        names = ("move_a", "move_b")
        for round_ in range(rounds):
            source, target = names[round_ % 2], names[1 - round_ % 2]
            renamed = self.client.get_table("bench", source)
            renamed.tableName = target
            samples.append(counted(self.server, self.client.alter_table, "bench", source, renamed))
            assert len(self.s3.keys(self.bucket, self.prefix(target))) == objects
            assert not self.s3.keys(self.bucket, self.prefix(source)), f"{source}'s objects were left behind"
        return samples


def row(name: str, objects: int, samples: list[Sample]) -> dict[str, Any]:
    seconds = [elapsed for elapsed, _, _ in samples]
    in_requests = [inside for _, inside, _ in samples]
    requests = [sum(made.values()) for _, _, made in samples]
    return {"name": name, "objects": objects, "seconds": seconds, "in_requests_s": in_requests,
            "requests": requests, "by_operation": [made for _, _, made in samples],
            "median_s": statistics.median(seconds), "median_in_requests_s": statistics.median(in_requests),
            "median_requests": statistics.median(requests),
            "requests_per_1000": statistics.median(requests) * 1000 / objects}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 / 200 objects, 2 rounds: a few minutes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--objects", type=int, default=10_000, help="objects of the statistics and drop rows")
    parser.add_argument("--rename-objects", type=int, default=1_000)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="added to every S3 request/response")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.objects, args.rename_objects = 2, 2_000, 200
    args.out.mkdir(parents=True, exist_ok=True)
    with running_s3_server() as s3, DelayedRelay(("127.0.0.1", s3.port), args.latency_ms) as relay, \
            tempfile.TemporaryDirectory() as tmp:
        relayed = f"http://127.0.0.1:{relay.port}"
        exchange = {"direct_ms": exchange_ms(s3, s3.endpoint), "relay_ms": exchange_ms(s3, relayed)}
        bucket = s3.new_bucket()
        server = start_hmsproxy_process(Path(tmp), f"sqlite:///{Path(tmp) / 'metastore.db'}", "--warehouse",
                                        f"s3a://{bucket}/warehouse", "--s3-path-style", "true", "--log-level",
                                        "WARNING", environment=s3.environment(relayed))
        try:
            bench = Bench(s3, bucket, server)
            rows = [row("quick statistics (add_partition)", args.objects, bench.quick_stats(args.objects, args.rounds)),
                    row("drop_table, deleteData", args.objects, bench.drop(args.objects, args.rounds)),
                    row("rename of a managed table", args.rename_objects,
                        bench.rename(args.rename_objects, args.rounds))]
        finally:
            server.stop()
    report(rows, exchange, args)


def report(rows: list[dict[str, Any]], exchange: dict[str, float], args: argparse.Namespace) -> None:
    lines = [f"one S3 request (head_bucket): {exchange['direct_ms']:.1f} ms direct, {exchange['relay_ms']:.1f} ms "
             f"through the relay (+{args.latency_ms:g} ms); {args.rounds} rounds, medians",
             "'in S3': the seconds of the call spent inside S3 requests (relay and moto), from the server's histogram",
             f"{'call':34} {'objects':>8} {'seconds':>8} {'in S3':>8} {'requests':>9} {'per 1,000':>10} {'goal':>12}"]
    for measured in rows:
        goal = "" if measured["name"].startswith("rename") else (
            "met" if measured["requests_per_1000"] <= GOAL_PER_THOUSAND else "NOT MET")
        lines.append(f"{measured['name']:34} {measured['objects']:8d} {measured['median_s']:8.2f} "
                     f"{measured['median_in_requests_s']:8.2f} "
                     f"{measured['median_requests']:9.0f} {measured['requests_per_1000']:10.1f} "
                     f"{f'<= {GOAL_PER_THOUSAND:g}: {goal}' if goal else 'one copy each':>12}")
        operations = " ".join(f"{key}={value}" for key, value in sorted(measured["by_operation"][-1].items()))
        lines.append(f"{'':34} last round: {operations}")
    text = "\n".join(lines)
    print(text)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out / f"object_store_bench-{stamp}.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "exchange": exchange, "rows": rows,
         "goal_requests_per_1000": GOAL_PER_THOUSAND, "table": text}, indent=2))
    plot(args.out / f"object_store_bench-{stamp}.png", rows, args)


def plot(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Two panels side by side: median seconds per call, and S3 requests per 1,000 objects against the goal."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{measured['name']}\n{measured['objects']:,} objects" for measured in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    left.bar(labels, [measured["median_s"] for measured in rows], color="tab:blue", label="the call")
    left.bar(labels, [measured["median_in_requests_s"] for measured in rows], 0.5, color="tab:cyan",
             label="inside S3 requests")
    left.set_ylabel("seconds per call (median)")
    left.legend()
    right.bar(labels, [measured["requests_per_1000"] for measured in rows], color="tab:orange")
    right.axhline(GOAL_PER_THOUSAND, color="tab:red", linestyle="--",
                  label=f"goal: {GOAL_PER_THOUSAND:g} (drop, stats)")
    right.axhline(1000, color="grey", linestyle=":", label="one request per object")
    right.set_yscale("log")
    right.set_ylabel("S3 requests per 1,000 objects (median)")
    right.legend()
    for axis in (left, right):
        axis.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"hmsproxy, warehouse on S3 (moto) at +{args.latency_ms:g} ms per request, {args.rounds} rounds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
