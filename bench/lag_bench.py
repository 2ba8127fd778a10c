"""Cross-instance lag and idle database load: two hmsproxy instances on one database, on SQLite, MariaDB and
PostgreSQL, side by side with and without peer wake-ups.

    python bench/lag_bench.py [--writes 200] [--idle-s 10] [--backends sqlite,mariadb,postgres]
                              [--variants wake,poll] [--out bench/results]

Variants: `wake` is the default settings (wake-ups between instances, a head read every --poll-interval-s);
`poll` turns wake-ups off and polls every 0.2 s, the previous default (`--no-peer-wake --poll-interval-s 0.2`).
`default` passes no setting at all: the only variant an hmsproxy without wake-ups (an older checkout, through
PYTHONPATH) can run.

Lag: A and B are `hmsproxy serve` processes. Through A a writer sets the parameter `version` of a table to 1, 2,
... ; after each write returns, the bench reads the table through B (a read every ~1 ms) until it shows
that version, and the lag is the time from A's reply to B's first reply showing it. Writes are paced by a
random pause of 0-20 ms, so they fall anywhere in a poll interval.

Idle load: one instance in this process, with nothing asked of it, after its prewarm and first round; every round
trip it makes to the database (statements, commits and rollbacks, SQLite's BEGIN) over --idle-s seconds is
counted on its engines and given per second. Nothing else reaches its database meanwhile.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import thriftpy2.rpc
from sqlalchemy import event

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))  # support.* (fresh databases, server processes)

import hmsproxy  # noqa: E402
from hmsproxy.idl import hms  # noqa: E402
from hmsproxy.ops.config import Settings  # noqa: E402
from hmsproxy.server import start  # noqa: E402
from support.databases import fresh_database  # noqa: E402
from support.hmsproxy_server import start_hmsproxy_processes  # noqa: E402

VARIANTS: dict[str, tuple[str, ...]] = {
    "wake": (),
    "poll": ("--no-peer-wake", "--poll-interval-s", "0.2"),
    "default": (),
}
IDLE_SETTINGS: dict[str, dict[str, Any]] = {
    "wake": {},
    "poll": {"peer_wake": False, "poll_interval_s": 0.2},
    "default": {},
}
SEEN_TIMEOUT_S = 10.0   # a version not seen through B by then counts as lost
READ_PAUSE_S = 0.001


@dataclass
class Result:
    backend: str
    variant: str
    writes: int = 0
    lag_ms: list[float] = field(default_factory=list)
    lost: int = 0
    lag_p50_ms: float | None = None
    lag_p99_ms: float | None = None
    lag_max_ms: float | None = None
    idle_s: float = 0.0
    idle_round_trips: int = 0
    idle_per_s: float | None = None


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(int(-(-q * len(ordered) // 100)) - 1, 0)]


def _client(host: str, port: int) -> Any:
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, host, port, timeout=60000)


def _table(db: str) -> hms.Table:
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], inputFormat="i", outputFormat="o",
                               serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                               bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)
    return hms.Table(tableName="t", dbName=db, sd=sd, partitionKeys=[], parameters={"version": "0"},
                     tableType="EXTERNAL_TABLE")


def _version(client: Any, db: str) -> int:
    try:
        return int(client.get_table(db, "t").parameters.get("version", "-1"))
    except hms.NoSuchObjectException:
        return -1


def _wait_version(client: Any, db: str, version: int) -> float | None:
    """The time B first showed `version` or later; None past SEEN_TIMEOUT_S."""
    deadline = time.monotonic() + SEEN_TIMEOUT_S
    while time.monotonic() < deadline:
        if _version(client, db) >= version:
            return time.monotonic()
        time.sleep(READ_PAUSE_S)   # pacing the reads, not synchronisation: each read is the measurement
    return None


def measure_lag(backend: str, variant: str, workdir: Path, writes: int, seed: int) -> Result:
    result = Result(backend, variant, writes)
    with fresh_database(backend, workdir) as url:
        a, b = start_hmsproxy_processes([workdir / "a", workdir / "b"], url, "--log-level", "WARNING",
                                        *VARIANTS[variant])
        try:
            ca, cb = _client(a.host, a.port), _client(b.host, b.port)
            db = f"lag_{uuid.uuid4().hex[:8]}"
            ca.create_database(hms.Database(name=db, parameters={}))
            ca.create_table(_table(db))
            if _wait_version(cb, db, 0) is None:
                raise RuntimeError("B never saw the table")
            rng = random.Random(seed)
            for version in range(1, writes + 1):
                time.sleep(rng.uniform(0, 0.02))   # pacing: writes land anywhere in a poll interval
                table = ca.get_table(db, "t")
                table.parameters["version"] = str(version)
                ca.alter_table(db, "t", table)
                written = time.monotonic()
                seen = _wait_version(cb, db, version)
                if seen is None:
                    result.lost += 1
                else:
                    result.lag_ms.append(round((seen - written) * 1000, 3))
            ca.close()
            cb.close()
        finally:
            a.stop()
            b.stop()
    result.lag_p50_ms, result.lag_p99_ms = percentile(result.lag_ms, 50), percentile(result.lag_ms, 99)
    result.lag_max_ms = max(result.lag_ms, default=None)
    return result


def measure_idle(backend: str, variant: str, workdir: Path, seconds: float, result: Result) -> None:
    with fresh_database(backend, workdir) as url:
        server = start(Settings(port=0, metrics_port=0, db=url, warehouse=str(workdir / "warehouse"),
                                log_level="WARNING", **IDLE_SETTINGS[variant]))
        count = [0]
        lock = threading.Lock()

        def round_trip(*_: Any) -> None:
            with lock:
                count[0] += 1

        engines = server.store.delegate.db.engines
        try:
            if server.loader is not None:
                server.loader.complete.wait(60)
            time.sleep(1.0)   # the first rounds' chores (cleaning the log, the first directory lookup) pass
            for engine in engines:
                for name in ("before_cursor_execute", "commit", "rollback"):
                    event.listen(engine, name, round_trip)
            started = time.monotonic()
            time.sleep(seconds)   # the measurement: an idle instance, left alone
            result.idle_s = round(time.monotonic() - started, 3)
            with lock:
                result.idle_round_trips = count[0]
            result.idle_per_s = round(result.idle_round_trips / result.idle_s, 2)
        finally:
            for engine in engines:
                for name in ("before_cursor_execute", "commit", "rollback"):
                    event.remove(engine, name, round_trip)
            server.stop()


def table(results: list[Result]) -> str:
    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"
    lines = [f"{'database':<9} {'variant':<8} {'writes':>6} {'lost':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
             f"{'idle round trips/s':>19}"]
    for r in results:
        lines.append(f"{r.backend:<9} {r.variant:<8} {r.writes:>6} {r.lost:>4} {ms(r.lag_p50_ms):>8} "
                     f"{ms(r.lag_p99_ms):>8} {ms(r.lag_max_ms):>8} {ms(r.idle_per_s):>19}")
    by = {(r.backend, r.variant): r for r in results}
    for backend in dict.fromkeys(r.backend for r in results):
        wake, poll = by.get((backend, "wake")), by.get((backend, "poll"))
        if wake and poll and wake.lag_p99_ms and poll.lag_p99_ms and wake.idle_per_s and poll.idle_per_s:
            lines.append(f"{backend}: p99 lag poll/wake = {poll.lag_p99_ms / wake.lag_p99_ms:.1f}x, "
                         f"idle load wake/poll = {wake.idle_per_s / poll.idle_per_s:.2f}x")
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in results:
        lags = sorted(r.lag_ms)
        if lags:
            left.step(lags, [(i + 1) / len(lags) for i in range(len(lags))], where="post",
                      label=f"{r.backend} {r.variant}")
    left.axvline(50, linestyle="--", color="grey")
    left.set_xscale("log")
    left.set_xlabel("lag through B after A's write returned (ms, log scale)")
    left.set_ylabel("fraction of writes")
    left.legend(fontsize=7)
    names = [f"{r.backend}\n{r.variant}" for r in results]
    right.bar(names, [r.idle_per_s or 0 for r in results])
    right.set_ylabel("database round trips / s of an idle instance")
    right.tick_params(axis="x", labelsize=7)
    fig.suptitle("hmsproxy cross-instance lag and idle database load")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument("--backends", default="sqlite,mariadb,postgres")
    parser.add_argument("--variants", default="wake,poll")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--name", default="lag", help="stem of the output files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    for backend in args.backends.split(","):
        for variant in args.variants.split(","):
            workdir = args.out / "work" / f"lag-{backend}-{variant}"
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            try:
                result = measure_lag(backend, variant, workdir / "lag", args.writes, args.seed)
                measure_idle(backend, variant, workdir / "idle", args.idle_s, result)
            except BaseException as exc:  # pytest's Skipped (database unreachable) is a BaseException
                if type(exc).__name__ == "Skipped":
                    print(f"{backend}: cannot run: {exc}", file=sys.stderr)
                    continue
                raise
            results.append(result)
            print(table([result]).splitlines()[-1], flush=True)
    text = table(results)
    print(f"\nhmsproxy from {Path(hmsproxy.__file__).parent}\n{text}")
    stem = args.out / args.name
    stem.with_suffix(".txt").write_text(text + "\n")
    stem.with_suffix(".json").write_text(json.dumps({"code": str(Path(hmsproxy.__file__).parent),
                                                     "results": [asdict(r) for r in results]}, indent=1))
    plot(results, stem.with_suffix(".png"))
    print(f"wrote {stem}.json, .txt and .png")
    return 0 if all(r.lost == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
