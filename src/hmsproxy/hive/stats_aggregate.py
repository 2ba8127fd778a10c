"""A column's statistics over many partitions, as Hive 2.3's get_aggr_stats_for computes them (its defaults:
no density function, NDV tuner 0, no bit vectors).

With k of the n requested partition names holding statistics for a column (n counts every name asked,
duplicates and names of no partition included): k = 0 leaves the column out; k = 1 or k = n merges what is
there (low = min, high = max, null/true/false counts add up, distinct counts and lengths take the max); in
between Hive extrapolates to all n (MetaStoreDirectSql.columnStatisticsObjForPartitions with
LinearExtrapolatePartStatus). Each partition is placed at its position in the request (the last one for a
name asked twice); counts are scaled as `sum / k * n` in integer arithmetic; a min or max field is drawn as a
line through the partitions holding its smallest and largest value, out to the first or last position
(any partition lacking the field makes it null). Integer fields use Java's integer division, decimals go
through a double and its Java text. Long, date and timestamp distinct counts never exceed high - low + 1.

This is what Hive computes (2.3 with its aggregate-statistics cache off, and Hive 4 by default): that cache,
on by default in 2.3, may answer with an earlier aggregate of other partitions (README), which no one can rely on.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias, cast

from hmsproxy.idl import hms
from hmsproxy.idl.fields import stats_data

_KINDS = ("booleanStats", "longStats", "doubleStats", "stringStats", "binaryStats", "decimalStats", "dateStats",
          "timestampStats")

# Per kind of statistics: (field, how partitions combine, the arithmetic of its values).
_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "longStats": (("lowValue", "min", "long"), ("highValue", "max", "long"), ("numNulls", "sum", "long"),
                  ("numDVs", "max", "long")),
    "dateStats": (("lowValue", "min", "date"), ("highValue", "max", "date"), ("numNulls", "sum", "long"),
                  ("numDVs", "max", "long")),
    "timestampStats": (("lowValue", "min", "timestamp"), ("highValue", "max", "timestamp"),
                       ("numNulls", "sum", "long"), ("numDVs", "max", "long")),
    "doubleStats": (("lowValue", "min", "double"), ("highValue", "max", "double"), ("numNulls", "sum", "long"),
                    ("numDVs", "max", "long")),
    "decimalStats": (("lowValue", "min", "decimal"), ("highValue", "max", "decimal"), ("numNulls", "sum", "long"),
                     ("numDVs", "max", "long")),
    "stringStats": (("avgColLen", "max", "double"), ("maxColLen", "max", "long"), ("numNulls", "sum", "long"),
                    ("numDVs", "max", "long")),
    "binaryStats": (("avgColLen", "max", "double"), ("maxColLen", "max", "long"), ("numNulls", "sum", "long")),
    "booleanStats": (("numTrues", "sum", "long"), ("numFalses", "sum", "long"), ("numNulls", "sum", "long")),
}
# A statistics field's value; which one a field holds its arithmetic (_FIELDS) says.
Number: TypeAlias = int | float
StatValue: TypeAlias = Number | hms.Date | hms.Timestamp | hms.Decimal
_RANGED = {"longStats": "long", "dateStats": "date", "timestampStats": "timestamp"}  # numDVs <= high - low + 1


@dataclass(frozen=True)
class Placement:
    """Where the request puts partitions: n names asked, each name's (last) position, the last position."""

    asked: int
    position: dict[str, int]

    @classmethod
    def of(cls, names: Sequence[str]) -> Placement:
        return cls(len(names), {name: i for i, name in enumerate(names)})

    @property
    def last(self) -> int:
        return len(self.position) - 1


def aggregate_stats(per_partition: dict[str, list[hms.ColumnStatisticsObj]], columns: Sequence[str],
                    asked: Sequence[str]) -> hms.AggrStats:
    """AggrStats of `columns` (in their order, repeats repeated) over the partitions named `asked`, from each
    partition's statistics objects. partsFound: the partitions holding statistics of every asked column."""
    placement = Placement.of(asked)
    parts_found = sum(1 for objs in per_partition.values() if len({o.colName for o in objs}) == len(columns))
    col_stats = []
    for column in columns:
        held = [(part, match) for part, objs in per_partition.items()
                for match in [o for o in objs if o.colName == column][:1]]
        if held:
            col_stats.append(aggregate_column(held, placement))
    return hms.AggrStats(colStats=col_stats, partsFound=parts_found)


