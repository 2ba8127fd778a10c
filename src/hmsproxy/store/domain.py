"""The values that cross the seam between the handlers, the cache and the stores, besides the IDL's objects.

Every store (the database, the cache over it, an upstream HMS) takes and returns these and the IDL's types
only, so that none of its callers depends on how it keeps them. The IDL's types are named here too, by the
names the stores use (to mypy they are the generated stubs' classes, hmsproxy/idl/stubgen.py).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from hmsproxy.hive.write_ids import ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present

# The IDL's structs, by name
Catalog = hms.Catalog
Database = hms.Database
Table = hms.Table
Partition = hms.Partition
Function = hms.Function
ColumnStatistics = hms.ColumnStatistics
ColumnStatisticsObj = hms.ColumnStatisticsObj
LockComponent = hms.LockComponent
TxnInfo = hms.TxnInfo
ShowLocksResponseElement = hms.ShowLocksResponseElement
NotificationEvent = hms.NotificationEvent
TableMeta = tuple[str, str, str, str | None]   # (database, table, table type, comment)
Kept = TypeVar("Kept", Table, Partition, Database)   # what RawStore.kept takes and gives back


def is_transactional(table: Table) -> bool:
    """ACID tables (full or insert-only): their reads are checked against write-id snapshots."""
    return str((table.parameters or {}).get("transactional", "")).lower() == "true"


def partition_key_types(table: Table) -> list[tuple[str, str]]:
    """The table's partition keys as (name, type), what the partition filter compilers take (a stored key has
    both; the type is cast, not checked, as the compilers always read it unchecked)."""
    return [(present(k.name), cast(str, k.type)) for k in table.partitionKeys or []]


@dataclass
class DroppedTable:
    """What a drop removed, so the caller can delete managed data after the commit."""

    table: Table
    partition_locations: list[str] = field(default_factory=list)


# Statistics objects as the database would return them, by lower-cased column name (the SQL store's
# stats_codec.stats_as_stored): what the cache keeps of an update without reading it back.
StatsAsStored = Callable[[Sequence[ColumnStatisticsObj]], dict[str, ColumnStatisticsObj]]

# Where a table load streams its partitions: (table, chunk of partitions, their PART_IDs or None).
PartitionSink = Callable[[Table, Sequence[Partition], list[int] | None], None]


@dataclass
class TableBundle:
    """A table with everything hanging off it, read in one transaction: what the cache loads."""

    table: Table
    partitions: Sequence[Partition]                              # empty when they went to a partition sink
    table_stats: dict[str, ColumnStatisticsObj]                  # column -> statistics
    partition_stats: dict[str, dict[str, ColumnStatisticsObj]]   # partition name -> column -> statistics
    write_ids: ValidWriteIdList | None = None    # transactional tables: write ids read *before* the rest
    version: int = 0                             # the table's newest event id, read before the rest
    partition_ids: list[int] | None = None       # PART_ID of each partition, parallel; None: the store has none


@dataclass(frozen=True)
class TableChange:
    """One table's part of a multi-table alter: its new definition (same name), and the parameter value it must
    still hold (a compare-and-set), as alter_table takes them."""
    db_name: str
    tbl_name: str
    new_table: Table
    expected_parameter: tuple[str, str] | None = None


@dataclass(frozen=True)
class TableWrite:
    """A write id of a table that a transaction allocated: what commit or abort changes for readers."""

    db: str
    table: str
    write_id: int


@dataclass(frozen=True)
class LockOutcome:
    """A lock decision: its state and, for the cache, what it covers and the log's head when granted."""

    lock_id: int
    state: int                                     # hms.LockState
    scopes: tuple[tuple[str, str | None], ...] = field(default=())  # (db, table); table None: whole database
    event_head: int = 0                            # newest event id committed before an ACQUIRED grant
    blocked_by: int = 0                            # of a WAITING lock: the lock it waits for


BATCH_SCAN_FACTOR = 10   # a filtered batch examines at most this many times its size of partitions per call
T = TypeVar("T")


def batch_scan(size: int, filtered: bool) -> int:
    """The most partitions one batch call examines: so a selective filter answers a short (even empty) batch
    with the id to continue from rather than scanning the whole table."""
    return size * BATCH_SCAN_FACTOR if filtered else size


def cut_batch(window: Sequence[T], size: int, scan: int, keep: Callable[[T], bool] | None,
              id_of: Callable[[T], int]) -> tuple[list[T], int]:
    """The batch API's rule, wherever the partitions come from: of `window` (up to scan + 1 partitions in id
    order from where the batch starts) the first `scan` are examined and those `keep` accepts kept; the first
    `size` of them are the batch. Returns them and the id the next batch starts from (-1: the range is done)."""
    examined, following = list(window[:scan]), window[scan:]
    if keep is not None:
        examined = [item for item in examined if keep(item)]
    if len(examined) > size:
        return examined[:size], id_of(examined[size])
    return examined, id_of(following[0]) if following else -1


@dataclass(frozen=True)
class PartitionBatch:
    """One batch of a table's partitions in id order (the batch API; handler/partitions.py)."""

    items: Sequence[Partition] | list[str]   # partitions (encoded, from the cache) or names, in id order
    next_id: int               # where the next batch starts; -1 when the range is done
    min_id: int                # the table's partition ids now; -1 when it has none
    max_id: int
