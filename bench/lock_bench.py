"""Lock and Iceberg commit benchmark: hmsproxy against the Java Hive Metastore 2.3.10, both on MariaDB, in one run.

    python bench/lock_bench.py [--rounds 100] [--writers 1,8] [--repeats 3] [--appends 20]
                               [--out-dir bench/results] [--skip-java] [--skip-iceberg]

Both servers run at once, each on its own fresh MariaDB database (127.0.0.1:3306, root): hmsproxy as an
`hmsproxy serve` process with the cache on, the reference HMS (tests/support/reference_hms.py) with Hive's
transaction and lock tables (txn=True) through a TCP user `hmsbench` created here. Every measurement
runs on one server and then on the other, `--repeats` times; the table gives the median over repeats of the
throughput and the median latency over all round trips.

Lock round trip (plain, no transaction): lock(EXCLUSIVE, TABLE) -> check_lock, again after --poll-ms while it
is WAITING -> unlock. Each writer is its own process with its own connection; with several writers either
each locks its own table ("own tables") or all lock one table ("one table", they contend and poll).

Iceberg appends: bench/iceberg_workload.py (pyiceberg's Hive catalog), `--appends` appends per writer of one
row each to one table, all writers on the same table.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import thriftpy2.rpc
from sqlalchemy import create_engine, text

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for extra in (ROOT / "tests", HERE):  # support.* (server processes), iceberg_workload
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from hmsproxy.idl import hms  # noqa: E402
from support.hmsproxy_server import start_hmsproxy_process  # noqa: E402
from support.java_hms import JdbcDatabase  # noqa: E402
from support.reference_hms import start_reference_hms  # noqa: E402
from support.running import RunningServer  # noqa: E402

ADMIN_URL = "mysql+pymysql://root@127.0.0.1:3306/test"
JAVA_USER, JAVA_PASS = "hmsbench", "hmsbench-pw"  # a local TCP user for the reference HMS (it needs a password)
DB = "lockbench"
SERVERS = ("hmsproxy", "java")
LABELS = {"hmsproxy": "hmsproxy (cache on)", "java": "Hive Metastore 2.3.10 (Java)"}


@dataclass
class LockResult:
    """One lock measurement: `writers` processes, `rounds` round trips each."""
    server: str
    writers: int
    shared_table: bool
    rounds_done: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    check_lock_calls: int = 0
    call_ms: dict[str, list[float]] = field(default_factory=dict)  # per Thrift call: lock, check_lock, unlock
    server_cpu_s: float = 0.0
    db_cpu_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.rounds_done / self.seconds if self.seconds else 0.0


def connect(server: RunningServer) -> Any:
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=120_000)


def server_pid(server: RunningServer) -> int:
    """The server's process (both the reference HMS and `hmsproxy serve` run in one the bench started)."""
    if server.pid is None:
        raise LookupError(f"no server process on port {server.port}")
    return server.pid


def mariadb_pid() -> int | None:
    """The local MariaDB server, to count its CPU time too (None when it is not visible from here)."""
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "comm").read_text().strip() in ("mariadbd", "mysqld"):
                return int(proc.name)
        except (OSError, ValueError):
            continue
    return None


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of a process (all its threads) so far; 0 for no process."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------- servers


def create_database(name: str) -> str:
    engine = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return name


def drop_databases(names: list[str]) -> None:
    engine = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for name in names:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
    engine.dispose()


def java_user() -> None:
    """The TCP user the reference HMS logs in with (Hive replaces an empty password with its default)."""
    engine = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"CREATE USER IF NOT EXISTS '{JAVA_USER}'@'127.0.0.1' IDENTIFIED BY '{JAVA_PASS}'"))
        conn.execute(text(f"ALTER USER '{JAVA_USER}'@'127.0.0.1' IDENTIFIED BY '{JAVA_PASS}'"))
        conn.execute(text(f"GRANT ALL PRIVILEGES ON `hmsbench%`.* TO '{JAVA_USER}'@'127.0.0.1'"))
    engine.dispose()


def start_hmsproxy(workdir: Path, db_name: str) -> RunningServer:
    server = start_hmsproxy_process(workdir, f"mysql+pymysql://root@127.0.0.1:3306/{db_name}", "--log-level", "WARNING")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the cache's prewarm of an empty database
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/readyz", timeout=5).status == 200:
                return server
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)  # polling another process's readiness
    server.stop()
    raise TimeoutError("hmsproxy not ready after 120 s")


