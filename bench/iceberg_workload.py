"""Concurrent Iceberg appends through pyiceberg's Hive catalog (a thrift:// URI) or its REST catalog (an http(s)://
URI): the commit protocols a metastore must not break.

`run` creates an Iceberg table, then several writer processes append small batches through one or more
metastore URIs, retrying a commit refused with CommitFailedException as Iceberg writers do (reload the
table, append again). Every row carries (writer, sequence) so the report tells exactly which acknowledged
appends are missing from the table or doubled in it. Used by tests/multi/test_iceberg_commits.py and by
bench/lock_bench.py.
"""
from __future__ import annotations

import multiprocessing
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

RETRIES = 40  # commit attempts per append: a correct server needs a few under contention


@dataclass
class AppendReport:
    acknowledged: int        # appends whose commit returned without error
    rows_expected: int       # rows of the acknowledged appends
    rows_found: int          # rows in the table read back at the end
    snapshots_found: int     # append snapshots in the table's history at the end
    commit_retries: int      # CommitFailedException retries across writers
    errors: list[str]        # anything unexpected, with the writer and the exception text
    seconds: float           # wall time of the append phase
    missing: list[tuple[int, int]] = field(default_factory=list)  # acknowledged (writer, seq) not in the table
    doubled: list[tuple[int, int]] = field(default_factory=list)  # (writer, seq) found more than once

    def appends_per_second(self) -> float:
        return self.acknowledged / self.seconds if self.seconds > 0 else 0.0


def _catalog(uri: str, warehouse_dir: str) -> Any:
    from pyiceberg.catalog.hive import HiveCatalog
    from pyiceberg.catalog.rest import RestCatalog

    if uri.startswith(("http://", "https://")):
        return RestCatalog("rest", uri=uri)

    # Waiting for a lock: a few quick checks, as pyiceberg's defaults but not minutes long.
    return HiveCatalog("hms", uri=uri, warehouse=f"file://{warehouse_dir}", **{
        "lock-check-min-wait-time": "0.05", "lock-check-max-wait-time": "0.5", "lock-check-retries": "8"})


def _schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    return Schema(NestedField(1, "writer", LongType(), required=True), NestedField(2, "seq", LongType(), required=True),
                  NestedField(3, "row", LongType(), required=True))


def _batch(writer: int, seq: int, rows: int) -> Any:
    import pyarrow as pa

    return pa.table({"writer": pa.array([writer] * rows, pa.int64()), "seq": pa.array([seq] * rows, pa.int64()),
                     "row": pa.array(range(rows), pa.int64())},
                    schema=pa.schema([pa.field("writer", pa.int64(), False), pa.field("seq", pa.int64(), False),
                                      pa.field("row", pa.int64(), False)]))


def _writer(index: int, uri: str, warehouse_dir: str, identifier: str, appends: int, rows: int,
            deadline: float, results: Any) -> None:
    """One writer process: its appends, each retried on CommitFailedException with a fresh table."""
    from pyiceberg.exceptions import CommitFailedException

    acknowledged, retries, errors = [], 0, []
    try:
        catalog = _catalog(uri, warehouse_dir)
        for seq in range(appends):
            for _ in range(RETRIES):
                if time.monotonic() > deadline:
                    errors.append(f"writer {index}: deadline passed at append {seq}")
                    break
                try:
                    catalog.load_table(identifier).append(_batch(index, seq, rows))
                    acknowledged.append(seq)
                    break
                except CommitFailedException:
                    retries += 1  # another writer committed first: reload and append again
            else:
                errors.append(f"writer {index}: append {seq} refused {RETRIES} times")
            if errors:
                break
    except Exception:
        errors.append(f"writer {index}: {traceback.format_exc()}")
    results.put((index, acknowledged, retries, errors))


def run(uris: list[str], warehouse_dir: str, writers: int, appends_per_writer: int, *,
        namespace: str, table: str, rows_per_append: int = 1, deadline_s: float = 300.0,
        verify_uri: str | None = None) -> AppendReport:
    """`verify_uri`: the metastore the final table is read from (default the first): across instances a
    read right after another instance's commit may be up to a poll interval old, so a check of what the
    database holds reads through an uncached server."""
    identifier = f"{namespace}.{table}"
    catalog = _catalog(uris[0], warehouse_dir)
    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace(namespace)
    catalog.create_table(identifier, schema=_schema(), location=f"file://{warehouse_dir}/{namespace}/{table}")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    deadline = time.monotonic() + deadline_s
    processes = [context.Process(target=_writer, args=(i, uris[i % len(uris)], warehouse_dir, identifier,
                                                       appends_per_writer, rows_per_append, deadline, results))
                 for i in range(writers)]
    started = time.monotonic()
    for process in processes:
        process.start()
    reports = [results.get(timeout=deadline_s + 60) for _ in processes]
    seconds = time.monotonic() - started
    for process in processes:
        process.join(timeout=30)
    acknowledged = {(index, seq) for index, seqs, _, _ in reports for seq in seqs}
    final = _catalog(verify_uri or uris[0], warehouse_dir).load_table(identifier)
    found = Counter(zip(*final.scan(selected_fields=("writer", "seq")).to_arrow().to_pydict().values()))
    rows_found = sum(found.values())
    appends_found = Counter({key: count // rows_per_append for key, count in found.items()})
    snapshots = sum(1 for s in final.snapshots() if s.summary is not None and s.summary.operation.value == "append")
    return AppendReport(
        acknowledged=len(acknowledged), rows_expected=len(acknowledged) * rows_per_append, rows_found=rows_found,
        snapshots_found=snapshots, commit_retries=sum(r[2] for r in reports),
        errors=[e for r in reports for e in r[3]], seconds=seconds,
        missing=sorted(acknowledged - set(found)), doubled=sorted(k for k, n in appends_found.items() if n > 1))
