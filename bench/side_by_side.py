"""This tree's hmsproxy against an earlier commit's, side by side on the same data: did a change cost speed?

    python bench/side_by_side.py [--old REV] [--rounds 8] [--clients 8] [--seconds 5] [--partitions 10000]

The old commit is checked out into a temporary git worktree; each tree serves its own copy of one SQLite
database (populated once), cache on. In alternating rounds (the order flipping each round, so a machine's drift
hits both alike) it measures what bench/against_java.py rows 1-3 measure without the Java HMS:
- get_table p50 of one thriftpy2 client (decoded), over `--latency-calls` calls;
- get_table from `--clients` processes: calls per second, and the server's CPU per call (from /proc);
- get_partitions of a `--partitions`-partition table received raw by one client (ms).
Prints medians and new/old ratios, writes JSON and a PNG under --out.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cache_bench import client, paired_bars  # noqa: E402
from limit_bench import (  # noqa: E402
    Hmsproxy,
    populate,
    raw_listing_seconds,
    recorded_reply,
    request_bytes,
    throughput,
)

ROWS = (("get_table_p50_ms", "get_table p50, one client (ms)"), ("calls_per_s", "get_table, N clients (calls/s)"),
        ("cpu_us_per_call", "server CPU per call (us)"), ("listing_ms", "get_partitions, raw (ms)"))


def served_by(tree: Path, workdir: Path) -> Hmsproxy:
    """`hmsproxy serve` from `tree`'s sources on workdir's metastore.db."""
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree / "src")
    try:
        return Hmsproxy(workdir)
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def get_table_p50_ms(port: int, calls: int) -> float:
    c = client(port)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        c.get_table("bench", "small_0001")
        samples.append(time.perf_counter() - started)
    c.close()
    return statistics.median(samples) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--latency-calls", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    old_rev = subprocess.run(["git", "rev-parse", "--short", args.old], capture_output=True, text=True, check=True,
                             cwd=HERE).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = Path(tmp) / "old-tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), old_rev], check=True, cwd=HERE,
                       capture_output=True)
        try:
            samples = measure({"new": HERE.parent, "old": old_tree}, Path(tmp), args)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=HERE, capture_output=True)
    report(samples, old_rev, args)


def measure(trees: dict[str, Path], tmp: Path, args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    seed = served_by(trees["new"], tmp / "seed")
    populate(seed.port, args.partitions)
    seed.stop()
    for label in trees:
        (tmp / label).mkdir()
        shutil.copy(tmp / "seed" / "metastore.db", tmp / label / "metastore.db")
    servers = {label: served_by(tree, tmp / label) for label, tree in trees.items()}
    samples: dict[str, dict[str, list[float]]] = {label: {key: [] for key, _ in ROWS} for label in trees}
    try:
        listing = request_bytes("get_partitions", db_name="bench", tbl_name="parts", max_parts=-1)
        sizes = {label: len(recorded_reply(s.port, "get_partitions", db_name="bench", tbl_name="parts", max_parts=-1))
                 for label, s in servers.items()}
        assert len(set(sizes.values())) == 1, f"the trees answer get_partitions differently: {sizes}"
        for round_number in range(args.rounds):
            order = list(servers.items()) if round_number % 2 == 0 else list(reversed(servers.items()))
            for label, server in order:
                row = samples[label]
                row["get_table_p50_ms"].append(get_table_p50_ms(server.port, args.latency_calls))
                for key, value in throughput(server, args.clients, args.seconds).items():
                    row[key].append(value)
                row["listing_ms"].append(1e3 * statistics.median(
                    raw_listing_seconds(server.port, listing, sizes[label], 5)))
    finally:
        for server in servers.values():
            server.stop()
    return samples


def report(samples: dict[str, dict[str, list[float]]], old_rev: str, args: argparse.Namespace) -> None:
    medians = {label: {key: statistics.median(values) for key, values in row.items()} for label, row in samples.items()}
    lines = [f"{'':36} {'old ' + old_rev:>14} {'new (this tree)':>16} {'new/old':>8}"]
    for key, title in ROWS:
        old, new = medians["old"][key], medians["new"][key]
        lines.append(f"{title.replace('N clients', f'{args.clients} clients'):36} {old:14.3f} {new:16.3f} "
                     f"{new / old:7.3f}x")
    lines.append(f"medians of {args.rounds} alternating rounds; {args.partitions:,} partitions; SQLite; cache on")
    print("\n".join(lines))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out / f"side_by_side-{stamp}.json").write_text(json.dumps(
        {"old": old_rev, "args": {k: str(v) for k, v in vars(args).items()}, "samples": samples, "medians": medians},
        indent=2))
    paired_bars(args.out / f"side_by_side-{stamp}.png", [title for _, title in ROWS],
                (f"old {old_rev}", [medians["old"][key] for key, _ in ROWS]),
                ("new", [medians["new"][key] for key, _ in ROWS]), "value (log scale)",
                "hmsproxy: this tree against an earlier commit")


if __name__ == "__main__":
    main()
