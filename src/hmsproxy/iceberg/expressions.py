"""The REST spec's expression JSON to and from pyiceberg's expressions.

pyiceberg 0.12 can validate expression JSON itself, but it is lax where a server must not be (a string given as
`values` becomes a set of its characters), does not know the spec's `{"type": "true"}` form, and fails with
TypeError or pydantic errors that do not say which part of the request is wrong. So requests are read here,
strictly, and every problem becomes a PlanRequestError naming the field.
"""
from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import BinaryType, FixedType, IcebergType, StringType


class PlanRequestError(ValueError):
    """A plan request the server cannot answer as asked (HTTP 400); the message names the field."""


_UNARY: dict[str, type[UnaryPredicate]] = {"is-null": IsNull, "not-null": NotNull, "is-nan": IsNaN,
                                           "not-nan": NotNaN}
_LITERAL: dict[str, type[LiteralPredicate]] = {
    "lt": LessThan, "lt-eq": LessThanOrEqual, "gt": GreaterThan, "gt-eq": GreaterThanOrEqual, "eq": EqualTo,
    "not-eq": NotEqualTo, "starts-with": StartsWith, "not-starts-with": NotStartsWith}
_SET: dict[str, type[SetPredicate]] = {"in": In, "not-in": NotIn}
_TYPE_NAMES: dict[type, str] = {cls: name for table in (_UNARY, _LITERAL, _SET) for name, cls in table.items()}


def parse_filter(value: Any, schema: Schema, case_sensitive: bool, field: str = "filter") -> BooleanExpression:
    """An unbound pyiceberg expression from the spec's JSON, checked by binding it to `schema`."""
    expression = _parse(value, schema, case_sensitive, field)
    try:
        bind(schema, expression, case_sensitive)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise PlanRequestError(f"{field}: {exc}") from exc
    return expression


def _parse(value: Any, schema: Schema, case_sensitive: bool, where: str) -> BooleanExpression:
    if isinstance(value, bool):
        return AlwaysTrue() if value else AlwaysFalse()
    if not isinstance(value, dict):
        raise PlanRequestError(f"{where}: an expression must be a JSON object or a boolean, not {value!r}")
    kind = value.get("type")
    if kind in ("true", "false"):
        return AlwaysTrue() if kind == "true" else AlwaysFalse()
    if kind in ("and", "or"):
        left = _parse(_member(value, "left", where), schema, case_sensitive, f"{where}.left")
        right = _parse(_member(value, "right", where), schema, case_sensitive, f"{where}.right")
        return And(left, right) if kind == "and" else Or(left, right)
    if kind == "not":
        return Not(_parse(_member(value, "child", where), schema, case_sensitive, f"{where}.child"))
    if kind in _UNARY:
        return _UNARY[kind](_term(value, where))
    if kind in _LITERAL:
        name = _term(value, where)
        if kind.endswith("starts-with") and not isinstance(_column_type(schema, name, case_sensitive, where),
                                                            StringType):
            raise PlanRequestError(f"{where}: {kind} needs a string column, and {name!r} is not one")
        return _LITERAL[kind](name, _literal(_member(value, "value", where), schema, name, case_sensitive,
                                             f"{where}.value"))
    if kind in _SET:
        name = _term(value, where)
        values = _member(value, "values", where)
        if not isinstance(values, list) or not values:
            raise PlanRequestError(f"{where}.values: must be a non-empty list")
        return _SET[kind](name, {_literal(item, schema, name, case_sensitive, f"{where}.values") for item in values})
    raise PlanRequestError(f"{where}: unknown expression type {kind!r}")


def _member(value: dict[str, Any], key: str, where: str) -> Any:
    if key not in value:
        raise PlanRequestError(f"{where}: {value.get('type')!r} needs {key!r}")
    return value[key]


def _term(value: dict[str, Any], where: str) -> str:
    term = _member(value, "term", where)
    if isinstance(term, dict) and term.get("type") == "transform":
        raise PlanRequestError(f"{where}.term: transform terms are not supported")
    if not isinstance(term, str):
        raise PlanRequestError(f"{where}.term: must be a column name, not {term!r}")
    return term


def _literal(value: Any, schema: Schema, name: str, case_sensitive: bool, where: str) -> Any:
    """A JSON value as pyiceberg's literal() takes it; the spec writes binary and fixed values as hex."""
    if value is None or isinstance(value, (list, dict)):
        raise PlanRequestError(f"{where}: must be a primitive value, not {value!r}")
    column_type = _column_type(schema, name, case_sensitive, where)
    if isinstance(column_type, (BinaryType, FixedType)) and isinstance(value, str):
        try:
            return bytes.fromhex(value)
        except ValueError as exc:
            raise PlanRequestError(f"{where}: {value!r} is not hexadecimal") from exc
    return value


def _column_type(schema: Schema, name: str, case_sensitive: bool, where: str) -> IcebergType:
    try:
        return schema.find_type(name, case_sensitive)
    except ValueError as exc:
        raise PlanRequestError(f"{where}: no column {name!r} in the table's schema") from exc


def expression_json(expression: BooleanExpression) -> Any:
    """The spec's JSON of an unbound pyiceberg expression (a residual is one: the request's, partly evaluated)."""
    if isinstance(expression, AlwaysTrue):
        return True
    if isinstance(expression, AlwaysFalse):
        return False
    if isinstance(expression, And | Or):
        return {"type": "and" if isinstance(expression, And) else "or", "left": expression_json(expression.left),
                "right": expression_json(expression.right)}
    if isinstance(expression, Not):
        return {"type": "not", "child": expression_json(expression.child)}
    kind = _TYPE_NAMES.get(type(expression))
    if kind is None:
        raise TypeError(f"not an unbound expression: {expression!r}")
    reply: dict[str, Any] = {"type": kind, "term": expression.term.name}   # type: ignore[attr-defined]
    if isinstance(expression, LiteralPredicate):
        reply["value"] = _json_literal(expression.literal.value)
    elif isinstance(expression, SetPredicate):
        reply["values"] = sorted((_json_literal(item.value) for item in expression.literals), key=repr)
    return reply


def _json_literal(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex().upper()
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    return value