def start_java(workdir: Path, db_name: str) -> RunningServer:
    if not Path("/usr/share/java/mariadb-java-client.jar").is_file():
        raise RuntimeError("the reference HMS on MariaDB needs Debian's libmariadb-java "
                           "(apt-get install libmariadb-java)")
    java_user()
    database = JdbcDatabase(host="127.0.0.1", port=3306, name=db_name, user=JAVA_USER, password=JAVA_PASS)
    return start_reference_hms(workdir, txn=True, database=database, attempts=1, timeout=300)


def prepare(server: RunningServer, tables: int) -> None:
    """The database and plain tables t0 ... the lock components name."""
    c = connect(server)
    try:
        c.create_database(hms.Database(name=DB, parameters={}, locationUri=f"file:{server.warehouse}/{DB}.db"))
        sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], inputFormat="i", outputFormat="o",
                                   serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                                   bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)
        for i in range(tables):
            c.create_table(hms.Table(tableName=f"t{i}", dbName=DB, sd=sd, partitionKeys=[], parameters={},
                                     tableType="EXTERNAL_TABLE"))
    finally:
        c.close()


# ------------------------------------------------------------------------------------------------ locks


def _lock_worker(host: str, port: int, table: str, rounds: int, poll_s: float, deadline: float, go: Any,
                 out: Any) -> None:
    """One writer process: `rounds` lock round trips; puts (start, end, latencies, checks, call times, errors)."""
    latencies: list[float] = []
    calls: dict[str, list[float]] = {"lock": [], "check_lock": [], "unlock": []}

    def timed(name: str, call: Callable[[], Any]) -> Any:
        t = time.monotonic()
        answer = call()
        calls[name].append((time.monotonic() - t) * 1e3)
        return answer
    errors: list[str] = []
    checks = 0
    c = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, host, port, timeout=120_000)
    request = hms.LockRequest(component=[hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE,
                                                           dbname=DB, tablename=table)],
                              user="lockbench", hostname="localhost")
    go.wait()
    start = time.monotonic()
    for _ in range(rounds):
        if time.monotonic() > deadline:
            errors.append("deadline passed")
            break
        began, lock_id = time.monotonic(), None
        try:
            response = timed("lock", partial(c.lock, request))
            lock_id, state = response.lockid, response.state
            while True:
                if state == hms.LockState.WAITING:
                    time.sleep(poll_s)  # polling for another writer's unlock, as Hive's clients do
                state = timed("check_lock", partial(c.check_lock, hms.CheckLockRequest(lockid=lock_id))).state
                checks += 1
                if state != hms.LockState.WAITING or time.monotonic() > deadline:
                    break
            if state != hms.LockState.ACQUIRED:
                raise RuntimeError(f"lock {lock_id} ended {hms.LockState._VALUES_TO_NAMES.get(state, state)}")
            timed("unlock", partial(c.unlock, hms.UnlockRequest(lockid=lock_id)))
            latencies.append((time.monotonic() - began) * 1e3)
        except Exception as exc:  # counted and reported; the next round goes on
            errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            c.close()  # the connection may be broken: a new one for the release and the next rounds
            c = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, host, port, timeout=120_000)
            if lock_id is not None:
                try:
                    c.unlock(hms.UnlockRequest(lockid=lock_id))
                except Exception:  # already released or never granted
                    pass
    out.put((start, time.monotonic(), latencies, checks, calls, errors))
    c.close()


def lock_run(name: str, server: RunningServer, writers: int, shared_table: bool, rounds: int, poll_s: float,
             budget_s: float) -> LockResult:
    ctx = multiprocessing.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    deadline = time.monotonic() + budget_s
    procs = [ctx.Process(target=_lock_worker, args=(server.host, server.port, "t0" if shared_table else f"t{i}",
                                                    rounds, poll_s, deadline, go, out)) for i in range(writers)]
    for p in procs:
        p.start()
    time.sleep(0.5)  # let every writer connect before the start signal (pacing only; start times are measured)
    pid, db_pid = server_pid(server), mariadb_pid()
    cpu_before, db_cpu_before = cpu_seconds(pid), cpu_seconds(db_pid)
    go.set()
    reports = [out.get(timeout=budget_s + 60) for _ in procs]
    cpu, db_cpu = cpu_seconds(pid) - cpu_before, cpu_seconds(db_pid) - db_cpu_before
    for p in procs:
        p.join(timeout=30)
    result = LockResult(server=name, writers=writers, shared_table=shared_table)
    result.seconds = max(r[1] for r in reports) - min(r[0] for r in reports)
    result.server_cpu_s, result.db_cpu_s = cpu, db_cpu
    for _, _, latencies, checks, calls, errors in reports:
        result.latencies_ms += latencies
        result.check_lock_calls += checks
        result.errors += errors
        for call, times in calls.items():
            result.call_ms.setdefault(call, []).extend(times)
    result.rounds_done = len(result.latencies_ms)
    return result


