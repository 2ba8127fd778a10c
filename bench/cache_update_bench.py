"""A write's cache update against table size, in process: what CachedStore does to a cached table's partitions
once a write has committed (PartitionSet.with_partitions and without), in tables of --sizes partitions.

    python bench/cache_update_bench.py [--sizes 100,20000,100000] [--repeats 300] [--out bench/results]

Each table is built as prewarm builds it (packed), with realistic partitions (5 columns shared with the table, 2
keys, 3 parameters). Then, per size, each write is repeated on the set the one before it made, as a server's
writes follow each other: altering one partition (a parameter changed), adding a batch of --batch partitions at
the end of the name order (as a growing table gets them), and dropping one partition (added back, untimed, before
the next). It prints the median time of each and its ratio to the smallest table's, and writes
cache_update_bench.{txt,json,png} to --out. The goal (issue 15): no step of a write to one partition that grows
with the table, so ratios near 1 however large the table.

The sizes run interleaved, round after round, so that the machine's drift falls on every size alike.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hmsproxy.idl import hms
from hmsproxy.store.cache.partitions import PartitionSet, PartitionSetBuilder

KEYS = ("ds", "hr")
COLUMNS = [hms.FieldSchema(name=f"c{i}", type="string") for i in range(5)]


def partition(ds: int, hr: int, version: int = 0) -> Any:
    serde = hms.SerDeInfo(serializationLib="s", parameters={"serialization.format": "1"})
    sd = hms.StorageDescriptor(cols=COLUMNS, location=f"s3a://bench/t/ds={ds:06d}/hr={hr:02d}", inputFormat="i",
                               outputFormat="o", parameters={}, serdeInfo=serde)
    return hms.Partition(values=[f"{ds:06d}", f"{hr:02d}"], dbName="bench", tableName="t", sd=sd,
                         parameters={"numFiles": "1", "totalSize": str(ds * 24 + hr), "version": str(version)})


def built(size: int) -> PartitionSet:
    builder = PartitionSetBuilder(PartitionSet(keys=KEYS))
    for start in range(0, size, 10_000):
        builder.add([partition(i // 24, i % 24) for i in range(start, min(size, start + 10_000))])
    return builder.build()


class Table:
    """One table's set, changed write after write, with the time each write's cache update took."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.partitions = built(size)
        self.middle = partition((size // 2) // 24, (size // 2) % 24)
        self.next_added = size
        self.times: dict[str, list[float]] = {"alter one": [], "add a batch": [], "drop one": []}

    def _timed(self, kind: str, write: Callable[[PartitionSet], PartitionSet]) -> None:
        start = time.perf_counter()
        changed = write(self.partitions)
        self.times[kind].append(time.perf_counter() - start)
        self.partitions = changed

    def round(self, number: int, batch: int) -> None:
        altered = partition(int(self.middle.values[0]), int(self.middle.values[1]), number)
        self._timed("alter one", lambda s: s.with_partitions([altered]))
        added = [partition(i // 24, i % 24) for i in range(self.next_added, self.next_added + batch)]
        self.next_added += batch
        self._timed("add a batch", lambda s: s.with_partitions(added))
        name = f"ds={self.middle.values[0]}/hr={self.middle.values[1]}"
        self._timed("drop one", lambda s: s.without([name]))
        self.partitions = self.partitions.with_partitions([altered])


def run(sizes: list[int], repeats: int, batch: int) -> dict[str, dict[str, float]]:
    tables = [Table(size) for size in sizes]
    for number in range(repeats):
        for table in tables:
            table.round(number, batch)
    return {str(t.size): {kind: statistics.median(times) * 1e6 for kind, times in t.times.items()} for t in tables}


def report(results: dict[str, dict[str, float]], batch: int, out_dir: Path) -> None:
    sizes = list(results)
    kinds = list(results[sizes[0]])
    lines = [f"{'write (median µs)':<22}" + "".join(f"{size + ' parts':>16}" for size in sizes)
             + f"{'largest/smallest':>18}"]
    for kind in kinds:
        label = kind if kind != "add a batch" else f"add {batch}"
        lines.append(f"{label:<22}" + "".join(f"{results[size][kind]:>16.1f}" for size in sizes)
                     + f"{results[sizes[-1]][kind] / results[sizes[0]][kind]:>17.2f}x")
    text = "\n".join(lines)
    print(text)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "cache_update_bench.txt").write_text(text + "\n")
    (out_dir / "cache_update_bench.json").write_text(json.dumps({"batch": batch, "median_us": results}, indent=2))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for kind in kinds:
        ax.plot([int(size) for size in sizes], [results[size][kind] for size in sizes], marker="o", label=kind)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions in the table")
    ax.set_ylabel("cache update, median µs")
    ax.set_title("A write's cache update against table size")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "cache_update_bench.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,20000,100000")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    results = run([int(size) for size in args.sizes.split(",")], args.repeats, args.batch)
    report(results, args.batch, Path(args.out))


if __name__ == "__main__":
    main()
