"""Writes against table size: alter_partition in a 100-partition and a 20,000-partition table, and add_partitions
into a table growing to 20,000 partitions, through a cache server on MariaDB, side by side in one run.

    python bench/write_bench.py [--big 20000] [--small 100] [--repeats 100] [--db-latency-ms 1]

1. Data: a fresh MariaDB database `hmsproxy_write_bench` with the tables `small` and `big` (keys ds string,
   hr int), added through a --no-cache server.
2. alter_partition: a cache server (prewarmed) at --db-latency-ms per database round trip; the same partition
   of each table altered in turn (a parameter changed each time), --repeats times each, interleaved: client
   p50 and server CPU per call, and the ratio big / small (the goal: at most 2x).
3. add_partitions: batches of --batch partitions into a new table until it holds --big: partitions per second
   of the first and the last batch, and overall.

Prints a table and writes write_bench.{txt,json,png} to --out.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from cache_bench import Server, client, empty_metastore, hms, paired_bars

DATABASE = "hmsproxy_write_bench"
KEYS = [hms.FieldSchema(name="ds", type="string"), hms.FieldSchema(name="hr", type="int")]


def _sd(location: str | None = None) -> hms.StorageDescriptor:
    serde = hms.SerDeInfo(serializationLib="s", parameters={"serialization.format": "1"})
    return hms.StorageDescriptor(cols=[hms.FieldSchema(name=f"c{i}", type="string") for i in range(5)],
                                 location=location, inputFormat="i", outputFormat="o", parameters={}, serdeInfo=serde)


def _partitions(table: str, start: int, end: int) -> list[hms.Partition]:
    return [hms.Partition(values=[f"2024-{i // 100:05d}", str(i % 100)], dbName="bench", tableName=table,
                          parameters={"numFiles": "1", "totalSize": str(i)},
                          sd=_sd(f"s3a://bench/{table}/p{i}")) for i in range(start, end)]


def _create_table(c, name: str) -> None:
    c.create_table(hms.Table(tableName=name, dbName="bench", sd=_sd(), parameters={}, partitionKeys=KEYS,
                             tableType="EXTERNAL_TABLE"))


def populate(workdir: Path, small: int, big: int) -> None:
    server, c = empty_metastore(workdir, DATABASE)
    for name, size in (("small", small), ("big", big)):
        _create_table(c, name)
        for start in range(0, size, 5000):
            c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName=name, parts=_partitions(
                name, start, min(size, start + 5000)), ifNotExists=False, needResult=False))
    c.close()
    server.stop()


def alter_partitions(server: Server, repeats: int) -> dict[str, dict[str, float]]:
    c = client(server.port)
    targets = {name: c.get_partition("bench", name, ["2024-00000", "7"]) for name in ("small", "big")}
    samples: dict[str, list[float]] = {name: [] for name in targets}
    cpu: dict[str, float] = {name: 0.0 for name in targets}
    for n in range(repeats + 1):
        for name, part in targets.items():   # interleaved: both tables see the same machine
            part.parameters["bench.round"] = str(n)
            cpu_before, started = server.cpu_seconds(), time.perf_counter()
            c.alter_partition("bench", name, part)
            if n:   # the first round warms up
                samples[name].append(time.perf_counter() - started)
                cpu[name] += server.cpu_seconds() - cpu_before
    c.close()
    return {name: {"p50_ms": statistics.median(samples[name]) * 1e3, "server_cpu_ms": cpu[name] / repeats * 1e3}
            for name in targets}


def add_partitions(server: Server, total: int, batch: int) -> dict[str, float]:
    c = client(server.port)
    _create_table(c, "growing")
    rates = []
    started_all = time.perf_counter()
    for start in range(0, total, batch):
        parts = _partitions("growing", start, min(total, start + batch))
        started = time.perf_counter()
        c.add_partitions_req(hms.AddPartitionsRequest(dbName="bench", tblName="growing", parts=parts,
                                                      ifNotExists=False, needResult=False))
        rates.append(len(parts) / (time.perf_counter() - started))
    overall = total / (time.perf_counter() - started_all)
    c.close()
    return {"first_batch_per_s": rates[0], "last_batch_per_s": rates[-1], "overall_per_s": overall,
            "batches": len(rates)}


def report(results: dict, out_dir: Path) -> None:
    alter, add = results["alter_partition"], results["add_partitions"]
    lines = [f"+{results['db_latency_ms']} ms per database round trip, cache server",
             f"{'alter_partition in':28} {'p50':>9} {'server cpu':>11}",
             *(f"{results[name + '_partitions']:>7} partitions{'':10} {alter[name]['p50_ms']:7.2f}ms "
               f"{alter[name]['server_cpu_ms']:9.2f}ms" for name in ("small", "big")),
             f"big / small: {alter['big']['p50_ms'] / alter['small']['p50_ms']:.2f}x (p50), "
             f"{alter['big']['server_cpu_ms'] / max(alter['small']['server_cpu_ms'], 1e-9):.2f}x (server cpu)",
             f"add_partitions, batches of {results['batch']} into a table growing to {results['big_partitions']}: "
             f"first batch {add['first_batch_per_s']:.0f}/s, last {add['last_batch_per_s']:.0f}/s, "
             f"overall {add['overall_per_s']:.0f}/s"]
    print("\n".join(lines))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "write_bench.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "write_bench.json").write_text(json.dumps(results, indent=2))
    bars = {name: (f"{results[name + '_partitions']} partitions", [alter[name]["p50_ms"], alter[name]["server_cpu_ms"]])
            for name in ("small", "big")}
    paired_bars(out_dir / "write_bench.png", ["alter_partition p50 (ms)", "alter_partition server cpu (ms)"],
                bars["small"], bars["big"],
                "ms (log scale)", f"Writes against table size, +{results['db_latency_ms']} ms per round trip")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--big", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--db-latency-ms", type=float, default=1.0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        populate(workdir, args.small, args.big)
        server = Server(workdir, cache=True, latency_ms=args.db_latency_ms, database=DATABASE)
        server.wait_ready()
        results = {"db_latency_ms": args.db_latency_ms, "small_partitions": args.small, "big_partitions": args.big,
                   "batch": args.batch, "alter_partition": alter_partitions(server, args.repeats),
                   "add_partitions": add_partitions(server, args.big, args.batch)}
        server.stop()
    report(results, Path(args.out))


if __name__ == "__main__":
    main()