# ---------------------------------------------------------------------------------------------- iceberg


def iceberg_run(server: RunningServer, writers: int, appends: int, repeat: int, budget_s: float) -> dict[str, Any]:
    """One Iceberg measurement (bench/iceberg_workload.py), summarised like a lock one."""
    import iceberg_workload  # bench/iceberg_workload.py

    pid = server_pid(server)
    cpu_before = cpu_seconds(pid)
    report = iceberg_workload.run([server.uri], str(server.warehouse), writers, appends, namespace="icebench",
                                  table=f"appends_w{writers}_r{repeat}", deadline_s=budget_s)
    cpu = cpu_seconds(pid) - cpu_before
    done = max(report.acknowledged, 1)
    return {"per_s": report.appends_per_second(), "ms_per_op": report.seconds * 1e3 * writers / done,
            "cpu_ms_per_op": cpu * 1e3 / done, "errors": len(report.errors),
            "error_examples": sorted(set(report.errors))[:5], "report": asdict(report)}


# ----------------------------------------------------------------------------------------------- report


@dataclass
class Row:
    label: str
    kind: str  # "lock" or "iceberg"
    cells: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # server -> one summary per repeat


def lock_summary(r: LockResult) -> dict[str, Any]:
    return {"per_s": r.per_second, "ms_per_op": statistics.median(r.latencies_ms) if r.latencies_ms else None,
            "cpu_ms_per_op": r.server_cpu_s * 1e3 / max(r.rounds_done, 1),
            "db_cpu_ms_per_op": r.db_cpu_s * 1e3 / max(r.rounds_done, 1), "errors": len(r.errors),
            "error_examples": sorted(set(r.errors))[:5], "rounds": r.rounds_done, "seconds": r.seconds,
            "checks_per_round": r.check_lock_calls / max(r.rounds_done, 1),
            "latencies_ms": r.latencies_ms, "call_ms": r.call_ms}


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cell(row: Row, server: str) -> dict[str, Any] | None:
    """One server's repeats of one row: medians over repeats (lock latency: over all round trips)."""
    runs = [run for run in row.cells.get(server, []) if "failed" not in run]
    failed = [run["failed"] for run in row.cells.get(server, []) if "failed" in run]
    if not runs:
        return {"failed": failed[0]} if failed else None
    out = {key: _median([run[key] for run in runs]) for key in ("per_s", "ms_per_op", "cpu_ms_per_op")}
    out["errors"] = sum(run["errors"] for run in runs) + len(failed)
    if row.kind == "lock":
        out["ms_per_op"] = _median([x for run in runs for x in run["latencies_ms"]])
        out["checks_per_round"] = _median([run["checks_per_round"] for run in runs])
        out["db_cpu_ms_per_op"] = _median([run["db_cpu_ms_per_op"] for run in runs])
        out["call_p50_ms"] = {call: _median([x for run in runs for x in run["call_ms"].get(call, [])])
                              for call in ("lock", "check_lock", "unlock")}
    else:
        reports = [run["report"] for run in runs]
        out["totals"] = {key: sum(r[key] for r in reports) for key in
                         ("acknowledged", "rows_expected", "rows_found", "snapshots_found", "commit_retries")}
    return out


def _num(x: float | None, width: int, digits: int = 1) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:{width}.{digits}f}"


