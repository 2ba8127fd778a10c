"""Content files (data and delete files) as the REST spec's JSON: `ContentFile` and its `PrimitiveTypeValue`s.

The spec encodes values by their Iceberg type (dates as ISO strings, binary as upper-case hex, decimals as text),
so each value is written with the type of its partition field or column: pyiceberg's client reads them back.
"""
from __future__ import annotations

import math
import uuid
from collections.abc import Collection, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from pyiceberg.conversions import from_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.utils.datetime import days_to_date, micros_to_time, micros_to_timestamp

from hmsproxy.iceberg.manifest_cache import CachedEntry

CONTENT_NAMES = {0: "data", 1: "position-deletes", 2: "equality-deletes"}
JsonValue = bool | int | float | str


def json_value(field_type: IcebergType, value: Any) -> JsonValue | None:
    """The spec's JSON for one value of a primitive type; None for a value JSON cannot carry (NaN, a nested type)."""
    if value is None:
        return None
    if isinstance(field_type, BooleanType):
        return bool(value)
    if isinstance(field_type, IntegerType | LongType):
        return int(value)
    if isinstance(field_type, FloatType | DoubleType):
        return float(value) if math.isfinite(value) else None
    if isinstance(field_type, DecimalType):
        return str(value) if isinstance(value, Decimal) else str(Decimal(value))
    if isinstance(field_type, StringType):
        return str(value)
    if isinstance(field_type, UUIDType):
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
    if isinstance(field_type, DateType):
        return (value if isinstance(value, date) else days_to_date(value)).isoformat()
    if isinstance(field_type, TimeType):
        return (value if isinstance(value, time) else micros_to_time(value)).isoformat(timespec="microseconds")
    if isinstance(field_type, TimestampType | TimestamptzType):
        moment = value if isinstance(value, datetime) else micros_to_timestamp(value)
        text = moment.replace(tzinfo=None).isoformat(timespec="microseconds")
        return text + "+00:00" if isinstance(field_type, TimestamptzType) else text
    if isinstance(field_type, TimestampNanoType | TimestamptzNanoType):
        seconds, nanos = divmod(int(value), 1_000_000_000)
        text = micros_to_timestamp(seconds * 1_000_000).isoformat(timespec="seconds") + f".{nanos:09d}"
        return text + "+00:00" if isinstance(field_type, TimestamptzNanoType) else text
    if isinstance(field_type, FixedType | BinaryType):
        return bytes(value).hex().upper()
    return None


def _count_map(counts: Mapping[int, int] | None, ids: Collection[int]) -> dict[str, list[int]] | None:
    if not counts:
        return None
    keys = [field_id for field_id in counts if field_id in ids]
    return {"keys": keys, "values": [counts[field_id] for field_id in keys]} if keys else None


def _value_map(bounds: Mapping[int, bytes] | None, ids: Collection[int], schema: Schema) -> dict[str, list[Any]] | None:
    if not bounds:
        return None
    keys: list[int] = []
    values: list[JsonValue] = []
    for field_id, raw in bounds.items():
        if field_id not in ids:
            continue
        field_type = schema.find_type(field_id)
        if not isinstance(field_type, PrimitiveType):
            continue
        value = json_value(field_type, from_bytes(field_type, raw))
        if value is not None:
            keys.append(field_id)
            values.append(value)
    return {"keys": keys, "values": values} if keys else None


def content_file_json(entry: CachedEntry, partition_types: tuple[IcebergType, ...], stats_ids: Collection[int],
                      schema: Schema) -> dict[str, Any]:
    """A data or delete file as the spec's `DataFile`/`PositionDeleteFile`/`EqualityDeleteFile`.

    Column stats go out only for the fields in `stats_ids` (the request's `stats-fields`), as `{keys, values}`.
    """
    reply: dict[str, Any] = {
        "content": CONTENT_NAMES[entry.content],
        "file-path": entry.file_path,
        "file-format": entry.file_format.lower(),
        "spec-id": entry.spec_id,
        "partition": [json_value(field_type, value) for field_type, value in zip(partition_types, entry.partition)],
        "file-size-in-bytes": entry.file_size_in_bytes,
        "record-count": entry.record_count,
    }
    if entry.key_metadata is not None:
        reply["key-metadata"] = entry.key_metadata.hex().upper()
    if entry.split_offsets is not None:
        reply["split-offsets"] = list(entry.split_offsets)
    if entry.sort_order_id is not None:
        reply["sort-order-id"] = entry.sort_order_id
    if entry.content == 0:
        if stats_ids:
            stats = entry.metrics()
            for name, counts in (("column-sizes", stats.column_sizes), ("value-counts", stats.value_counts),
                                 ("null-value-counts", stats.null_value_counts),
                                 ("nan-value-counts", stats.nan_value_counts)):
                if (count_map := _count_map(counts, stats_ids)) is not None:
                    reply[name] = count_map
            for name, bounds in (("lower-bounds", stats.lower_bounds), ("upper-bounds", stats.upper_bounds)):
                if (value_map := _value_map(bounds, stats_ids, schema)) is not None:
                    reply[name] = value_map
    elif entry.content == 2 and entry.equality_ids is not None:
        reply["equality-ids"] = list(entry.equality_ids)
    return reply
