"""Real Iceberg tables for the planning tests: written by pyiceberg into a SQLite catalog and a local warehouse.

Each table gets a partition spec drawn from a seeded random generator, several appends, a spec change, an
overwrite, a copy-on-write delete and (pyiceberg 0.12 writes no merge-on-read deletes) position delete files
committed here through pyiceberg's own manifest and manifest-list writers.
"""
from __future__ import annotations

import datetime
import random
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "d", DateType(), required=False),
    NestedField(4, "amount", DoubleType(), required=False),
    NestedField(5, "name", StringType(), required=False),
)
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("d", pa.date32()), ("amount", pa.float64()),
                          ("name", pa.string())])
CATEGORIES = ("a", "b", "c")
NAMES = ("alpha", "beta", "bravo", "gamma", None)
FIRST_DAY = datetime.date(2024, 1, 1)
# Sources that are never null: pyiceberg 0.12's client cannot take a null partition value back (its REST model
# refuses JSON null there, and its residual evaluator raises on it), so null partitions are tested on their own.
PARTITION_CHOICES = (
    (2, IdentityTransform(), "cat"),
    (3, DayTransform(), "d_day"),
    (1, BucketTransform(4), "id_bucket"),
    (3, IdentityTransform(), "d"),
)


def catalog(root: Path) -> SqlCatalog:
    return SqlCatalog("planning", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")


def _spec(rng: random.Random) -> PartitionSpec:
    chosen = rng.sample(PARTITION_CHOICES, rng.randint(0, 2))
    return PartitionSpec(*(PartitionField(source_id, 1000 + index, transform, name)
                           for index, (source_id, transform, name) in enumerate(chosen)))


def rows(rng: random.Random, start: int, count: int) -> pa.Table:
    amounts = [rng.choice([float("nan"), None, rng.uniform(-10, 10)]) if rng.random() < 0.2 else rng.uniform(-10, 10)
               for _ in range(count)]
    return pa.table({
        "id": pa.array(range(start, start + count), pa.int64()),
        "cat": pa.array([rng.choice(CATEGORIES) for _ in range(count)]),
        "d": pa.array([FIRST_DAY + datetime.timedelta(days=rng.randrange(4)) for _ in range(count)]),
        "amount": pa.array(amounts, pa.float64()),
        "name": pa.array([rng.choice(NAMES) for _ in range(count)]),
    }, schema=ARROW_SCHEMA)


def build_table(root: Path, seed: int, appends: int = 5) -> Table:
    """A table with history: appends under a random spec, a spec change, an overwrite, a delete, position deletes."""
    rng = random.Random(seed)
    cat = catalog(root)
    cat.create_namespace_if_not_exists("ns")
    table = cat.create_table(f"ns.t{seed}", SCHEMA, partition_spec=_spec(rng),
                             properties={"format-version": "2"})
    next_id = 0
    for index in range(appends):
        if index == appends // 2:
            with table.update_spec() as update:
                source_id, transform, name = rng.choice(PARTITION_CHOICES)
                if name not in {field.name for field in table.spec().fields}:
                    update.add_field(table.schema().find_column_name(source_id), transform, name)
        count = rng.randint(5, 30)
        table.append(rows(rng, next_id, count))
        next_id += count
    table.overwrite(rows(rng, next_id, 10), overwrite_filter=EqualTo("cat", rng.choice(CATEGORIES)))
    table.delete(GreaterThanOrEqual("id", next_id - 3))
    add_position_deletes(table, rng)
    table.append(rows(rng, next_id + 100, 8))
    return table


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, marked as a delete manifest (pyiceberg writes none itself)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def add_position_deletes(table: Table, rng: random.Random) -> None:
    """Commit position delete files for some live data files: about half name their data file in their path
    bounds (matched by path), the others do not (matched by partition and sequence number)."""
    data_files = [task.file for task in table.scan().plan_files()]
    targets = rng.sample(data_files, min(3, len(data_files)))
    commit_delete_files(table, [_position_delete_file(table, target, rng) for target in targets])


def commit_delete_files(table: Table, delete_files: list[DataFile], data_files: tuple[DataFile, ...] = ()) -> None:
    """Commit a snapshot that adds delete files (one delete manifest a spec), and data files if given (one data
    manifest, same sequence number), to the current snapshot's manifests."""
    metadata = table.metadata
    parent = metadata.current_snapshot()
    assert parent is not None
    io = table.io
    snapshot_id = random.randrange(1, 2**62)
    sequence_number = metadata.last_sequence_number + 1
    specs = metadata.specs()
    by_spec: dict[int, list[DataFile]] = {}
    for delete_file in delete_files:
        by_spec.setdefault(delete_file.spec_id, []).append(delete_file)
    manifests = list(parent.manifests(io))
    for spec_id, files in by_spec.items():
        output = io.new_output(f"{metadata.location}/metadata/{uuid.uuid4()}-deletes.avro")
        with _DeleteManifestWriter(specs[spec_id], metadata.schema(), output, snapshot_id, "deflate") as writer:
            for delete_file in files:
                writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                   data_file=delete_file))
        manifests.append(writer.to_manifest_file())
    if data_files:
        output = io.new_output(f"{metadata.location}/metadata/{uuid.uuid4()}-data.avro")
        with ManifestWriterV2(metadata.spec(), metadata.schema(), output, snapshot_id, "deflate") as data_writer:
            for data_file in data_files:
                data_writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                        data_file=data_file))
        manifests.append(data_writer.to_manifest_file())
    list_path = f"{metadata.location}/metadata/snap-{snapshot_id}-{uuid.uuid4()}.avro"
    with write_manifest_list(format_version=2, output_file=io.new_output(list_path), snapshot_id=snapshot_id,
                             parent_snapshot_id=parent.snapshot_id, sequence_number=sequence_number,
                             avro_compression="deflate") as list_writer:
        list_writer.add_manifests(manifests)
    snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id,
                        sequence_number=sequence_number, timestamp_ms=int(time.time() * 1000), manifest_list=list_path,
                        summary=Summary(operation=Operation.DELETE), schema_id=metadata.current_schema_id)
    table.catalog.commit_table(table, (AssertRefSnapshotId(ref="main", snapshot_id=parent.snapshot_id),), (
        AddSnapshotUpdate(snapshot=snapshot),
        SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snapshot_id)))
    table.refresh()


def _position_delete_file(table: Table, target: DataFile, rng: random.Random) -> DataFile:
    path = f"{table.metadata.location}/data/{uuid.uuid4()}-deletes.parquet"
    positions = sorted(rng.sample(range(target.record_count), min(2, target.record_count)))
    arrow = pa.table({"file_path": pa.array([target.file_path] * len(positions)),
                      "pos": pa.array(positions, pa.int64())})
    local = path.removeprefix("file://")
    Path(local).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow, local)
    by_path = rng.random() < 0.5
    bounds = {2147483546: target.file_path.encode()} if by_path else {}
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=path, file_format=FileFormat.PARQUET,
        partition=target.partition, record_count=len(positions), file_size_in_bytes=Path(local).stat().st_size,
        lower_bounds=bounds, upper_bounds=dict(bounds))
    delete_file.spec_id = target.spec_id
    return delete_file