def aggregate_column(held: Sequence[tuple[str, hms.ColumnStatisticsObj]], placement: Placement
                     ) -> hms.ColumnStatisticsObj:
    """One column's statistics from (partition name, statistics object) pairs."""
    first = held[0][1]
    kind = _kind(first)
    stats = [(part, getattr(obj.statsData, kind)) for part, obj in held if getattr(obj.statsData, kind) is not None]
    merged = copy.deepcopy(stats[0][1])
    merged.bitVectors = None
    if hasattr(merged, "histogram"):
        merged.histogram = None
    extrapolate = 2 <= len(stats) < placement.asked
    for name, combine, arithmetic in _FIELDS[kind]:
        values = [(part, getattr(s, name)) for part, s in stats]
        if extrapolate:
            value = _extrapolated(values, combine, arithmetic, placement)
        else:
            value = _merged([v for _, v in values], combine, arithmetic)
        setattr(merged, name, value)
    if kind in _RANGED and merged.lowValue is not None and merged.highValue is not None:
        span = _number(merged.highValue, _RANGED[kind]) - _number(merged.lowValue, _RANGED[kind]) + 1
        merged.numDVs = min(merged.numDVs, span)
    return hms.ColumnStatisticsObj(colName=first.colName, colType=first.colType, statsData=stats_data(kind, merged))


def _kind(obj: hms.ColumnStatisticsObj) -> str:
    return next(k for k in _KINDS if getattr(obj.statsData, k, None) is not None)


def _merged(values: list[StatValue | None], combine: str, arithmetic: str) -> StatValue | None:
    present = [v for v in values if v is not None]
    if combine == "sum":
        return sum(cast(list[int], present))   # only counts are summed
    if not present:
        return None
    pick = min if combine == "min" else max
    return pick(present, key=lambda v: _order_key(v, arithmetic))


def _extrapolated(values: list[tuple[str, StatValue | None]], combine: str, arithmetic: str, placement: Placement
                  ) -> StatValue | None:
    if combine == "sum":
        present = cast(list[int], [v for _, v in values if v is not None])   # only counts are summed
        return sum(present) // len(values) * placement.asked  # Java: the division truncates first
    if any(v is None for _, v in values):
        return None  # Hive's ordered read puts the missing value at one end, and the line has no end then
    known = cast(list[tuple[str, StatValue]], values)
    ordered = sorted(known, key=lambda pv: (_order_key(pv[1], arithmetic), placement.position[pv[0]]))
    (low_part, low), (high_part, high) = ordered[0], ordered[-1]
    low_at, high_at = placement.position[low_part], placement.position[high_part]
    if low_at == high_at:
        return low
    lo, hi = _number(low, arithmetic), _number(high, arithmetic)
    if combine == "max":
        steps, across = (placement.last - low_at, high_at - low_at) if low_at < high_at else (low_at, low_at - high_at)
        result = lo + _scaled(hi - lo, steps, across)
    else:
        steps, across = (high_at, high_at - low_at) if low_at < high_at else (placement.last - high_at,
                                                                               low_at - high_at)
        result = hi - _scaled(hi - lo, steps, across)
    return _value(result, arithmetic)


def _scaled(width: Number, steps: int, across: int) -> Number:
    """(width * steps) / across as Java computes it: integer division for integers, else doubles."""
    return width * steps // across if isinstance(width, int) else width * steps / across


def _order_key(value: StatValue, arithmetic: str) -> Decimal | Number:
    return _decimal(cast(hms.Decimal, value)) if arithmetic == "decimal" else _number(value, arithmetic)


def _number(value: StatValue, arithmetic: str) -> Number:
    if arithmetic == "date":
        return cast(hms.Date, value).daysSinceEpoch
    if arithmetic == "timestamp":
        return cast(hms.Timestamp, value).secondsSinceEpoch
    if arithmetic == "decimal":
        return float(_decimal(cast(hms.Decimal, value)))  # BigDecimal.doubleValue(), as Hive's extrapolation reads it
    return cast(Number, value)


def _value(number: Number, arithmetic: str) -> StatValue:
    if arithmetic == "date":
        return hms.Date(daysSinceEpoch=cast(int, number))   # dates and timestamps extrapolate in integers
    if arithmetic == "timestamp":
        return hms.Timestamp(secondsSinceEpoch=cast(int, number))
    if arithmetic == "decimal":
        sign, digits, exponent = Decimal(java_double_text(number)).as_tuple()
        unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
        return hms.Decimal(unscaled=unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True),
                           scale=-int(exponent))
    return number


def _decimal(value: hms.Decimal) -> Decimal:
    return Decimal(int.from_bytes(value.unscaled, "big", signed=True)).scaleb(-value.scale)


def java_double_text(x: float) -> str:
    """Java's Double.toString: plain for 1e-3 <= |x| < 1e7 with at least one decimal, else d.dddE<n>."""
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)  # digits before the decimal point
    if 1e-3 <= abs(x) < 1e7:
        if point <= 0:
            body = "0." + "0" * -point + text
        elif point >= len(text):
            body = text + "0" * (point - len(text)) + ".0"
        else:
            body = text[:point] + "." + text[point:]
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{point - 1}"
    return ("-" if sign else "") + body
