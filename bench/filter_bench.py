"""Partition filters through the cache's value index vs a scan of every partition, side by side in one run.

    python bench/filter_bench.py [--partitions 10000] [--repeats 200] [--db-latency-ms 1] [--skip-populate]

1. Data: a fresh MariaDB database `hmsproxy_filter_bench` with one table of --partitions partitions keyed
   (ds string, hr int, shard string), the values of cache_bench.py, added through an hmsproxy server.
2. Selection inside the server (in this process, on the cache's own PartitionSet of the same values): the
   median time of PartitionSet.names_matching with the filter's index plan, and with no plan (every partition
   tested, as before the index), per filter, and their ratio.
3. Through the wire: get_partitions_by_filter against a cache server (prewarmed) and a --no-cache server, each
   at --db-latency-ms per database round trip: client p50 and server CPU per call.

Prints a table and writes filter_bench.{txt,json,png} to --out.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from cache_bench import Server, client, empty_metastore, hms, paired_bars, partition_values, percentile, timed

from hmsproxy.hive.names import make_partition_name
from hmsproxy.hive.partition_filter import PartitionFilter, compile_partition_filter
from hmsproxy.store.cache.partitions import PartitionSet

DATABASE = "hmsproxy_filter_bench"
KEYS = [("ds", "string"), ("hr", "int"), ("shard", "string")]
FILTERS = [
    'ds = "2024-01-05" and hr > 50',                     # 49 of 10k: the row
    "hr = 7",                                            # one value of the second key
    'ds between "2024-01-10" and "2024-01-12"',          # a range of the first
    'ds like "2024-01-0.*"',                             # a prefix
    '(ds) in ("2024-01-03", "2024-01-20") or hr = 99',   # OR of an IN and an equality
    "hr != 7",                                           # what no index narrows: a scan either way
]


def populate(workdir: Path, partitions: int) -> None:
    server, c = empty_metastore(workdir, DATABASE)
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="v", type="string")], inputFormat="i", outputFormat="o",
                               serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={})
    c.create_table(hms.Table(tableName="events", dbName="bench", sd=sd, parameters={}, tableType="EXTERNAL_TABLE",
                             partitionKeys=[hms.FieldSchema(name=k, type=t) for k, t in KEYS]))
    for start in range(0, partitions, 5000):
        parts = [hms.Partition(values=partition_values(i), dbName="bench", tableName="events", parameters={},
                               sd=hms.StorageDescriptor(cols=sd.cols, location=f"s3a://bench/events/p{i}",
                                                        inputFormat="i", outputFormat="o", serdeInfo=sd.serdeInfo,
                                                        parameters={}))
                 for i in range(start, min(partitions, start + 5000))]
        c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName="events", parts=parts,
                                                      ifNotExists=False, needResult=False))
    c.close()
    server.stop()


def median_us(call, repeats: int) -> float:
    call()
    return statistics.median(timed(call, repeats)) * 1e6


def selection(partitions: int, repeats: int) -> dict[str, dict[str, float]]:
    """Server-side selection time of each filter, through the index and by testing every partition."""
    keys = tuple(k for k, _ in KEYS)
    cached = PartitionSet.of_values(keys, ((make_partition_name(keys, partition_values(i)), tuple(partition_values(i)))
                                           for i in range(partitions)))
    result = {}
    for text_ in FILTERS:
        compiled = compile_partition_filter(text_, KEYS)
        scanning = PartitionFilter(compiled.matches, None)
        matched = len(cached.names_matching(compiled))
        assert cached.names_matching(scanning) == cached.names_matching(compiled)
        result[text_] = {"matched": matched,
                         "index_us": median_us(lambda f=compiled: cached.names_matching(f), repeats),
                         "scan_us": median_us(lambda f=scanning: cached.names_matching(f), max(10, repeats // 10))}
    return result


def through_the_wire(workdir: Path, cache: bool, latency_ms: float, repeats: int) -> dict[str, dict[str, float]]:
    server = Server(workdir, cache=cache, latency_ms=latency_ms, database=DATABASE)
    if cache:
        server.wait_ready()
    c = client(server.port)
    result = {}
    for text_ in FILTERS:
        def call(f=text_):
            return c.get_partitions_by_filter("bench", "events", f, -1)
        count = repeats if cache else max(10, repeats // 10)
        call()
        cpu_before = server.cpu_seconds()
        samples = timed(call, count)
        result[text_] = {"p50_ms": percentile(samples, 0.5) * 1e3,
                         "server_cpu_ms": (server.cpu_seconds() - cpu_before) / count * 1e3}
    c.close()
    server.stop()
    return result


def report(results: dict, out_dir: Path) -> None:
    sel, cached, uncached = results["selection"], results["cache"], results["no-cache"]
    lines = [f"{results['partitions']} partitions, +{results['db_latency_ms']} ms per database round trip",
             f"{'filter':48} {'matched':>7} {'index':>9} {'scan':>9} {'ratio':>7}  {'cache p50':>10} {'cpu':>8}"
             f"  {'no-cache p50':>12} {'cpu':>8}"]
    for f in FILTERS:
        s, a, b = sel[f], cached[f], uncached[f]
        lines.append(f"{f:48} {s['matched']:7d} {s['index_us']:7.0f}us {s['scan_us']:7.0f}us "
                     f"{s['scan_us'] / s['index_us']:6.1f}x  {a['p50_ms']:8.3f}ms {a['server_cpu_ms']:6.3f}ms"
                     f"  {b['p50_ms']:10.3f}ms {b['server_cpu_ms']:6.2f}ms")
    lines.append("index / scan: the server's selection of the names (median, in process); cache / no-cache: "
                 "get_partitions_by_filter at a client, server CPU per call")
    print("\n".join(lines))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "filter_bench.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "filter_bench.json").write_text(json.dumps(results, indent=2))
    paired_bars(out_dir / "filter_bench.png", [f[:28] for f in FILTERS],
                ("scan of every partition", [sel[f]["scan_us"] for f in FILTERS]),
                ("value index", [sel[f]["index_us"] for f in FILTERS]), "selection time (µs, log scale)",
                f"Partition filter selection in the cache, {results['partitions']} partitions")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--db-latency-ms", type=float, default=1.0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--skip-populate", action="store_true", help="reuse the database of an earlier run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if not args.skip_populate:
            started = time.monotonic()
            populate(workdir, args.partitions)
            print(f"populated in {time.monotonic() - started:.1f} s", flush=True)
        results = {"partitions": args.partitions, "db_latency_ms": args.db_latency_ms,
                   "selection": selection(args.partitions, args.repeats),
                   "cache": through_the_wire(workdir, True, args.db_latency_ms, args.repeats),
                   "no-cache": through_the_wire(workdir, False, args.db_latency_ms, args.repeats)}
    report(results, Path(args.out))


if __name__ == "__main__":
    main()
