"""Prewarm and --no-cache get_partitions with one core burned: this tree against an earlier commit, and Java.

    python bench/loaded_rows.py [--old REV] [--rounds 3] [--listings 3] [--no-burn] [--skip-populate] [--skip-java]
                                [--db-latency-ms 1] [--out bench/results]

against_java.py's rows 6 and 9 (listing), on MariaDB through its latency relay (+1 ms per round trip), while a
process spins on one core (burn.py; `--no-burn` for none): on a 2-core machine what a server overlaps then
shares one core with the database and the relay. The earlier commit is checked out into a temporary git
worktree; both trees' bytecode is compiled first, as for an installed server.

- prewarm: a cache server of each tree started alone on the 100k-partition / 1,000-table database, process start to
  /readyz 200, and the CPU of the server with its workers (reaped with it); `--rounds` alternating rounds.
- MariaDB's CPU beside each (from /proc: with one core burned, the server, its workers, the database and the relay
  share the other, so their CPU together bounds the time from below).
- listing: a --no-cache server of each tree and the Java HMS 2.3.10 up at once, get_partitions of the 10k-partition
  table received raw, `--listings` per server per round, `--rounds` rounds whose order rotates. The two trees'
  replies are compared byte for byte first.

Prints medians and ratios, writes loaded_rows-STAMP.{json,png} under --out.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from against_java import (  # noqa: E402
    LISTED,
    Plan,
    Proxy,
    Target,
    alternate,
    populate_reads,
    start_java,
    warm_up,
)
from burn import BurnedCore  # noqa: E402
from cache_bench import paired_bars  # noqa: E402
from limit_bench import raw_listing_seconds, recorded_reply, request_bytes  # noqa: E402
from lock_bench import cpu_seconds, java_user  # noqa: E402
from upstream_bench import MARIADB, DelayedRelay  # noqa: E402

PLAN = Plan(prefix="hmsbench_loaded")   # against_java's sizes, in a database of this bench's own


@contextlib.contextmanager
def running_from(tree: Path) -> Any:
    """Servers started inside the block run `tree`'s hmsproxy (they inherit PYTHONPATH)."""
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree / "src")
    try:
        yield
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def database_cpu_s() -> float:
    """MariaDB's CPU so far (the server process on this machine, whoever its clients are: other work on the same
    database counts too, which alternating rounds spread over both trees)."""
    pid = subprocess.run(["pidof", "mariadbd", "mysqld"], capture_output=True, text=True).stdout.split()
    return cpu_seconds(int(pid[0])) if pid else float("nan")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def prewarm(tree: Path, workdir: Path, db_port: int) -> dict[str, float]:
    """Seconds from a cache server's start to /readyz 200, the CPU of the server and its workers, and MariaDB's."""
    cpu, db_cpu = children_cpu_s(), database_cpu_s()
    with running_from(tree):
        server = Proxy(workdir, db_port, PLAN.read_db)
    try:
        seconds = server.ready_s()
        db_cpu = database_cpu_s() - db_cpu
        loaded = server.metric("hmsproxy_prewarm_partitions_loaded")
    finally:
        server.stop()
    if loaded != PLAN.partitions:
        raise SystemExit(f"{PLAN.read_db} holds {loaded:.0f} partitions, not {PLAN.partitions}: run without "
                         "--skip-populate")
    return {"seconds": seconds, "cpu_s": children_cpu_s() - cpu, "db_cpu_s": db_cpu}


def listings(target: Target, request: bytes, size: int, count: int) -> dict[str, Any]:
    cpu, db_cpu = target.cpu_seconds(), database_cpu_s()
    samples = raw_listing_seconds(target.port, request, size, count)
    return {"samples": samples, "cpu_s": target.cpu_seconds() - cpu, "db_cpu_s": database_cpu_s() - db_cpu}


