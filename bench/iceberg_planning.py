"""Iceberg scan planning: hmsproxy's server-side planning (REST) against pyiceberg's client-side planning (HiveCatalog).

    python bench/iceberg_planning.py [--quick] [--manifests 100,1000,5000] [--files-per-manifest 20] [--rounds 5]
                                     [--latency-ms 20] [--stores local,s3] [--out bench/results]

One `hmsproxy serve` process (SQLite, its own process so it never shares this one's interpreter lock) holds one
Iceberg table per size: N manifests of --files-per-manifest data files each, written here with pyiceberg's
manifest writer (the data files are never opened by planning, so none is written), listed in one manifest list and
committed as one snapshot through the REST catalog. The table is partitioned by `d` (identity, 100 days; a
manifest holds one day's files, as daily appends would). Each data file has realistic stats on its five columns; the
`id` ranges of a manifest's files interleave with every other manifest's, so a filter on `id` prunes no manifest.

Filters: none; one partition value (`d` = the middle day: 1% of the manifests); 1% of `id`'s range (no manifest
is pruned, 1% of the files are chosen by their column bounds).

Each (store, size, filter) starts the server again, so its first plan is a cold one (empty manifest cache; the table
is loaded before the timer starts), then --rounds rounds alternate the two sides:
- server-side: pyiceberg's RestCatalog `table.scan(row_filter).plan_files()`, listed to the end. pyiceberg plans on
  the server because /v1/config's defaults say scan-planning-mode=server: the time is its POST .../plan, the POST
  .../tasks of every plan task, and the parsing of the file scan tasks into pyiceberg's DataFiles;
- client-side: pyiceberg's HiveCatalog (the Thrift port) on the same table, `plan_files()` on a freshly loaded table:
  pyiceberg reads the manifest list and every manifest not pruned itself (it keeps no manifest's entries between
  plans, so its times are both the cold and the warm comparison).
Both must return the same set of files. Stores: local disk, and moto's S3 server behind a TCP relay adding
--latency-ms to every request/response exchange (object_store_bench's set-up): the server and the client-side
planner both read through the relay (pyiceberg's default FileIO for s3a, PyArrow's). Memory: the server's
hmsproxy_iceberg_manifest_cache_bytes / _entries gauges after the unfiltered plans (every manifest cached).

Goals (printed with pass/fail): warm server-side >= 12x faster than client-side at 1,000 manifests on local disk and
>= 25x at S3 latency; cold server-side no slower than client-side; <= 300 B per cached data-file entry.
Prints a table, writes JSON and a PNG plot to --out.
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tests") not in sys.path:  # support.* (moto's server, the server's process)
    sys.path.insert(0, str(HERE.parent / "tests"))

from object_store_bench import exchange_ms  # noqa: E402
from pyiceberg.catalog.hive import HiveCatalog  # noqa: E402
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest  # noqa: E402
from pyiceberg.conversions import to_bytes  # noqa: E402
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression, EqualTo, GreaterThanOrEqual, LessThan  # noqa: E402
from pyiceberg.io import FileIO, load_file_io  # noqa: E402
from pyiceberg.manifest import (  # noqa: E402
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.table import Table  # noqa: E402
from pyiceberg.table.snapshots import Operation, Snapshot, Summary  # noqa: E402
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import DateType, DoubleType, LongType  # noqa: E402
from upstream_bench import DelayedRelay  # noqa: E402

from support.hmsproxy_server import start_hmsproxy_process  # noqa: E402
from support.iceberg_tables import SCHEMA  # noqa: E402   (the planning tests' columns)
from support.ports import free_port  # noqa: E402
from support.running import RunningServer  # noqa: E402
from support.s3_server import S3Server, running_s3_server  # noqa: E402
from support.scrape import metric  # noqa: E402

SPEC = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="d"))
DAYS = 100
FIRST_DAY = datetime.date(2026, 1, 1)
EPOCH = datetime.date(1970, 1, 1)
ROWS_PER_FILE = 1_000
WRITE_THREADS = 16
GOAL_WARM_LOCAL, GOAL_WARM_S3, GOAL_COLD, GOAL_BYTES = 12.0, 25.0, 1.0, 300.0
GOAL_MANIFESTS = 1_000


def _bounds(day: int, first_id: int) -> tuple[dict[int, bytes], dict[int, bytes]]:
    """Lower and upper bounds of one data file's five columns (field ids 1..5)."""
    lower = {1: to_bytes(LongType(), first_id), 2: b"a", 3: to_bytes(DateType(), day),
             4: to_bytes(DoubleType(), -10.0), 5: b"alpha"}
    upper = {1: to_bytes(LongType(), first_id + ROWS_PER_FILE - 1), 2: b"c", 3: to_bytes(DateType(), day),
             4: to_bytes(DoubleType(), 10.0), 5: b"gamma"}
    return lower, upper


