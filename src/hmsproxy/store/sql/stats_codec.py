"""Column statistics objects <-> the value columns of TAB_COL_STATS / PART_COL_STATS.

Which union member a row becomes is decided by the column's Hive type, as Hive's StatObjectConverter
does. Decimals are stored as decimal strings (Hive's BIG_DECIMAL_*_VALUE) and travel as unscaled
two's-complement bytes plus a scale.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from thriftpy2.thrift import TPayload

from hmsproxy.idl import hms
from hmsproxy.idl.fields import stats_data

_LONG_TYPES = ("tinyint", "smallint", "int", "integer", "bigint")
_DOUBLE_TYPES = ("float", "double", "double precision")
_STRING_TYPES = ("string", "varchar", "char")


def stats_kind(column_type: str) -> str:
    base = column_type.strip().lower().split("(")[0].strip()
    if base == "boolean":
        return "booleanStats"
    if base in _LONG_TYPES:
        return "longStats"
    if base in _DOUBLE_TYPES:
        return "doubleStats"
    if base in _STRING_TYPES:
        return "stringStats"
    if base == "binary":
        return "binaryStats"
    if base == "decimal" or base == "numeric":
        return "decimalStats"
    if base == "date":
        return "dateStats"
    if base == "timestamp":
        return "timestampStats"
    raise ValueError(f"column type {column_type!r} has no column statistics")


def decimal_to_text(value: hms.Decimal | None) -> str | None:
    if value is None:
        return None
    unscaled = int.from_bytes(value.unscaled, "big", signed=True) if value.unscaled else 0
    return str(Decimal(unscaled).scaleb(-value.scale))


def text_to_decimal(text: str | None) -> hms.Decimal | None:
    if text is None:
        return None
    number = Decimal(text)
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # a BigDecimal's text: never NaN or infinite
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -exponent if exponent < 0 else 0
    if exponent > 0:
        unscaled *= 10 ** exponent
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return hms.Decimal(scale=scale, unscaled=unscaled.to_bytes(length, "big", signed=True))


def obj_to_row(obj: hms.ColumnStatisticsObj) -> dict[str, object]:
    """The value columns for one ColumnStatisticsObj; raises ValueError if the data does not fit the type."""
    data = obj.statsData
    kind = stats_kind(obj.colType)
    stats = getattr(data, kind, None)
    if stats is None:
        set_members = [k for k in ("booleanStats", "longStats", "doubleStats", "stringStats", "binaryStats",
                                   "decimalStats", "dateStats", "timestampStats") if getattr(data, k, None) is not None]
        raise ValueError(f"statistics for column {obj.colName} of type {obj.colType} must be {kind}, got {set_members}")
    row: dict[str, object] = {"NUM_NULLS": stats.numNulls, "BIT_VECTOR": getattr(stats, "bitVectors", None),
                           "HISTOGRAM": getattr(stats, "histogram", None)}
    if kind == "booleanStats":
        row.update(NUM_TRUES=stats.numTrues, NUM_FALSES=stats.numFalses)
    elif kind in ("stringStats", "binaryStats"):
        row.update(MAX_COL_LEN=stats.maxColLen, AVG_COL_LEN=stats.avgColLen,
                   NUM_DISTINCTS=getattr(stats, "numDVs", None))
    elif kind == "doubleStats":
        row.update(DOUBLE_LOW_VALUE=stats.lowValue, DOUBLE_HIGH_VALUE=stats.highValue, NUM_DISTINCTS=stats.numDVs)
    elif kind == "decimalStats":
        row.update(BIG_DECIMAL_LOW_VALUE=decimal_to_text(stats.lowValue),
                   BIG_DECIMAL_HIGH_VALUE=decimal_to_text(stats.highValue), NUM_DISTINCTS=stats.numDVs)
    elif kind == "dateStats":
        row.update(LONG_LOW_VALUE=stats.lowValue.daysSinceEpoch if stats.lowValue else None,
                   LONG_HIGH_VALUE=stats.highValue.daysSinceEpoch if stats.highValue else None,
                   NUM_DISTINCTS=stats.numDVs)
    elif kind == "timestampStats":
        row.update(LONG_LOW_VALUE=stats.lowValue.secondsSinceEpoch if stats.lowValue else None,
                   LONG_HIGH_VALUE=stats.highValue.secondsSinceEpoch if stats.highValue else None,
                   NUM_DISTINCTS=stats.numDVs)
    else:
        row.update(LONG_LOW_VALUE=stats.lowValue, LONG_HIGH_VALUE=stats.highValue, NUM_DISTINCTS=stats.numDVs)
    return row


def row_to_obj(row: Mapping[Any, Any]) -> hms.ColumnStatisticsObj:
    kind = stats_kind(row["COLUMN_TYPE"])
    common = {"numNulls": row["NUM_NULLS"], "bitVectors": row["BIT_VECTOR"]}
    stats: TPayload
    if kind == "booleanStats":
        stats = hms.BooleanColumnStatsData(numTrues=row["NUM_TRUES"], numFalses=row["NUM_FALSES"], **common)
    elif kind == "stringStats":
        stats = hms.StringColumnStatsData(maxColLen=row["MAX_COL_LEN"], avgColLen=row["AVG_COL_LEN"],
                                          numDVs=row["NUM_DISTINCTS"], **common)
    elif kind == "binaryStats":
        stats = hms.BinaryColumnStatsData(maxColLen=row["MAX_COL_LEN"], avgColLen=row["AVG_COL_LEN"], **common)
    elif kind == "doubleStats":
        stats = hms.DoubleColumnStatsData(lowValue=row["DOUBLE_LOW_VALUE"], highValue=row["DOUBLE_HIGH_VALUE"],
                                          numDVs=row["NUM_DISTINCTS"], histogram=row["HISTOGRAM"], **common)
    elif kind == "decimalStats":
        stats = hms.DecimalColumnStatsData(lowValue=text_to_decimal(row["BIG_DECIMAL_LOW_VALUE"]),
                                           highValue=text_to_decimal(row["BIG_DECIMAL_HIGH_VALUE"]),
                                           numDVs=row["NUM_DISTINCTS"], histogram=row["HISTOGRAM"], **common)
    elif kind == "dateStats":
        low, high = row["LONG_LOW_VALUE"], row["LONG_HIGH_VALUE"]
        stats = hms.DateColumnStatsData(lowValue=None if low is None else hms.Date(daysSinceEpoch=low),
                                        highValue=None if high is None else hms.Date(daysSinceEpoch=high),
                                        numDVs=row["NUM_DISTINCTS"], histogram=row["HISTOGRAM"], **common)
    elif kind == "timestampStats":
        low, high = row["LONG_LOW_VALUE"], row["LONG_HIGH_VALUE"]
        stats = hms.TimestampColumnStatsData(
            lowValue=None if low is None else hms.Timestamp(secondsSinceEpoch=low),
            highValue=None if high is None else hms.Timestamp(secondsSinceEpoch=high),
            numDVs=row["NUM_DISTINCTS"], histogram=row["HISTOGRAM"], **common)
    else:
        stats = hms.LongColumnStatsData(lowValue=row["LONG_LOW_VALUE"], highValue=row["LONG_HIGH_VALUE"],
                                        numDVs=row["NUM_DISTINCTS"], histogram=row["HISTOGRAM"], **common)
    return hms.ColumnStatisticsObj(colName=row["COLUMN_NAME"], colType=row["COLUMN_TYPE"],
                                   statsData=stats_data(kind, stats))


def stats_as_stored(objs: Sequence[hms.ColumnStatisticsObj]) -> dict[str, hms.ColumnStatisticsObj]:
    """Statistics objects as the database returns them, by column name (lower-cased, values round-tripped): what
    the cache keeps of an update without reading it back."""
    result = {}
    for obj in objs:
        name = obj.colName.lower()
        result[name] = row_to_obj({**obj_to_row(obj), "COLUMN_NAME": name, "COLUMN_TYPE": obj.colType})
    return result
