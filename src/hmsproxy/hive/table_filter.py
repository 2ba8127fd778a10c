"""get_table_names_by_filter's filters: the partition-filter grammar over three fields of a table.

The keys are Hive's constants: `hive_filter_field_owner__` (the owner), `hive_filter_field_last_access__`
(lastAccessTime, an integer) and `hive_filter_field_params__<key>` (a table parameter). As HMS 2.3 evaluates
them (checked against the reference: tests/api/test_hive_answers.py): key names are case-sensitive; a
table without the field (no owner, no such parameter) matches no comparison, as SQL's NULL; parameters are
compared as strings and only with =, <>, != and LIKE; last access compares as an integer, a quoted
constant matches nothing, and LIKE is refused; LIKE is DataNucleus' "regex" (like.py). IN lists, which 2.3's
grammar lacks, are read as Hive 4 reads them: one equality per value, or'ed.
"""
from __future__ import annotations

import operator
from collections.abc import Callable

from hmsproxy.hive.like import LikePattern
from hmsproxy.hive.partition_filter import (
    And,
    Between,
    Comparison,
    Const,
    FilterError,
    InList,
    Key,
    MatchAll,
    Node,
    Or,
    parse_filter,
)
from hmsproxy.idl import hms

OWNER, LAST_ACCESS, PARAMS = ("hive_filter_field_owner__", "hive_filter_field_last_access__",
                              "hive_filter_field_params__")
INVALID_KEY = "Invalid key name in filter.  Use constants from org.apache.hadoop.hive.metastore.api"  # sic, HMS's text
PARAMS_OPERATORS = "Only [=, !=, LIKE, <>] are supported operators for HIVE_FILTER_FIELD_PARAMS"
LIKE_ON_LAST_ACCESS = "Like is not supported for HIVE_FILTER_FIELD_LAST_ACCESS"

TablePredicate = Callable[[hms.Table], bool]
_ORDER = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge}


class TableFilterRefused(FilterError):
    """A filter that parses but that HMS refuses for tables; the message is HMS's own text."""


def compile_table_filter(text: str) -> TablePredicate:
    """A predicate over Thrift Tables; FilterError (or TableFilterRefused) when HMS would refuse the filter.

    HMS's query joins the parameter table once for each parameter the filter names, as an inner join: a
    table that lacks any of them matches nothing, even where the filter reads `... OR <that parameter>`."""
    named: set[str] = set()
    holds = _compile(text, parse_filter(text or ""), named)
    if not named:
        return holds
    return lambda table: named.issubset(table.parameters or {}) and holds(table)


def _compile(text: str, node: Node, named: set[str]) -> TablePredicate:
    if isinstance(node, MatchAll):
        return lambda table: True
    if isinstance(node, (And, Or)):
        parts = [_compile(text, part, named) for part in node.parts]
        if isinstance(node, And):
            return lambda table: all(part(table) for part in parts)
        return lambda table: any(part(table) for part in parts)
    if isinstance(node, InList):
        if node.negated:  # NOT IN: differs from each value; a missing field differs from nothing
            unequal = [_comparison(text, node.key, "!=", value, named) for value in node.values]
            return lambda table: all(p(table) for p in unequal)
        equal = [_comparison(text, node.key, "=", value, named) for value in node.values]
        return lambda table: any(p(table) for p in equal)
    if isinstance(node, Between):  # NOT BETWEEN: below or above; a missing field is neither
        low = _comparison(text, node.key, "<" if node.negated else ">=", node.low, named)
        high = _comparison(text, node.key, ">" if node.negated else "<=", node.high, named)
        if node.negated:
            return lambda table: low(table) or high(table)
        return lambda table: low(table) and high(table)
    assert isinstance(node, Comparison)
    return _comparison(text, node.key, node.op, node.value, named)


def _comparison(text: str, key: Key, op: str, const: Const, named: set[str]) -> TablePredicate:
    """One comparison of a table field with a constant (the parser puts the key on the left); a parameter it
    reads is added to `named`."""
    name = text[key.pos:key.pos + len(key.name)]  # as written: HMS's key names are case-sensitive
    if name == OWNER:
        return _string_test(lambda table: table.owner, op, const)
    if name.startswith(PARAMS) and len(name) > len(PARAMS):
        if op not in ("=", "!=", "like"):
            raise TableFilterRefused(PARAMS_OPERATORS)
        param = name[len(PARAMS):]
        named.add(param)
        return _string_test(lambda table: (table.parameters or {}).get(param), op, const)
    if name == LAST_ACCESS:
        if op == "like":
            raise TableFilterRefused(LIKE_ON_LAST_ACCESS)
        if const.kind != "int":
            return lambda table: False  # HMS compares the integer with a string: never equal, never ordered
        compare, bound = _ORDER[op], int(const.value)
        return lambda table: table.lastAccessTime is not None and compare(table.lastAccessTime, bound)
    raise TableFilterRefused(INVALID_KEY)


def _string_test(field: Callable[[hms.Table], str | None], op: str, const: Const) -> TablePredicate:
    if op == "like":
        pattern = LikePattern.compile(const.text())
        return lambda table: (value := field(table)) is not None and pattern.matches(value)
    compare, bound = _ORDER[op], const.text()
    return lambda table: (value := field(table)) is not None and compare(value, bound)