def _data_file(location: str, day: int, first_id: int, rng: random.Random) -> DataFile:
    lower, upper = _bounds(day, first_id)
    date = EPOCH + datetime.timedelta(days=day)
    data_file = DataFile.from_args(
        content=DataFileContent.DATA, file_path=f"{location}/data/d={date.isoformat()}/{uuid.uuid4()}.parquet",
        file_format=FileFormat.PARQUET, partition=Record(day), record_count=ROWS_PER_FILE,
        file_size_in_bytes=rng.randrange(4 << 20, 64 << 20),
        column_sizes={field: rng.randrange(10_000, 2_000_000) for field in range(1, 6)},
        value_counts={field: ROWS_PER_FILE for field in range(1, 6)},
        null_value_counts={field: rng.randrange(0, 20) if field > 3 else 0 for field in range(1, 6)},
        nan_value_counts={4: 0}, lower_bounds=lower, upper_bounds=upper, split_offsets=[4],
        sort_order_id=0)
    data_file.spec_id = SPEC.spec_id
    return data_file


def _epoch_day(date: datetime.date) -> int:
    return (date - EPOCH).days


def write_manifest(io: FileIO, location: str, snapshot_id: int, manifests: int, index: int,
                   files: int) -> ManifestFile:
    """Manifest `index` of `manifests`: `files` data files of one day; file j's ids start at (j*manifests+index)
    * ROWS_PER_FILE, so every manifest spans the whole id range."""
    rng = random.Random(index)
    day = _epoch_day(FIRST_DAY) + index * DAYS // manifests
    output = io.new_output(f"{location}/metadata/{uuid.uuid4()}-m{index}.avro")
    with ManifestWriterV2(SPEC, SCHEMA, output, snapshot_id, "deflate") as writer:
        for j in range(files):
            data_file = _data_file(location, day, (j * manifests + index) * ROWS_PER_FILE, rng)
            writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                               data_file=data_file))
    return writer.to_manifest_file()


def build_table(rest: RestCatalog, name: str, manifests: int, files: int, write_io: FileIO) -> None:
    """A table of `manifests` manifests committed as one append snapshot through the REST catalog."""
    table = rest.create_table(name, SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    location, snapshot_id = table.metadata.location, random.randrange(1, 2**62)
    with ThreadPoolExecutor(WRITE_THREADS) as pool:
        written = list(pool.map(lambda index: write_manifest(write_io, location, snapshot_id, manifests, index, files),
                                range(manifests)))
    list_path = f"{location}/metadata/snap-{snapshot_id}-{uuid.uuid4()}.avro"
    with write_manifest_list(format_version=2, output_file=write_io.new_output(list_path), snapshot_id=snapshot_id,
                             parent_snapshot_id=None, sequence_number=1, avro_compression="deflate") as list_writer:
        list_writer.add_manifests(written)
    snapshot = Snapshot(snapshot_id=snapshot_id, sequence_number=1, timestamp_ms=int(time.time() * 1000),
                        manifest_list=list_path, summary=Summary(operation=Operation.APPEND),
                        schema_id=table.metadata.current_schema_id)
    rest.commit_table(table, (AssertRefSnapshotId(ref="main", snapshot_id=None),), (
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snapshot_id)))