def table_text(rows: list[Row], servers: tuple[str, ...]) -> str:
    lines = [f"{'measurement':30}" + "".join(f" | {s + ' /s':>13} {'ms/op':>7} {'cpu/op':>7} {'err':>4}"
                                             for s in servers) + (" | hmsproxy/java" if len(servers) == 2 else "")]
    notes: list[str] = []
    for row in rows:
        line, rates = f"{row.label:30}", []
        for server in servers:
            c = cell(row, server)
            if c is None or "failed" in c:
                rates.append(None)
                line += f" | {'failed' if c else 'not run':>13} {'-':>7} {'-':>7} {'-':>4}"
                if c:
                    notes.append(f"{row.label}, {server}: {c['failed'].splitlines()[0][:200]}")
                continue
            rates.append(c["per_s"])
            line += f" | {_num(c['per_s'], 13)} {_num(c['ms_per_op'], 7, 2)} {_num(c['cpu_ms_per_op'], 7, 2)} " \
                    f"{c['errors']:>4}"
        if len(servers) == 2:
            line += f" | {rates[0] / rates[1]:12.2f}x" if rates[0] and rates[1] else " |            -"
        lines.append(line)
    lines.append("")
    lines.append("lock rows: per call p50 in ms (lock / check_lock / unlock); check_lock calls and MariaDB CPU ms "
                 "per round trip:")
    for row in (r for r in rows if r.kind == "lock"):
        parts = []
        for server in servers:
            c = cell(row, server)
            if c and "failed" not in c:
                p = c["call_p50_ms"]
                parts.append(f"{server} {_num(p['lock'], 0, 2)} / {_num(p['check_lock'], 0, 2)} / "
                             f"{_num(p['unlock'], 0, 2)}; {c['checks_per_round']:.1f}; "
                             f"{c['db_cpu_ms_per_op']:.2f} db cpu")
        lines.append(f"  {row.label:28}  " + ";  ".join(parts))
    iceberg = [r for r in rows if r.kind == "iceberg"]
    if iceberg:
        lines.append("iceberg rows, over all repeats: appends acknowledged, rows found / expected, snapshots, "
                     "commit retries:")
        for row in iceberg:
            parts = []
            for server in servers:
                c = cell(row, server)
                if c and "failed" not in c:
                    t = c["totals"]
                    parts.append(f"{server} {t['acknowledged']}, {t['rows_found']}/{t['rows_expected']}, "
                                 f"{t['snapshots_found']}, {t['commit_retries']}")
            lines.append(f"  {row.label:28}  " + ";  ".join(parts))
    lines.append("/s: median over repeats of round trips (appends) per second, all writers together. ms/op: lock, "
                 "median latency of one round trip over all repeats; Iceberg, wall time x writers / appends. "
                 "cpu/op: server process CPU ms per round trip (append). err: failed round trips (appends)")
    for row in rows:
        for server in servers:
            for run in row.cells.get(server, []):
                for example in run.get("error_examples", [])[:2]:
                    notes.append(f"{row.label}, {server}: {example}")
    return "\n".join(lines + sorted(set(notes)))


def plot(rows: list[Row], servers: tuple[str, ...], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ("lock", "iceberg") if any(r.kind == k for r in rows)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4.5), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        mine = [r for r in rows if r.kind == kind]
        width = 0.8 / len(servers)
        for i, server in enumerate(servers):
            cells = [cell(r, server) or {"failed": "not run"} for r in mine]
            xs = [x + (i - (len(servers) - 1) / 2) * width for x in range(len(mine))]
            ax.bar(xs, [c.get("per_s") or 0.0 for c in cells], width, label=LABELS[server])
            for x, c in zip(xs, cells):
                ax.annotate("failed" if "failed" in c else f"{c['per_s']:.0f}", (x, c.get("per_s") or 0.0),
                            ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(mine)), [r.label.replace("lock, ", "").replace("iceberg, ", "") for r in mine],
                      rotation=15, ha="right")
        ax.set_ylabel("round trips / s" if kind == "lock" else "appends / s")
        ax.set_title("lock + check_lock + unlock" if kind == "lock" else "Iceberg appends (pyiceberg)")
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def source_version() -> str:
    commit = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--short", "src"], capture_output=True,
                           text=True).stdout.strip()
    if not dirty:
        return commit
    diff = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD", "--", "src"], capture_output=True).stdout
    return f"{commit} with uncommitted changes (diff sha1 {hashlib.sha1(diff).hexdigest()[:8]})"


# ------------------------------------------------------------------------------------------------- main


