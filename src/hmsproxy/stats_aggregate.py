"""Merging one column's statistics across partitions, as Hive's column stats aggregators do without
bit vectors: ranges widen, null and true/false counts add up, distinct counts and lengths take the max."""
from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any, Callable, Sequence

from hmsproxy.idl import hms

_KINDS = ("booleanStats", "longStats", "doubleStats", "stringStats", "binaryStats", "decimalStats", "dateStats",
          "timestampStats")


def _kind(obj: Any) -> str:
    return next(k for k in _KINDS if getattr(obj.statsData, k, None) is not None)


def _extreme(values: list[Any], pick: Callable, key: Callable = lambda v: v) -> Any:
    present = [v for v in values if v is not None]
    return pick(present, key=key) if present else None


def _decimal_key(value: Any) -> Decimal:
    return Decimal(int.from_bytes(value.unscaled, "big", signed=True)).scaleb(-value.scale)


def aggregate_column(objs: Sequence[Any]) -> Any:
    kind = _kind(objs[0])
    stats = [getattr(o.statsData, kind) for o in objs if getattr(o.statsData, kind, None) is not None]
    merged = copy.deepcopy(stats[0])
    merged.bitVectors = None
    merged.numNulls = sum(s.numNulls or 0 for s in stats)
    if kind == "booleanStats":
        merged.numTrues = sum(s.numTrues or 0 for s in stats)
        merged.numFalses = sum(s.numFalses or 0 for s in stats)
    elif kind in ("stringStats", "binaryStats"):
        merged.maxColLen = max(s.maxColLen or 0 for s in stats)
        merged.avgColLen = max(s.avgColLen or 0.0 for s in stats)
        if kind == "stringStats":
            merged.numDVs = max(s.numDVs or 0 for s in stats)
    else:
        key: Callable = lambda v: v
        if kind == "decimalStats":
            key = _decimal_key
        elif kind == "dateStats":
            key = lambda v: v.daysSinceEpoch  # noqa: E731
        elif kind == "timestampStats":
            key = lambda v: v.secondsSinceEpoch  # noqa: E731
        merged.lowValue = _extreme([s.lowValue for s in stats], min, key)
        merged.highValue = _extreme([s.highValue for s in stats], max, key)
        merged.numDVs = max(s.numDVs or 0 for s in stats)
        if hasattr(merged, "histogram"):
            merged.histogram = None
    return hms.ColumnStatisticsObj(colName=objs[0].colName, colType=objs[0].colType,
                                   statsData=hms.ColumnStatisticsData(**{kind: merged}))