def filters(manifests: int, files: int) -> list[tuple[str, BooleanExpression]]:
    middle_day = FIRST_DAY + datetime.timedelta(days=DAYS // 2)
    ids = manifests * files * ROWS_PER_FILE
    first = ids // 2
    return [("none", AlwaysTrue()),
            ("one partition value", EqualTo("d", middle_day.isoformat())),
            ("1% of id's range", And(GreaterThanOrEqual("id", first), LessThan("id", first + ids // 100)))]


@dataclass
class Store:
    """Where the warehouse is, and how the server and the client-side planner reach it."""

    name: str
    server_args: tuple[str, ...]
    server_env: dict[str, str]
    client_properties: dict[str, str]   # pyiceberg's FileIO properties for the client-side planner (via the relay)
    write_properties: dict[str, str]    # and for writing the tables' manifests (straight to the store)


class Server:
    """hmsproxy serving Thrift, metrics and REST from one workdir; restarted to empty its manifest cache."""

    def __init__(self, workdir: Path, store: Store) -> None:
        self.workdir, self.store = workdir, store
        self.running: RunningServer | None = None

    def start(self) -> RunningServer:
        self.stop()
        rest_port = free_port()
        running = start_hmsproxy_process(
            self.workdir, f"sqlite:///{self.workdir / 'metastore.db'}", "--iceberg-rest-port", str(rest_port),
            "--log-level", "WARNING", *self.store.server_args, environment=self.store.server_env)
        running.rest_port = rest_port
        self.running = running
        return running

    def stop(self) -> None:
        if self.running is not None:
            self.running.stop()
            self.running = None


def timed_plan(table: Table, row_filter: BooleanExpression) -> tuple[float, set[str]]:
    started = time.perf_counter()
    paths = {task.file.file_path for task in table.scan(row_filter=row_filter).plan_files()}
    return time.perf_counter() - started, paths


def raw_plan(running: RunningServer, name: str, row_filter: BooleanExpression) -> tuple[float, set[str]]:
    """The plan's HTTP exchanges alone: POST .../plan, then POST .../tasks for every plan task, bodies parsed as
    JSON only (what pyiceberg's plan_files adds on top is the building of its FileScanTasks)."""
    namespace, table = name.split(".")
    base = f"{running.rest_uri}/v1/namespaces/{namespace}/tables/{table}"
    body = PlanTableScanRequest(filter=None if row_filter == AlwaysTrue() else row_filter)
    started = time.perf_counter()
    plan = _post(f"{base}/plan", body.model_dump_json(by_alias=True, exclude_none=True))
    tasks = list(plan.get("file-scan-tasks", []))
    for token in plan.get("plan-tasks", []):
        tasks.extend(_post(f"{base}/tasks", json.dumps({"plan-task": token}))["file-scan-tasks"])
    return time.perf_counter() - started, {task["data-file"]["file-path"] for task in tasks}


def _post(url: str, body: str) -> dict[str, Any]:
    request = urllib.request.Request(url, data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return answer


def measure(server: Server, store: Store, name: str, label: str, row_filter: BooleanExpression,
            rounds: int) -> dict[str, Any]:
    """One cold server-side plan after a restart, then `rounds` of client-side and warm server-side plans."""
    running = server.start()
    rest = RestCatalog("rest", uri=running.rest_uri)
    cold_s, expected = timed_plan(rest.load_table(name), row_filter)
    client_s: list[float] = []
    warm_s: list[float] = []
    raw_s: list[float] = []
    for _ in range(rounds):
        hive_table = HiveCatalog("hive", uri=running.uri, **store.client_properties).load_table(name)
        seconds, paths = timed_plan(hive_table, row_filter)
        assert paths == expected, f"{label}: client-side planned {len(paths)} files, the server {len(expected)}"
        client_s.append(seconds)
        seconds, paths = timed_plan(rest.load_table(name), row_filter)
        assert paths == expected, f"{label}: a warm plan differs from the cold one"
        warm_s.append(seconds)
        seconds, paths = raw_plan(running, name, row_filter)
        assert paths == expected, f"{label}: the raw plan differs from pyiceberg's"
        raw_s.append(seconds)
    cache_bytes = metric(running, "hmsproxy_iceberg_manifest_cache_bytes")
    cache_entries = metric(running, "hmsproxy_iceberg_manifest_cache_entries")
    client = statistics.median(client_s)
    return {"filter": label, "files": len(expected), "cold_s": cold_s, "client_s": client_s, "warm_s": warm_s,
            "client_median_s": client, "warm_median_s": statistics.median(warm_s),
            "raw_s": raw_s, "raw_median_s": statistics.median(raw_s),
            "warm_speedup": client / statistics.median(warm_s), "cold_speedup": client / cold_s,
            "cache_bytes": cache_bytes, "cache_entries": cache_entries,
            "bytes_per_entry": cache_bytes / cache_entries if cache_entries else None}


def run_store(store: Store, workdir: Path, sizes: list[int], files: int, rounds: int) -> list[dict[str, Any]]:
    server = Server(workdir, store)
    rows = []
    try:
        RestCatalog("rest", uri=server.start().rest_uri).create_namespace("bench")
        for manifests in sizes:
            name = f"bench.m{manifests}"
            started = time.perf_counter()
            assert server.running is not None   # the last measure's server, still running
            build_table(RestCatalog("rest", uri=server.running.rest_uri), name, manifests, files,
                        load_file_io(store.write_properties))
            built_s = time.perf_counter() - started
            print(f"{store.name}: built {name} ({manifests:,} manifests x {files} files) in {built_s:.1f} s",
                  flush=True)
            for label, row_filter in filters(manifests, files):
                measured = measure(server, store, name, label, row_filter, rounds)
                measured.update(store=store.name, manifests=manifests, files_per_manifest=files)
                rows.append(measured)
                print(line(measured), flush=True)
    finally:
        server.stop()
    return rows


HEADER = (f"{'store':6} {'manifests':>9} {'filter':20} {'files':>7} {'client s':>9} {'warm s':>8} {'raw s':>7} "
          f"{'cold s':>8} {'warm x':>7} {'raw x':>6} {'cold x':>7} {'B/entry':>8}")


def line(row: dict[str, Any]) -> str:
    per_entry = f"{row['bytes_per_entry']:.0f}" if row["filter"] == "none" and row["bytes_per_entry"] else ""
    return (f"{row['store']:6} {row['manifests']:9,} {row['filter']:20} {row['files']:7,} "
            f"{row['client_median_s']:9.3f} {row['warm_median_s']:8.3f} {row['raw_median_s']:7.3f} "
            f"{row['cold_s']:8.3f} {row['warm_speedup']:7.1f} {row['client_median_s'] / row['raw_median_s']:6.1f} "
            f"{row['cold_speedup']:7.2f} {per_entry:>8}").rstrip()


def goals(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for row in rows:
        if row["manifests"] == GOAL_MANIFESTS:
            goal = GOAL_WARM_LOCAL if row["store"] == "local" else GOAL_WARM_S3
            out.append(f"warm >= {goal:g}x at {GOAL_MANIFESTS:,} manifests, {row['store']}, filter "
                       f"{row['filter']!r}: {row['warm_speedup']:.1f}x "
                       f"{'PASS' if row['warm_speedup'] >= goal else 'FAIL'}")
    for row in rows:
        out.append(f"cold no slower than client-side, {row['store']} {row['manifests']:,} {row['filter']!r}: "
                   f"{row['cold_speedup']:.2f}x {'PASS' if row['cold_speedup'] >= GOAL_COLD else 'FAIL'}")
    for row in rows:
        if row["filter"] == "none" and row["bytes_per_entry"]:
            out.append(f"<= {GOAL_BYTES:g} B per cached entry, {row['store']} {row['manifests']:,}: "
                       f"{row['bytes_per_entry']:.0f} B ({row['cache_bytes'] / 1e6:.1f} MB / "
                       f"{row['cache_entries']:,.0f} entries) "
                       f"{'PASS' if row['bytes_per_entry'] <= GOAL_BYTES else 'FAIL'}")
    return out


@contextmanager
def stores(names: list[str], latency_ms: float) -> Iterator[tuple[list[Store], dict[str, float]]]:
    """The stores asked for; S3's moto server and relay live until the block ends."""
    chosen = [Store("local", (), {}, {}, {})] if "local" in names else []
    if "s3" not in names:
        yield chosen, {}
        return
    with running_s3_server() as s3, DelayedRelay(("127.0.0.1", s3.port), latency_ms) as relay:
        relayed = f"http://127.0.0.1:{relay.port}"
        bucket = s3.new_bucket()
        chosen.append(Store(
            "s3", ("--warehouse", f"s3a://{bucket}/wh", "--s3-endpoint", relayed, "--s3-path-style", "true"),
            s3.environment(relayed), _pyiceberg_s3(s3, relayed), _pyiceberg_s3(s3, s3.endpoint)))
        yield chosen, {"direct_ms": exchange_ms(s3, s3.endpoint), "relay_ms": exchange_ms(s3, relayed)}


def _pyiceberg_s3(s3: S3Server, endpoint: str) -> dict[str, str]:
    environment = s3.environment(endpoint)
    return {"s3.endpoint": endpoint, "s3.access-key-id": environment["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": environment["AWS_SECRET_ACCESS_KEY"], "s3.region": environment["AWS_REGION"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 manifests, 2 rounds unless --rounds")
    parser.add_argument("--manifests", default="100,1000,5000", help="table sizes, comma-separated")
    parser.add_argument("--files-per-manifest", type=int, default=20)
    parser.add_argument("--rounds", type=int, help="warm rounds of each (store, size, filter); default 5")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="added to every S3 request/response")
    parser.add_argument("--stores", default="local,s3")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    if args.quick:
        args.manifests = "100,1000"
    args.rounds = args.rounds or (2 if args.quick else 5)
    sizes = [int(size) for size in args.manifests.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, \
            stores(args.stores.split(","), args.latency_ms) as (chosen, exchange):
        if exchange:
            print(f"one S3 request: {exchange['direct_ms']:.1f} ms direct, {exchange['relay_ms']:.1f} ms through "
                  f"the relay", flush=True)
        print(HEADER, flush=True)
        for store in chosen:
            rows.extend(run_store(store, Path(tmp) / store.name, sizes, args.files_per_manifest, args.rounds))
    report(rows, exchange, args)


def report(rows: list[dict[str, Any]], exchange: dict[str, float], args: argparse.Namespace) -> None:
    lines = [f"{args.rounds} rounds, medians; {args.files_per_manifest} data files a manifest; S3 at "
             f"+{args.latency_ms:g} ms per request"
             + (f" (one request: {exchange['relay_ms']:.1f} ms through the relay, {exchange['direct_ms']:.1f} "
                "direct)" if exchange else ""),
             "client = pyiceberg HiveCatalog plan_files; warm/cold = pyiceberg RestCatalog plan_files planned by "
             "hmsproxy; raw = the warm plan's HTTP exchanges alone (POST plan + tasks, JSON parsed); "
             "x = client / server (pyiceberg's plan_files on both sides; raw x: client / raw)", HEADER,
             *map(line, rows), "", "goals (on pyiceberg's plan_files, both sides):", *goals(rows)]
    text = "\n".join(lines)
    print("\n" + text)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (args.out / f"iceberg_planning-{stamp}.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "exchange": exchange, "rows": rows, "table": text},
        indent=2))
    plot(args.out / f"iceberg_planning-{stamp}.png", rows, args)


def plot(path: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """One panel a store: seconds per plan against manifests, a line a (side, filter), log scales."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    store_names = sorted({row["store"] for row in rows})
    fig, axes = plt.subplots(1, len(store_names), figsize=(7 * len(store_names), 5), squeeze=False)
    colors = {"none": "tab:blue", "one partition value": "tab:green", "1% of id's range": "tab:orange"}
    for axis, store_name in zip(axes[0], store_names):
        for label, color in colors.items():
            chosen = sorted((row for row in rows if row["store"] == store_name and row["filter"] == label),
                            key=lambda row: row["manifests"])
            sizes = [row["manifests"] for row in chosen]
            for key, style, side in (("client_median_s", "-", "client"), ("cold_s", ":", "server cold"),
                                     ("warm_median_s", "--", "server warm")):
                axis.plot(sizes, [row[key] for row in chosen], style, color=color, marker="o",
                          label=f"{side}, {label}")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("manifests")
        axis.set_ylabel("seconds per plan (median)")
        axis.set_title(store_name + (f" (+{args.latency_ms:g} ms per request)" if store_name == "s3" else ""))
        axis.legend(fontsize=7)
    fig.suptitle(f"Iceberg scan planning: hmsproxy (REST) vs pyiceberg client-side, {args.files_per_manifest} "
                 "files a manifest")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