def _guarded(what: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:
        print(f"  {what} failed: {type(exc).__name__}: {exc}".splitlines()[0][:400], flush=True)
        return {"failed": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="lock round trips per writer (default 100)")
    parser.add_argument("--writers", default="1,8", help="comma-separated writer counts (default 1,8)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement per server (default 3)")
    parser.add_argument("--appends", type=int, default=10, help="Iceberg appends per writer (default 10)")
    parser.add_argument("--poll-ms", type=float, default=5.0, help="check_lock interval while WAITING (default 5)")
    parser.add_argument("--budget-s", type=float, default=60.0, help="time limit of one measurement (default 60)")
    parser.add_argument("--out-dir", type=Path, default=HERE / "results")
    parser.add_argument("--skip-java", action="store_true", help="measure hmsproxy only")
    parser.add_argument("--skip-iceberg", action="store_true", help="lock round trips only")
    parser.add_argument("--keep-databases", action="store_true", help="leave the MariaDB databases behind")
    args = parser.parse_args(argv)
    writer_counts = [int(w) for w in args.writers.split(",")]
    servers = ("hmsproxy",) if args.skip_java else SERVERS
    args.out_dir.mkdir(parents=True, exist_ok=True)
    workdir = args.out_dir / "work" / "lock_bench"
    shutil.rmtree(workdir, ignore_errors=True)
    suffix = uuid.uuid4().hex[:8]
    db_names = {s: f"hmsbench_{s}_{suffix}" for s in servers}
    running: dict[str, RunningServer] = {}
    rows: list[Row] = []
    started = time.monotonic()
    try:
        print("starting hmsproxy ...", flush=True)
        running["hmsproxy"] = start_hmsproxy(workdir / "hmsproxy", create_database(db_names["hmsproxy"]))
        if "java" in servers:
            print("starting the reference HMS 2.3.10 on MariaDB (schema creation, 10-60 s) ...", flush=True)
            t0 = time.monotonic()
            running["java"] = start_java(workdir / "java", db_names["java"])
            print(f"  started in {time.monotonic() - t0:.0f} s", flush=True)
        for name, server in running.items():
            prepare(server, max(writer_counts))
            lock_run(name, server, 1, False, 20, args.poll_ms / 1e3, args.budget_s)  # warm-up (JIT, pools), dropped
        for w in writer_counts:
            for shared in ([False] if w == 1 else [False, True]):
                label = f"lock, {w} writer{'s' if w > 1 else ''}" + ("" if w == 1 else
                                                                        ", one table" if shared else ", own tables")
                row = Row(label, "lock")
                rows.append(row)
                for repeat in range(args.repeats):
                    for name in servers if repeat % 2 == 0 else servers[::-1]:  # alternate who goes first
                        r = lock_run(name, running[name], w, shared, args.rounds, args.poll_ms / 1e3, args.budget_s)
                        row.cells.setdefault(name, []).append(lock_summary(r))
                        print(f"  {label:32} {name:9} {r.per_second:9.1f}/s  {r.rounds_done} rounds  "
                              f"{len(r.errors)} errors {sorted(set(r.errors))[:2]}", flush=True)
        if not args.skip_iceberg and importlib.util.find_spec("iceberg_workload") is None:
            print("  no bench/iceberg_workload.py: Iceberg rows skipped", flush=True)
        elif not args.skip_iceberg:
            for w in writer_counts:
                row = Row(f"iceberg, {w} writer{'s' if w > 1 else ''}", "iceberg")
                rows.append(row)
                for repeat in range(args.repeats):
                    for name in servers if repeat % 2 == 0 else servers[::-1]:
                        result = _guarded(f"iceberg on {name}", partial(
                            iceberg_run, running[name], w, args.appends, repeat, args.budget_s))
                        row.cells.setdefault(name, []).append(result)
                        if "failed" not in result:
                            r = result["report"]
                            print(f"  {row.label:32} {name:9} {result['per_s']:9.2f}/s  {r['acknowledged']} "
                                  f"acknowledged, {r['commit_retries']} retries, {len(r['errors'])} errors "
                                  f"{r['errors'][:2]}", flush=True)
    finally:
        for server in running.values():
            server.stop()
        if not args.keep_databases:
            drop_databases(list(db_names.values()))
    version = source_version()
    text_out = table_text(rows, servers)
    text_out += (f"\nsrc at {version}; {args.rounds} lock rounds per writer, {args.appends} appends per writer, "
                 f"{args.repeats} repeats, poll {args.poll_ms:g} ms; {os.cpu_count()} cores; "
                 f"{time.monotonic() - started:.0f} s in all")
    print(text_out)
    (args.out_dir / "lock_bench.txt").write_text(text_out + "\n")
    (args.out_dir / "lock_bench.json").write_text(json.dumps(
        {"src": version, "args": {k: str(v) for k, v in vars(args).items()}, "servers": list(servers),
         "rows": [asdict(r) for r in rows]}, indent=1))
    plot(rows, servers, args.out_dir / "lock_bench.png",
         f"hmsproxy vs Hive Metastore 2.3.10 on MariaDB (src {version})")
    print(f"wrote {args.out_dir}/lock_bench.txt, .json and .png (server logs under {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
