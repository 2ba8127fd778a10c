"""Consistency checker: two hmsproxy instances on one database, writes through A, reads through B.

    python bench/consistency.py [--backend mariadb|postgres] [--writers 2] [--readers 4] [--ops 300]
                                [--out bench/results]

Also a library: `run(backend, workdir, Config(...))` starts the two servers on a fresh database, runs both parts
and returns a `Report`; `check(server_a, server_b, Config(...))` runs them against servers already started.

Snapshot part (a transactional table, `transactional=true`, insert-only)
    Writers (threads, own clients, through A) are serialized by one lock held for a whole transaction:
    open_txns, allocate_table_write_ids -> w, alter_table_req(writeId=w) setting parameter `version` = str(w),
    then commit_txn (or, for a fraction of the writes, abort_txn). So the metastore's `version` only grows, and
    equals the write id of the latest alter, committed or not: like Hive, an abort does not undo the metadata
    the aborted transaction wrote. Readers (threads, own clients, through B) build a snapshot as a Hive reader
    does (get_open_txns -> ValidTxnList -> get_valid_write_ids -> ValidWriteIdList), send it with
    get_table_req(validWriteIdList=..., id=<table id>) and record (snapshot, version read).

    "Stale", exactly: let C be the write ids whose transactions committed (known once the writers are done)
    and, for a read with snapshot S, floor(S) = max({w in C : S.is_valid(w)} | {0}): the newest committed write
    the reader's snapshot includes. The read is stale iff version < floor(S). Any version >= floor(S) is
    allowed: the state after write floor(S) committed has version >= floor(S) forever after (writes are
    serialized and versions grow), and an answer newer than the snapshot (an open or aborted write's
    metadata, or commits after the snapshot) is what Hive's own database-backed reads return too, and what the
    cache's "as fresh as the snapshot or newer" rule allows.

    Per reader, a "regression" is a read whose version is below the floor of one of that reader's earlier
    snapshots (the reader had already been promised that committed state), and a "snapshot regression" is a
    snapshot whose floor is below an earlier snapshot's (B reported an older transaction state). Both count as
    monotonicity violations. A raw decrease of the version between two reads of one reader is *not* a
    violation by itself (the higher version may have been an open write the later snapshot still excludes, and
    the cache may then answer the committed state); they are counted for information only. Also counted: reads
    whose snapshot treats a write id as valid that in the end aborted or never existed ("phantom" snapshots).

Eventual part (a non-transactional table)
    Writers through A, serialized by a lock, set parameter `version` to 1, 2, ... and record the monotonic time
    each alter_table call returned. Readers through B poll get_table and record every change of the version they
    see (time of the reply, version). A monotonicity violation is a version lower than one the same reader saw
    before. The visibility lag of version k is (first time any reader got a reply with version >= k) minus (the
    time A's write of k returned); it can be slightly negative (B may see the commit before A's reply arrives).

Every loop has a fixed maximum count and checks one overall deadline; servers are stopped in all cases.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import random
import re
import shutil
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import thriftpy2.rpc

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))  # support.* (fresh databases, server processes)

from hmsproxy.client import reader_snapshot  # noqa: E402
from hmsproxy.hive.write_ids import ValidWriteIdList  # noqa: E402
from hmsproxy.idl import hms  # noqa: E402
from support.databases import fresh_database  # noqa: E402
from support.hmsproxy_server import start_hmsproxy_process  # noqa: E402

DB = "consistency"
ACID_TABLE = "acid_t"
PLAIN_TABLE = "plain_t"


@dataclass
class Config:
    writers: int = 2
    readers: int = 4
    ops: int = 300                  # writes per part
    abort_fraction: float = 0.1     # snapshot part: writes aborted instead of committed
    think_ms: float = 20.0          # writers pause uniform(0, 2*think_ms) between writes: a mix of cache-fresh and
                                    # cache-behind moments (pacing, not synchronisation)
    poll_ms: float = 2.0            # readers pause this long between reads (lets writers get the GIL)
    max_reads_per_reader: int = 200_000
    deadline_s: float = 300.0       # for the whole check (both parts)
    seed: int = 1
    server_args: tuple[str, ...] = ("--log-level", "WARNING")


@dataclass
class Report:
    backend: str = ""
    config: dict = field(default_factory=dict)
    # snapshot part
    snapshot_writes: int = 0
    snapshot_commits: int = 0
    snapshot_aborts: int = 0
    snapshot_reads: int = 0
    stale_reads: int = 0
    stale_examples: list = field(default_factory=list)
    snapshot_regressions: dict = field(default_factory=dict)       # reader -> count (version below earlier floor)
    snapshot_floor_regressions: dict = field(default_factory=dict)  # reader -> count (snapshot went backwards)
    snapshot_raw_decreases: dict = field(default_factory=dict)      # reader -> count (information only)
    raw_decrease_examples: list = field(default_factory=list)
    phantom_snapshots: int = 0
    reads_newer_than_snapshot: int = 0
    b_get_table_req_hits: float = 0.0
    b_get_table_req_misses: float = 0.0
    b_snapshot_fallbacks: dict = field(default_factory=dict)
    # eventual part
    eventual_writes: int = 0
    eventual_reads: int = 0
    eventual_monotonicity_violations: dict = field(default_factory=dict)  # reader -> count
    eventual_violation_examples: list = field(default_factory=list)  # a reader's versions around a decrease
    unseen_versions: list = field(default_factory=list)
    lag_ms: list = field(default_factory=list)                     # per version, None when never seen
    lag_p50_ms: float | None = None
    lag_p99_ms: float | None = None
    lag_max_ms: float | None = None
    # overall
    errors: list = field(default_factory=list)
    timed_out: bool = False
    seconds: float = 0.0
    snapshot_points: list = field(default_factory=list)            # (t, version - floor) for the plot

    @property
    def monotonicity_violations(self) -> int:
        return (sum(self.snapshot_regressions.values()) + sum(self.snapshot_floor_regressions.values())
                + sum(self.eventual_monotonicity_violations.values()))

    def summary(self) -> dict:
        out = asdict(self)
        out["monotonicity_violations"] = self.monotonicity_violations
        return out


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.hit = False

    def passed(self) -> bool:
        if time.monotonic() > self.end:
            self.hit = True
        return self.hit

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)


def connect(server: Any):
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=60000)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)]


def _sd() -> Any:
    return hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], inputFormat="i", outputFormat="o",
                                 serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                                 bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)


def _metrics(server: Any) -> str:
    return urllib.request.urlopen(f"http://{server.host}:{server.metrics_port}/metrics", timeout=10).read().decode()


def _counter(body: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in body.splitlines():
        match = re.match(rf"{name}\{{(.*)\}} ([0-9.e+-]+)$", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            total += float(match.group(2))
    return total


def wait_ready(server: Any, deadline: Deadline) -> None:
    """Polls /readyz (prewarm done) until 200 or the deadline."""
    while not deadline.passed():
        try:
            if urllib.request.urlopen(f"http://{server.host}:{server.metrics_port}/readyz", timeout=5).status == 200:
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)  # polling another process's readiness, bounded by the deadline
    raise TimeoutError(f"hmsproxy on port {server.port} not ready before the deadline")


def _until(check: Callable[[], bool], deadline: Deadline, what: str) -> None:
    while not deadline.passed():
        if check():
            return
        time.sleep(0.02)  # polling another process's state, bounded by the deadline
    raise TimeoutError(f"not before the deadline: {what}")


def _guard(report: Report, lock: threading.Lock, name: str, body: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            body()
        except Exception as exc:  # recorded in the report; the check fails on any
            with lock:
                report.errors.append(f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
    return run


def _run_threads(threads: list[threading.Thread], deadline: Deadline) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=deadline.left() + 30)  # loops check the deadline; the margin covers one slow call


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


# ---- snapshot part ------------------------------------------------------------------------------------------

def snapshot_part(a: Any, b: Any, cfg: Config, report: Report, deadline: Deadline) -> None:
    full_name = f"{DB}.{ACID_TABLE}"
    setup = connect(a)
    try:
        base = setup.get_table(DB, ACID_TABLE)
    finally:
        setup.close()
    table_id = base.id
    write_lock, report_lock = threading.Lock(), threading.Lock()
    writes: list[tuple[int, str]] = []          # (write id, "committed" | "aborted")
    done = threading.Event()
    reads: dict[int, list[tuple[float, ValidWriteIdList, int]]] = {r: [] for r in range(cfg.readers)}
    rng = random.Random(cfg.seed)
    aborting = set(rng.sample(range(cfg.ops), round(cfg.ops * cfg.abort_fraction)))
    numbers = iter(range(cfg.ops))
    started = time.monotonic()

    def writer(count: int, seed: int) -> Callable[[], None]:
        def body() -> None:
            client, pause = connect(a), random.Random(seed)
            try:
                for _ in range(count):
                    if deadline.passed():
                        return
                    with write_lock:
                        n = next(numbers)
                        [txn] = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="bench", hostname="w")).txn_ids
                        try:
                            [alloc] = client.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(
                                dbName=DB, tableName=ACID_TABLE, txnIds=[txn])).txnToWriteIds
                            table = copy.copy(base)
                            table.parameters = {**base.parameters, "version": str(alloc.writeId)}
                            client.alter_table_req(hms.AlterTableRequest(dbName=DB, tableName=ACID_TABLE, table=table,
                                                                         writeId=alloc.writeId))
                        except Exception:
                            client.abort_txn(hms.AbortTxnRequest(txnid=txn))
                            raise
                        if n in aborting:
                            client.abort_txn(hms.AbortTxnRequest(txnid=txn))
                            writes.append((alloc.writeId, "aborted"))
                        else:
                            client.commit_txn(hms.CommitTxnRequest(txnid=txn))
                            writes.append((alloc.writeId, "committed"))
                    time.sleep(pause.uniform(0, 2 * cfg.think_ms) / 1000)  # pacing between writes
            finally:
                client.close()
        return body

    finished_at: list[float] = []               # when the last writer finished (relative to `started`)

    def _after_done(mine: list) -> bool:
        return bool(finished_at) and mine[-1][0] > finished_at[0]  # one read taken after the last write

    def reader(r: int) -> Callable[[], None]:
        def body() -> None:
            client, mine = connect(b), reads[r]
            try:
                for _ in range(cfg.max_reads_per_reader):
                    if deadline.passed() or (done.is_set() and mine and _after_done(mine)):
                        return
                    snap = reader_snapshot(client, full_name)
                    table = client.get_table_req(hms.GetTableRequest(
                        dbName=DB, tblName=ACID_TABLE, validWriteIdList=str(snap), id=table_id)).table
                    mine.append((time.monotonic() - started, snap, int(table.parameters.get("version", "0"))))
                    time.sleep(cfg.poll_ms / 1000)  # pacing between reads
            finally:
                client.close()
        return body

    before = _metrics(b)
    writers = [threading.Thread(target=_guard(report, report_lock, f"snapshot writer {w}", writer(n, cfg.seed + w)))
               for w, n in enumerate(_shares(cfg.ops, cfg.writers))]
    readers = [threading.Thread(target=_guard(report, report_lock, f"snapshot reader {r}", reader(r)))
               for r in range(cfg.readers)]
    for t in readers:
        t.start()
    _run_threads(writers, deadline)
    finished_at.append(time.monotonic() - started)
    done.set()
    for t in readers:
        t.join(timeout=deadline.left() + 30)
    after = _metrics(b)

    committed = sorted(w for w, outcome in writes if outcome == "committed")
    known = {w for w, _ in writes}
    committed_set = set(committed)
    aborted = sorted(known - committed_set)
    report.snapshot_writes = len(writes)
    report.snapshot_commits = len(committed)
    report.snapshot_aborts = len(writes) - len(committed)
    for r, mine in reads.items():
        regressions = floor_regressions = raw = 0
        best_floor, last_version, last_snap = 0, None, None
        for t, snap, version in mine:
            floor = max((w for w in committed if snap.is_valid(w)), default=0)
            report.snapshot_reads += 1
            report.snapshot_points.append((round(t, 4), version - floor))
            if version < floor:
                report.stale_reads += 1
                if len(report.stale_examples) < 10:
                    report.stale_examples.append({"reader": r, "t": round(t, 4), "snapshot": str(snap),
                                                  "floor": floor, "version": version})
            if version > floor:
                report.reads_newer_than_snapshot += 1
            if any(snap.is_valid(w) for w in aborted) or snap.high_watermark > max(known, default=0):
                report.phantom_snapshots += 1
            if floor < best_floor:
                floor_regressions += 1
            if version < best_floor:
                regressions += 1
            if last_version is not None and version < last_version:
                raw += 1
                if len(report.raw_decrease_examples) < 10:
                    report.raw_decrease_examples.append({
                        "reader": r, "t": round(t, 4), "before": {"snapshot": str(last_snap), "version": last_version},
                        "now": {"snapshot": str(snap), "version": version, "floor": floor},
                        "earlier_version_committed": last_version in committed_set,
                        "earlier_version_valid_now": snap.is_valid(last_version)})
            best_floor, last_version, last_snap = max(best_floor, floor), version, snap
        report.snapshot_regressions[str(r)] = regressions
        report.snapshot_floor_regressions[str(r)] = floor_regressions
        report.snapshot_raw_decreases[str(r)] = raw
    report.b_get_table_req_hits = (_counter(after, "hmsproxy_cache_lookups_total", method="get_table_req", result="hit")
                                   - _counter(before, "hmsproxy_cache_lookups_total", method="get_table_req",
                                              result="hit"))
    report.b_get_table_req_misses = (
        _counter(after, "hmsproxy_cache_lookups_total", method="get_table_req", result="miss")
        - _counter(before, "hmsproxy_cache_lookups_total", method="get_table_req", result="miss"))
    for reason in ("stale", "table_id", "no_snapshot", "other_table"):
        report.b_snapshot_fallbacks[reason] = (
            _counter(after, "hmsproxy_cache_snapshot_fallbacks_total", reason=reason)
            - _counter(before, "hmsproxy_cache_snapshot_fallbacks_total", reason=reason))


# ---- eventual part ------------------------------------------------------------------------------------------

def eventual_part(a: Any, b: Any, cfg: Config, report: Report, deadline: Deadline) -> None:
    setup = connect(a)
    try:
        base = setup.get_table(DB, PLAIN_TABLE)
    finally:
        setup.close()
    write_lock, report_lock = threading.Lock(), threading.Lock()
    written: dict[int, float] = {}              # version -> time A's alter_table returned
    counter = iter(range(1, cfg.ops + 1))
    final: list[int] = []                       # the last version, once every writer is done
    seen: dict[int, list[tuple[float, int]]] = {r: [] for r in range(cfg.readers)}
    reads_done = [0] * cfg.readers
    violations = [0] * cfg.readers
    started = time.monotonic()

    def writer(count: int, seed: int) -> Callable[[], None]:
        def body() -> None:
            client, pause = connect(a), random.Random(seed)
            try:
                for _ in range(count):
                    if deadline.passed():
                        return
                    with write_lock:
                        k = next(counter)
                        table = copy.copy(base)
                        table.parameters = {**base.parameters, "version": str(k)}
                        client.alter_table(DB, PLAIN_TABLE, table)
                        written[k] = time.monotonic()
                    time.sleep(pause.uniform(0, 2 * cfg.think_ms) / 1000)  # pacing between writes
            finally:
                client.close()
        return body

    def reader(r: int) -> Callable[[], None]:
        def body() -> None:
            client, mine = connect(b), seen[r]
            best = 0
            try:
                for _ in range(cfg.max_reads_per_reader):
                    if deadline.passed() or (final and best >= final[0]):
                        return
                    version = int(client.get_table(DB, PLAIN_TABLE).parameters.get("version", "0"))
                    now = time.monotonic()
                    reads_done[r] += 1
                    if version < best:
                        violations[r] += 1
                        with report_lock:
                            if len(report.eventual_violation_examples) < 10:
                                report.eventual_violation_examples.append({
                                    "reader": r, "t": round(now - started, 4), "version": version, "seen_before": best,
                                    "recent_changes": [(round(t - started, 4), v) for t, v in mine[-4:]],
                                    "writes_returned": {k: round(written[k] - started, 4) for k in
                                                        range(version, best + 2) if k in written}})
                    if not mine or mine[-1][1] != version:
                        mine.append((now, version))
                    best = max(best, version)
                    time.sleep(cfg.poll_ms / 1000)  # pacing between polls
            finally:
                client.close()
        return body

    writers = [threading.Thread(target=_guard(report, report_lock, f"eventual writer {w}", writer(n, cfg.seed + w)))
               for w, n in enumerate(_shares(cfg.ops, cfg.writers))]
    readers = [threading.Thread(target=_guard(report, report_lock, f"eventual reader {r}", reader(r)))
               for r in range(cfg.readers)]
    for t in readers:
        t.start()
    _run_threads(writers, deadline)
    final.append(max(written, default=0))
    for t in readers:
        t.join(timeout=deadline.left() + 30)

    report.eventual_writes = len(written)
    report.eventual_reads = sum(reads_done)
    report.eventual_monotonicity_violations = {str(r): v for r, v in enumerate(violations)}
    changes = sorted(change for mine in seen.values() for change in mine)
    lags: list[float | None] = []
    for k in sorted(written):
        first = next((t for t, version in changes if version >= k), None)
        lags.append(None if first is None else round((first - written[k]) * 1000, 3))
        if first is None:
            report.unseen_versions.append(k)
    report.lag_ms = lags
    finite = [x for x in lags if x is not None]
    report.lag_p50_ms, report.lag_p99_ms = percentile(finite, 50), percentile(finite, 99)
    report.lag_max_ms = max(finite, default=None)


# ---- running ------------------------------------------------------------------------------------------------

def prepare(a: Any, b: Any, deadline: Deadline) -> None:
    """Creates the database and both tables through A and waits until B has them."""
    client = connect(a)
    try:
        client.create_database(hms.Database(name=DB, parameters={}))
        client.create_table(hms.Table(
            tableName=ACID_TABLE, dbName=DB, sd=_sd(), partitionKeys=[], tableType="MANAGED_TABLE",
            parameters={"transactional": "true", "transactional_properties": "insert_only", "version": "0"}))
        client.create_table(hms.Table(tableName=PLAIN_TABLE, dbName=DB, sd=_sd(), partitionKeys=[],
                                      tableType="EXTERNAL_TABLE", parameters={"version": "0"}))
    finally:
        client.close()
    reader = connect(b)
    try:
        def both() -> bool:
            try:
                return all(reader.get_table(DB, t).parameters.get("version") == "0" for t in (ACID_TABLE, PLAIN_TABLE))
            except hms.NoSuchObjectException:
                return False
        _until(both, deadline, "tables created through A visible through B")
    finally:
        reader.close()


def check(a: Any, b: Any, cfg: Config, backend: str = "") -> Report:
    """Both parts against running servers A (writes) and B (reads)."""
    report = Report(backend=backend, config={k: v for k, v in asdict(cfg).items() if k != "server_args"})
    deadline = Deadline(cfg.deadline_s)
    started = time.monotonic()
    try:
        wait_ready(a, deadline)
        wait_ready(b, deadline)
        prepare(a, b, deadline)
        snapshot_part(a, b, cfg, report, deadline)
        eventual_part(a, b, cfg, report, deadline)
    except Exception as exc:
        report.errors.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}")
    report.timed_out = deadline.hit
    report.seconds = round(time.monotonic() - started, 3)
    return report


def run(backend: str, workdir: Path, cfg: Config | None = None) -> Report:
    """A fresh database on the backend, servers A and B as processes on it, both parts; servers always stopped."""
    cfg = cfg or Config()
    with fresh_database(backend, workdir) as url:
        servers = []
        try:
            for name in ("a", "b"):
                servers.append(start_hmsproxy_process(workdir / name, url, *cfg.server_args))
            return check(servers[0], servers[1], cfg, backend)
        finally:
            for server in servers:
                server.stop()


def table(report: Report) -> str:
    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f} ms"

    rows = [
        ("backend", report.backend),
        ("snapshot part: writes (committed/aborted)",
         f"{report.snapshot_writes} ({report.snapshot_commits}/{report.snapshot_aborts})"),
        ("snapshot part: reads through B", report.snapshot_reads),
        ("  stale reads (version < newest committed write id in snapshot)", report.stale_reads),
        ("  monotonicity violations (below an earlier floor / snapshot backwards)",
         f"{sum(report.snapshot_regressions.values())} / {sum(report.snapshot_floor_regressions.values())}"),
        ("  phantom snapshots (aborted/unknown write id valid)", report.phantom_snapshots),
        ("  reads newer than their snapshot (allowed)", report.reads_newer_than_snapshot),
        ("  raw version decreases (allowed, information)", sum(report.snapshot_raw_decreases.values())),
        ("  B get_table_req from cache / from database",
         f"{report.b_get_table_req_hits:.0f} / {report.b_get_table_req_misses:.0f}"),
        ("  B snapshot fallbacks by reason",
         ", ".join(f"{k}={v:.0f}" for k, v in report.b_snapshot_fallbacks.items())),
        ("eventual part: writes / polls through B", f"{report.eventual_writes} / {report.eventual_reads}"),
        ("  monotonicity violations", sum(report.eventual_monotonicity_violations.values())),
        ("  versions never seen through B", len(report.unseen_versions)),
        ("  visibility lag p50 / p99 / max",
         f"{ms(report.lag_p50_ms)} / {ms(report.lag_p99_ms)} / {ms(report.lag_max_ms)}"),
        ("errors / timed out", f"{len(report.errors)} / {report.timed_out}"),
        ("runtime", f"{report.seconds:.1f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def plot(report: Report, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    lags = sorted(x for x in report.lag_ms if x is not None)
    if lags:
        left.step(lags, [(i + 1) / len(lags) for i in range(len(lags))], where="post")
    for q, value in (("p50", report.lag_p50_ms), ("p99", report.lag_p99_ms)):
        if value is not None:
            left.axvline(value, linestyle="--", color="grey")
            left.annotate(f"{q} {value:.0f} ms", (value, 0.05), rotation=90, fontsize=8)
    left.set_xlabel("visibility lag through B (ms)")
    left.set_ylabel("fraction of versions")
    left.set_title(f"eventual part: {report.eventual_writes} writes through A")
    if report.snapshot_points:
        xs, ys = zip(*report.snapshot_points)
        right.scatter(xs, ys, s=4, alpha=0.5)
    right.axhline(0, color="red", linewidth=0.8)
    right.set_xlabel("time (s)")
    right.set_ylabel("version read - newest committed in snapshot")
    right.set_title(f"snapshot part: {report.snapshot_reads} reads, {report.stale_reads} stale (< 0)")
    fig.suptitle(f"hmsproxy consistency, two instances on {report.backend}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("mariadb", "postgres"), default="mariadb")
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--abort-fraction", type=float, default=0.1)
    parser.add_argument("--think-ms", type=float, default=20.0)
    parser.add_argument("--deadline-s", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    cfg = Config(writers=args.writers, readers=args.readers, ops=args.ops, abort_fraction=args.abort_fraction,
                 think_ms=args.think_ms, deadline_s=args.deadline_s)
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = args.out / "work" / f"consistency-{args.backend}"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    try:
        report = run(args.backend, workdir, cfg)
    except BaseException as exc:  # pytest's Skipped (database unreachable) is a BaseException
        if type(exc).__name__ == "Skipped":
            print(f"cannot run: {exc}", file=sys.stderr)
            return 2
        raise
    text = table(report)
    print(text)
    for error in report.errors:
        print(error, file=sys.stderr)
    stem = args.out / f"consistency_{args.backend}"
    stem.with_suffix(".txt").write_text(text + "\n")
    stem.with_suffix(".json").write_text(json.dumps(report.summary(), indent=1))
    plot(report, stem.with_suffix(".png"))
    print(f"wrote {stem}.json, .txt and .png (server logs under {workdir})")
    ok = (not report.errors and not report.timed_out and report.stale_reads == 0
          and report.monotonicity_violations == 0 and report.phantom_snapshots == 0 and not report.unseen_versions)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
