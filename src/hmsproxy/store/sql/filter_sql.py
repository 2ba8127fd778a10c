"""A partition filter's plan as a SQL condition that narrows a table's partitions before any value is read.

Only what SQL decides exactly alike on every backend is pushed down: a key equal to a string (the plan's
equality ranges in string order, and their ANDs and ORs). A MariaDB collation may find more rows equal (case,
trailing spaces), never fewer, and the filter's own predicate then decides every row the condition keeps: the
condition only spares reading the values of the partitions it rules out. Ranges, typed comparisons (an int key
stored as "07") and LIKE stay with the predicate.
"""
from __future__ import annotations

import re

from sqlalchemy import ColumnElement, and_, exists, or_, select

from hmsproxy.hive.partition_filter.plan import AllOf, AnyOf, Plan, Range
from hmsproxy.store.sql import schema as s

_SURROGATES = re.compile("[\ud800-\udfff]")   # in a Java order reading: a character beyond the BMP


def narrowing(plan: Plan) -> ColumnElement[bool] | None:
    """A condition on PARTITIONS rows that holds for every partition the plan's filter matches (None: none)."""
    if isinstance(plan, Range):
        return _equal(plan)
    if isinstance(plan, AllOf):
        parts = [condition for condition in map(narrowing, plan.parts) if condition is not None]
        return and_(*parts) if parts else None
    if isinstance(plan, AnyOf):
        alternatives = [narrowing(part) for part in plan.parts]
        if not alternatives or any(condition is None for condition in alternatives):
            return None   # an alternative SQL cannot narrow: every partition may match
        return or_(*alternatives)   # type: ignore[arg-type]  # no None left
    return None


def _equal(plan: Range) -> ColumnElement[bool] | None:
    value = plan.low
    if (plan.order != "string" or not isinstance(value, str) or value != plan.high or not plan.low_inclusive
            or not plan.high_inclusive or _SURROGATES.search(value)):
        return None   # (a string without surrogates reads as itself)
    values = s.PARTITION_KEY_VALS.c
    return exists(select(values.PART_ID).where(values.PART_ID == s.PARTITIONS.c.PART_ID,
                                               values.INTEGER_IDX == plan.key, values.PART_KEY_VAL == value))
