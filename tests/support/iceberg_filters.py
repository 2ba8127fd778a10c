"""Random Iceberg row filters over the columns of support/iceberg_tables.py's tables (hypothesis strategies)."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from pyiceberg import expressions as ex
from pyiceberg.expressions import BooleanExpression

from support.iceberg_tables import CATEGORIES


def _column(draw: st.DrawFn, name: str, case_sensitive: bool) -> str:
    return name if case_sensitive else draw(st.sampled_from([name, name.upper(), name.capitalize()]))


@st.composite
def predicates(draw: st.DrawFn, case_sensitive: bool) -> BooleanExpression:
    kind = draw(st.sampled_from(["id", "cat", "d", "amount", "name", "null", "nan"]))
    if kind == "null":
        column = _column(draw, draw(st.sampled_from(["name", "amount", "cat"])), case_sensitive)
        return draw(st.sampled_from([ex.IsNull, ex.NotNull]))(column)
    if kind == "nan":
        return draw(st.sampled_from([ex.IsNaN, ex.NotNaN]))(_column(draw, "amount", case_sensitive))
    values: dict[str, st.SearchStrategy[Any]] = {
        "id": st.integers(-5, 120), "cat": st.sampled_from(CATEGORIES + ("z",)),
        "d": st.sampled_from(["2023-12-31", "2024-01-01", "2024-01-02", "2024-01-04"]),
        "amount": st.floats(-12, 12, allow_nan=False), "name": st.sampled_from(["alpha", "beta", "b", "g", "x"])}
    column = _column(draw, kind, case_sensitive)
    operators: list[Any] = [ex.EqualTo, ex.NotEqualTo, ex.LessThan, ex.LessThanOrEqual, ex.GreaterThan,
                            ex.GreaterThanOrEqual]
    if kind == "name":
        operators += [ex.StartsWith, ex.NotStartsWith]
    if draw(st.booleans()) and kind != "amount":
        items = draw(st.lists(values[kind], min_size=2, max_size=4, unique=True))
        return draw(st.sampled_from([ex.In, ex.NotIn]))(column, items)
    return draw(st.sampled_from(operators))(column, draw(values[kind]))


def filters(case_sensitive: bool) -> st.SearchStrategy[BooleanExpression]:
    return st.recursive(predicates(case_sensitive), lambda children: st.one_of(
        st.builds(ex.And, children, children), st.builds(ex.Or, children, children), st.builds(ex.Not, children)),
        max_leaves=4)