def measure(trees: dict[str, Path], workdir: Path, relay_port: int, args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    print("prewarms, each server alone ...", flush=True)
    results["prewarm"] = alternate(trees, args.rounds, lambda tree: prewarm(
        tree, workdir / f"prewarm-{tree.name}", relay_port))
    print("--no-cache listings ...", flush=True)
    with contextlib.ExitStack() as stack:
        targets: dict[str, Target] = {}
        for label, tree in trees.items():
            with running_from(tree):
                server = Proxy(workdir / f"nocache-{label}", relay_port, PLAN.read_db, "--no-cache")
            stack.callback(server.stop)
            targets[label] = server.target(label)
        if not args.skip_java:
            java, targets["java"] = start_java(workdir / "java", relay_port, PLAN.read_db)
            stack.enter_context(java)
        request = request_bytes("get_partitions", db_name="bench", tbl_name=LISTED, max_parts=-1)
        replies = {label: recorded_reply(t.port, "get_partitions", db_name="bench", tbl_name=LISTED, max_parts=-1)
                   for label, t in targets.items()}
        if replies["new"] != replies["old"]:
            raise SystemExit("the two trees' --no-cache get_partitions replies differ")
        for target in targets.values():
            warm_up(target)
        results["listing"] = alternate(targets, args.rounds, lambda t: listings(
            t, request, len(replies[t.name]), args.listings))
        results["reply_bytes"] = {label: len(reply) for label, reply in replies.items()}
    return results


def medians(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per server: prewarm seconds and CPU (median of rounds), listing ms (median of all) and CPU ms per listing."""
    out: dict[str, dict[str, float]] = {}
    for label, runs in results["prewarm"].items():
        if isinstance(runs, list):
            out.setdefault(label, {}).update(prewarm_s=statistics.median(r["seconds"] for r in runs),
                                             prewarm_cpu_s=statistics.median(r["cpu_s"] for r in runs),
                                             prewarm_db_cpu_s=statistics.median(r["db_cpu_s"] for r in runs))
    for label, runs in results["listing"].items():
        if isinstance(runs, list):
            samples = [s for r in runs for s in r["samples"]]
            out.setdefault(label, {}).update(listing_ms=statistics.median(samples) * 1e3,
                                             listing_cpu_ms=sum(r["cpu_s"] for r in runs) / len(samples) * 1e3,
                                             listing_db_cpu_ms=sum(r["db_cpu_s"] for r in runs) / len(samples) * 1e3)
    return out


def report(results: dict[str, Any], args: argparse.Namespace) -> str:
    m = medians(results)
    old, new, java = m["old"], m["new"], m.get("java", {})
    rows = (("prewarm 100k / 1000 tables (s)", "prewarm_s", "<= 5 s"),
            ("  CPU of server and workers (s)", "prewarm_cpu_s", ""),
            ("  CPU of MariaDB (s)", "prewarm_db_cpu_s", ""),
            ("--no-cache get_partitions 10k raw (ms)", "listing_ms", "new/Java <= 1.0"),
            ("  server CPU per listing (ms)", "listing_cpu_ms", ""),
            ("  MariaDB CPU per listing (ms)", "listing_db_cpu_ms", ""))
    lines = [f"{'':40} {'old ' + results['old']:>12} {'new':>10} {'new/old':>8} {'Java':>10} {'new/Java':>9}  goal"]
    for title, key, goal in rows:
        java_value = java.get(key)
        java_text = f"{java_value:10.1f} {new[key] / java_value:8.3f}x" if java_value else f"{'—':>10} {'':9}"
        lines.append(f"{title:40} {old[key]:12.2f} {new[key]:10.2f} {new[key] / old[key]:7.3f}x {java_text}  {goal}")
    burn = f"one core burned (the burner had {results['burner_share']:.2f} of a core)" if args.burn else "no burner"
    lines.append(f"+{args.db_latency_ms:g} ms per round trip; {burn}; medians of {args.rounds} alternating rounds "
                 f"({args.listings} listings per server per round); {os.cpu_count()} cores")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--listings", type=int, default=3, help="listings per server per round")
    parser.add_argument("--no-burn", dest="burn", action="store_false", help="measure without the burner")
    parser.add_argument("--skip-populate", action="store_true", help=f"reuse {PLAN.read_db}")
    parser.add_argument("--skip-java", action="store_true", help="the two trees only")
    parser.add_argument("--db-latency-ms", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    old_rev = subprocess.run(["git", "rev-parse", "--short", args.old], capture_output=True, text=True, check=True,
                             cwd=HERE).stdout.strip()
    java_user()
    with tempfile.TemporaryDirectory() as tmp, DelayedRelay(MARIADB, args.db_latency_ms) as relay:
        workdir = Path(tmp)
        if not args.skip_populate:
            print(f"populating {PLAN.read_db} ...", flush=True)
            populate_reads(workdir / "populate", PLAN)
        old_tree = workdir / "old"
        subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), old_rev], check=True, cwd=HERE,
                       capture_output=True)
        try:
            trees = {"new": HERE.parent, "old": old_tree}
            for tree in trees.values():   # as `pip install` compiles an installed server's modules
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "src" / "hmsproxy")], check=True)
            with BurnedCore(args.burn) as burner:
                results = measure(trees, workdir, relay.port, args)
            results["old"], results["burner_share"] = old_rev, burner.share
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=HERE, capture_output=True)
    text = report(results, args)
    print(text)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results["medians"], results["args"] = medians(results), {k: str(v) for k, v in vars(args).items()}
    (args.out / f"loaded_rows-{stamp}.json").write_text(json.dumps(results, indent=1))
    m = results["medians"]
    keys = ["prewarm_s", "prewarm_cpu_s", "prewarm_db_cpu_s", "listing_ms", "listing_cpu_ms", "listing_db_cpu_ms"]
    paired_bars(args.out / f"loaded_rows-{stamp}.png", keys, (f"old {old_rev}", [m["old"][k] for k in keys]),
                ("new", [m["new"][k] for k in keys]), "value (log scale)",
                f"prewarm and --no-cache listing, {'one core burned' if args.burn else 'no burner'}")


if __name__ == "__main__":
    main()
