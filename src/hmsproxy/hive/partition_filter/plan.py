"""Plans: what an index of sorted key values can narrow a filter's candidates to (a superset of the matches,
exactly the matches where every part is a comparison; elsewhere the predicate decides). Apart from the
compiler, as the stores that keep values indexed read plans without compiling anything."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hmsproxy.hive.partition_filter.java_values import (
    java_order,
    parse_date_strict,
    parse_decimal,
    parse_int,
    parse_timestamp,
)


@dataclass(frozen=True)
class Range:
    """The partitions whose value of key number `key`, read in `order` (a key of ORDERS), lies within the
    bounds (None: unbounded). Values that do not read in that order (None) are outside every range. `exact`: the
    range holds the matches of its part of the filter and nothing else (a comparison's), so the predicate need
    not test them; a LIKE's prefix holds more."""
    key: int
    order: str
    low: Any = None
    high: Any = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    exact: bool = True


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Plan, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Plan, ...]


# None: an index cannot narrow this part (!=, a LIKE with no literal prefix, the empty filter)
Plan = Range | AllOf | AnyOf | None

# How the values of a key are read for comparison, by the name a Range gives: the same readings the
# predicates compare, so that a range over the readings, sorted, holds exactly the values a comparison accepts.
ORDERS: dict[str, Callable[[str], Any]] = {"string": java_order, "integral": parse_int, "decimal": parse_decimal,
                                           "date": parse_date_strict, "timestamp": parse_timestamp}
PAST_EVERY_CHARACTER = "\U0010FFFF"   # above every UTF-16 code unit, so above every continuation of a prefix


def comparison_range(key: int, order: str, op: str, target: Any) -> Plan:
    if op == "=":
        return Range(key, order, target, target)
    if op in ("<", "<="):
        return Range(key, order, high=target, high_inclusive=op == "<=")
    if op in (">", ">="):
        return Range(key, order, low=target, low_inclusive=op == ">=")
    return None   # != selects nearly everything: the predicate alone is cheaper


def all_of_plans(plans: Sequence[Plan]) -> Plan:
    """AND of plans, ranges over the same key and order merged into one (BETWEEN, ``a >= x and a < y``)."""
    merged: dict[tuple[int, str], Range] = {}
    others: list[Plan] = []
    for plan in plans:
        if isinstance(plan, Range):
            same = merged.get((plan.key, plan.order))
            merged[(plan.key, plan.order)] = plan if same is None else _both(same, plan)
        else:
            others.append(plan)
    parts = (*merged.values(), *others)
    return parts[0] if len(parts) == 1 else AllOf(parts)


def _both(a: Range, b: Range) -> Range:
    """The range of the values within both: the higher low bound and the lower high bound."""
    if a.low is None or (b.low is not None and (b.low > a.low or (b.low == a.low and not b.low_inclusive))):
        low, low_inclusive = b.low, b.low_inclusive
    else:
        low, low_inclusive = a.low, a.low_inclusive
    if a.high is None or (b.high is not None and (b.high < a.high or (b.high == a.high and not b.high_inclusive))):
        high, high_inclusive = b.high, b.high_inclusive
    else:
        high, high_inclusive = a.high, a.high_inclusive
    return Range(a.key, a.order, low, high, low_inclusive, high_inclusive, a.exact and b.exact)
