"""json_rows(a, b, ...): an aggregate giving the group's rows as one JSON array of arrays, in each dialect.

It lets one query bring a partition with its values, parameters and storage descriptor in one row instead of
one row per value and per parameter: with a pure-Python driver the rows, not the bytes, are what costs.
The order of the rows inside the array is not defined (MySQL has no ORDER BY in JSON_ARRAYAGG): carry an index
column where order matters and sort on it (`ordered`).
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any, cast

from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Text


class json_rows(FunctionElement[str]):
    type = Text()   # text in every dialect (PostgreSQL's cast), so that equal rows are equal, hashable text
    inherit_cache = True
    name = "json_rows"


def _arguments(element: FunctionElement[str], compiler: SQLCompiler, **kw: object) -> str:
    return str(compiler.process(element.clauses, **kw))


@compiles(json_rows, "mysql")
def _mysql(element: json_rows, compiler: SQLCompiler, **kw: object) -> str:
    return f"JSON_ARRAYAGG(JSON_ARRAY({_arguments(element, compiler, **kw)}))"


@compiles(json_rows, "postgresql")
def _postgresql(element: json_rows, compiler: SQLCompiler, **kw: object) -> str:
    return f"CAST(json_agg(json_build_array({_arguments(element, compiler, **kw)})) AS TEXT)"


@compiles(json_rows, "sqlite")
def _sqlite(element: json_rows, compiler: SQLCompiler, **kw: object) -> str:
    return f"json_group_array(json_array({_arguments(element, compiler, **kw)}))"


class json_text(FunctionElement[str]):
    """A value to go inside a json_rows as a JSON string, whatever its type: a JSON value (another json_rows) would
    otherwise be nested as JSON where the database keeps track of it (MySQL/MariaDB, SQLite), and MySQL/MariaDB
    write bit(1) as a bare control character, which is not JSON."""
    type = Text()
    inherit_cache = True
    name = "json_text"


@compiles(json_text, "mysql")
def _mysql_text(element: json_text, compiler: SQLCompiler, **kw: object) -> str:
    return f"CAST({_arguments(element, compiler, **kw)} AS CHAR)"


@compiles(json_text, "sqlite")
def _sqlite_text(element: json_text, compiler: SQLCompiler, **kw: object) -> str:
    return f"('' || {_arguments(element, compiler, **kw)})"   # a CAST would keep the JSON subtype


@compiles(json_text)
def _any_text(element: json_text, compiler: SQLCompiler, **kw: object) -> str:
    return f"CAST({_arguments(element, compiler, **kw)} AS TEXT)"


# A cell of a json_rows row: a JSON scalar, whose type the query that selected it knows (hence Any).
Cell = Any
# A json_rows value as the driver gives it: text, bytes, or already decoded; None for NULL.
Packed = str | bytes | Iterable[list[Cell]] | None


def rows_of(value: Packed) -> list[list[Cell]]:
    """The rows of a json_rows value as the driver gives it (text, or already decoded); none for NULL."""
    if value is None:
        return []
    if isinstance(value, str):
        return _parsed(value)
    return json.loads(value) if isinstance(value, bytes) else list(value)


_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner json.loads ends in (no stub)


def _parsed(text: str) -> list[list[Cell]]:
    """json.loads(text) for the compact text the databases write, at a quarter of its cost: the scanner is
    called directly, without json.loads's two Python layers (a partition's values and parameters are parsed for
    every partition read). Text it would not take whole, such as a value with whitespace around it, goes to
    json.loads, which also reports what is wrong with text that is not JSON."""
    value: list[list[Cell]]
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return cast("list[list[Cell]]", json.loads(text))
    return value if end == len(text) else json.loads(text)


def ordered(value: Packed) -> list[list[Cell]]:
    """Rows whose first column is an index, sorted by it (indexes are distinct), without it."""
    return [row[1:] for row in sorted(rows_of(value))] if value is not None else []


def ordered_values(value: Packed) -> list[Cell]:
    """The second column of (index, value) rows, in index order: `ordered` for the commonest shape, in one step
    (a listing reads each partition's values so)."""
    rows = rows_of(value)
    rows.sort()
    return [row[1] for row in rows]


def as_dict(value: Packed) -> dict[str, str]:
    """(key, value) rows as a dict; a NULL value reads as "" (as Hive reads it)."""
    return {key: "" if item is None else item for key, item in rows_of(value)}


def as_items(value: Packed, arrange: Callable[[dict[str, str]], dict[str, str]]) -> tuple[tuple[str, str], ...]:
    """as_dict's items in the order `arrange` gives them, memoized for text: the partitions of a table
    mostly carry the same serde parameters, and arranging them (Java's HashMap order) costs more than reading."""
    if isinstance(value, str):
        return _arranged_items(value, arrange)
    return tuple(arrange(as_dict(value)).items())


@functools.lru_cache(maxsize=1024)
def _arranged_items(text: str, arrange: Callable[[dict[str, str]], dict[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(arrange(as_dict(text)).items())
