r"""Compiles a parsed partition filter, given the partition keys' types, into a predicate over partition values
and a plan of the key ranges that hold every match; the entry points that parse and compile (kept compiled for
filters asked again).

Facts behind the choices (source in brackets; "measured" = checked against the real HMS 2.3.10
on Derby, see tests/test_partition_filter.py):

* LIKE is *not* a full Java regex. HMS 2.3 evaluates it through DataNucleus' ``String.matches``
  which rewrites the "regex" into SQL LIKE: ``.*`` is any sequence, ``.`` any one character,
  ``\.`` a literal dot, a leading ``(?i)`` makes it case-insensitive, everything else is literal
  (``%``, ``_``, ``[``, ``?``, ``+`` ...), and it matches the whole value [DataNucleus
  ``RegularExpressionConverter``; measured: ``a[x%]b`` matches only the text ``a[x%]b`` literally,
  ``ab?c`` does not match ``abc``]. That is also what Spark needs: it sends ``v.*``, ``.*v``,
  ``.*v.*`` for startsWith/endsWith/contains. ``'x' LIKE key`` is an error [ExpressionTree].
  Matched in linear time by hmsproxy/hive/like.py (no regex backtracking).
* Key types decide the comparison [MetaStoreDirectSql.PartitionFilterGenerator]:
  - integral (tinyint/smallint/int/bigint): numeric. A stored value that is not an integer
    (``__HIVE_DEFAULT_PARTITION__``) never matches, not even ``!=`` (SQL NULL; Hive 4 wraps the
    cast in ``case when val <> default then cast(...)``; measured on 2.3.10: ``i != 9`` skips the
    default partition). Constants outside a Java long are an error [Long.parseLong; measured].
  - date: compared as dates; a string constant is parsed like SimpleDateFormat("yyyy-MM-dd")
    does (prefix, 1-2 digit month/day: ``"2024-1-1"``, ``"2024-01-01x"`` work; measured).
  - timestamp (Hive 4 only): compared as timestamps.
  - string, varchar, char: Java ``String.compareTo`` (UTF-16 code units) [HMS 2.3 accepts only
    ``string`` and answers MetaException for varchar/char; Hive 4 treats them as strings].
  - decimal/float/double: numeric. HMS rejects filters on them; comparing numbers is the only
    sensible answer. Other types (boolean, binary, ...) -> FilterError, as in HMS.
* Mismatched constants: the string ``'__HIVE_DEFAULT_PARTITION__'`` is compared as a string
  against any key type [Hive 4 ``isDefaultPartition``]. Otherwise a string constant on a
  numeric key and an integer constant on a string, date or timestamp key (LIKE included) is
  refused with HMS's own text, ``Filtering is supported only on partition keys of type string``
  (measured on 2.3.10: its direct SQL gives up on the mismatch and its JDO fallback refuses). A
  string on a date key is parsed as a date (an error when it is none).
* BETWEEN is ``key >= lo AND key <= hi``, NOT BETWEEN ``key < lo OR key > hi``; IN is an OR of
  ``=``, NOT IN an AND of ``!=`` [both grammars build exactly these trees].
"""
from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hmsproxy.hive.like import LikePattern
from hmsproxy.hive.partition_filter.grammar import (
    And,
    Between,
    Comparison,
    FilterError,
    InList,
    MatchAll,
    Node,
    Or,
    error_at,
    parse_filter,
)
from hmsproxy.hive.partition_filter.java_values import java_order, parse_date_prefix, parse_timestamp
from hmsproxy.hive.partition_filter.plan import (
    ORDERS,
    PAST_EVERY_CHARACTER,
    AnyOf,
    Plan,
    Range,
    all_of_plans,
    comparison_range,
)

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

Predicate = Callable[[Sequence[str]], bool]


TYPE_MISMATCH = "Filtering is supported only on partition keys of type string"  # HMS 2.3's text


class FilterTypeMismatch(FilterError):
    """A constant of another type than its key's: refused with HMS's text, which names no position."""

    def __init__(self) -> None:
        super().__init__(TYPE_MISMATCH)


@dataclass(frozen=True)
class PartitionFilter:
    """A compiled filter: `matches` decides one partition by its values (strings as stored, in key order);
    `plan` names the key ranges that hold every match, for a store that keeps its values indexed."""
    matches: Predicate
    plan: Plan


def names_matching(names_and_values: Sequence[tuple[str, Sequence[str]]], partition_filter: PartitionFilter
                   ) -> list[str]:
    """The names whose values match, in the order given: the answer of a store that scans."""
    return [name for name, values in names_and_values if partition_filter.matches(values)]


# --------------------------------------------------------------------------------------------
# LIKE
# --------------------------------------------------------------------------------------------

def _like(index: int, pattern: str) -> tuple[Predicate, Plan]:
    like = LikePattern.compile(pattern)
    prefix = java_order(like.prefix)
    plan = Range(index, "string", prefix, prefix + PAST_EVERY_CHARACTER, high_inclusive=False,
                 exact=False) if prefix else None
    return (lambda values: like.matches(values[index])), plan


# --------------------------------------------------------------------------------------------
# Compilation
# --------------------------------------------------------------------------------------------

# Compares a partition's value with the constant, both as parsed for the key's type.
Compare = Callable[[Any, Any], bool]

_OPS: dict[str, Compare] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}

_INTEGRAL = frozenset({"tinyint", "smallint", "int", "integer", "bigint"})
_STRINGS = frozenset({"string", "varchar", "char"})
_DECIMALS = frozenset({"decimal", "numeric", "float", "double"})


def _category(type_name: str) -> str:
    """Hive type string -> how values of that type are compared."""
    m = re.match(r"\s*([a-z_]+)", type_name.lower())
    base = m.group(1) if m else ""
    if base in _INTEGRAL:
        return "integral"
    if base in _STRINGS:
        return "string"
    if base in _DECIMALS:
        return "decimal"
    if base in ("date", "timestamp"):
        return base
    return "unsupported"


class _Compiler:
    def __init__(self, text: str, partition_keys: Sequence[tuple[str, str]]) -> None:
        self.text = text
        self.keys = [(name.lower(), type_name) for name, type_name in partition_keys]
        self.index = {name: i for i, (name, _) in enumerate(self.keys)}

    def compile(self, node: Node) -> tuple[Predicate, Plan]:
        if isinstance(node, MatchAll):
            return (lambda values: True), None
        if isinstance(node, And):
            compiled = [self.compile(p) for p in node.parts]
            all_of = [predicate for predicate, _ in compiled]
            return (lambda values: all(p(values) for p in all_of)), all_of_plans([plan for _, plan in compiled])
        if isinstance(node, Or):
            compiled = [self.compile(p) for p in node.parts]
            any_of = [predicate for predicate, _ in compiled]
            return (lambda values: any(p(values) for p in any_of)), AnyOf(tuple(plan for _, plan in compiled))
        if isinstance(node, Between):
            if node.negated:
                return self.compile(Or((Comparison(node.key, "<", node.low), Comparison(node.key, ">", node.high))))
            return self.compile(And((Comparison(node.key, ">=", node.low), Comparison(node.key, "<=", node.high))))
        if isinstance(node, InList):
            op = "!=" if node.negated else "="
            leaves = tuple(Comparison(node.key, op, v) for v in node.values)
            return self.compile(And(leaves) if node.negated else Or(leaves))
        if isinstance(node, Comparison):
            return self.comparison(node)
        raise TypeError(f"unknown filter node {node!r}")

    def fail(self, pos: int, what: str) -> FilterError:
        return error_at(self.text, pos, what)

    def comparison(self, node: Comparison) -> tuple[Predicate, Plan]:
        key, const = node.key, node.value
        if key.name not in self.index:
            known = ", ".join(name for name, _ in self.keys) or "none"
            raise self.fail(key.pos, f"{key.name!r} is not a partition key (partition keys: {known})")
        idx = self.index[key.name]
        type_name = self.keys[idx][1]
        category = _category(type_name)
        if category == "unsupported":
            raise self.fail(key.pos, f"filtering on partition key {key.name!r} of type {type_name} is not supported")
        if const.kind == "int" and category in ("string", "date", "timestamp"):
            raise FilterTypeMismatch()
        if node.op == "like":
            return _like(idx, const.text())

        if (const.kind == "string" and const.value == DEFAULT_PARTITION_NAME) or category == "string":
            return self.typed(idx, node.op, "string", java_order(const.text()))
        if category in ("integral", "decimal"):
            if const.kind == "string":
                raise FilterTypeMismatch()
            if const.kind != "int":
                raise self.fail(const.pos,
                                f"cannot compare {type_name} key {key.name!r} with {const.text()!r}: not a number")
            return self.typed(idx, node.op, category, const.value if category == "integral" else Decimal(const.value))
        if category == "date":
            target = parse_date_prefix(const.text())
            if target is None:
                raise self.fail(const.pos, f"cannot compare date key {key.name!r} with {const.text()!r}: not a date")
            return self.typed(idx, node.op, "date", target)
        # timestamp
        ts = parse_timestamp(const.text())
        if ts is None:
            raise self.fail(const.pos,
                            f"cannot compare timestamp key {key.name!r} with {const.text()!r}: not a timestamp")
        return self.typed(idx, node.op, "timestamp", ts)

    @staticmethod
    def typed(idx: int, op: str, order: str, target: object) -> tuple[Predicate, Plan]:
        """Compares values read in `order` (ORDERS) with the target; a value that does not read so never
        matches (SQL NULL)."""
        read, cmp = ORDERS[order], _OPS[op]

        def predicate(values: Sequence[str]) -> bool:
            value = read(values[idx])
            return value is not None and cmp(value, target)
        return predicate, comparison_range(idx, order, op, target)


# Compiled filters kept for the filters asked again (a query planner sends the same filter for every query of
# its shape): parsing and compiling one is a tenth of an indexed get_partitions_by_filter. Only short ones are
# kept, so that the memo holds at most COMPILED_KEPT x COMPILED_TEXT_MAX characters of filters.
COMPILED_KEPT = 256
COMPILED_TEXT_MAX = 4096


def compile_partition_filter(text: str, partition_keys: Sequence[tuple[str, str]]) -> PartitionFilter:
    """partition_keys: (lower-case key name, Hive type string such as 'string', 'int', 'bigint', 'smallint',
    'tinyint', 'date', 'varchar(10)', 'char(5)', 'decimal(10,2)', 'timestamp') in key order. The result is
    immutable and may be shared."""
    keys = tuple(partition_keys)
    return _compiled(text, keys) if len(text) <= COMPILED_TEXT_MAX else _compile(text, keys)


def _compile(text: str, partition_keys: tuple[tuple[str, str], ...]) -> PartitionFilter:
    predicate, plan = _Compiler(text, partition_keys).compile(parse_filter(text))
    return PartitionFilter(predicate, plan)


_compiled = functools.lru_cache(maxsize=COMPILED_KEPT)(_compile)


def compile_filter(text: str, partition_keys: Sequence[tuple[str, str]]) -> Callable[[Sequence[str]], bool]:
    """The predicate alone: takes one partition's values (strings as stored, in key order) and says whether it
    matches."""
    return compile_partition_filter(text, partition_keys).matches
