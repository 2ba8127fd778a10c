r"""Hive's partition filter language, compiled into a predicate over partition values, and a plan of the
ranges of key values an index can select candidates by (a superset of the matches, exactly the matches where
every part is a comparison; elsewhere the predicate decides).

The filter string is what clients pass to ``get_partitions_by_filter`` and
``get_num_partitions_by_filter`` (Spark builds it in ``HiveShim.convertFilters``), e.g.::

    ds = "2024-01-01" and hr > 1        (ds) in ("a", "b")        (hr) not in (0, 1)
    ds like "2024-01-0.*"               hr between 1 and 5          `ds` = DATE '2024-01-01'

Grammar (the union of Hive 2.3.10's ``Filter.g`` and Hive 4's ``PartitionFilter.g4``)::

    filter     := orExpr EOF
    orExpr     := andExpr (OR andExpr)*                       -- AND binds tighter than OR
    andExpr    := expr (AND expr)*
    expr       := '(' orExpr ')' | condition
    condition  := key op const | const op key                 -- op: = == <> != < <= > >= LIKE
                | key [NOT] BETWEEN const AND const
                | '(' key ')' [NOT] IN '(' const (',' const)* ')'
    key        := [A-Za-z0-9_]+ | `back``quoted`
    const      := '...' | "..." | [-] digits | DATE 'yyyy-mm-dd' | yyyy-mm-dd
                | TIMESTAMP 'yyyy-mm-dd hh:mm:ss' | yyyy-mm-dd hh:mm:ss

Facts behind the choices (source in brackets; "measured" = checked against the real HMS 2.3.10
on Derby, see tests/test_partition_filter.py):

* Keywords and key names are case-insensitive [both grammars upper-case the char stream; key
  lookup is ``equalsIgnoreCase``]. A key that is a keyword (``date``) needs backquotes [g4].
* String literals are only *trimmed* of their quotes, never unescaped: ``"a\"b"`` means the
  four characters ``a\"b``; a backslash only stops the lexer from ending the string [Filter.g
  ``TrimQuotes``, g4 ``unquoteString``; measured]. To match a value containing ``"`` use
  ``'a"b'`` (Spark does exactly that).
* ``not (...)``, ``key IN (...)`` without parentheses, ``<=>`` and ``STRUCT`` multi-column IN are
  rejected [not in 2.3.10, measured; ``<=>`` has no operator in Hive 4's visitor].
* Trailing tokens are an error. Hive's rule ``filter: orExpression`` has no EOF, so HMS silently
  ignores them (``ds = "a")`` is ``ds = "a"``, measured); we refuse rather than guess.
* An empty or all-whitespace filter matches everything. HMS treats only the empty string that
  way; an all-whitespace filter is a MetaException there (measured). Nothing is lost by
  accepting it.
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

import datetime as _dt
import functools
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from hmsproxy.hive.like import LikePattern

__all__ = ["FilterError", "FilterTypeMismatch", "PartitionFilter", "compile_filter", "compile_partition_filter"]

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

Predicate = Callable[[Sequence[str]], bool]


TYPE_MISMATCH = "Filtering is supported only on partition keys of type string"  # HMS 2.3's text


class FilterError(ValueError):
    """The filter does not parse or names something that is not a partition key; message says what and where."""


class FilterTypeMismatch(FilterError):
    """A constant of another type than its key's: refused with HMS's text, which names no position."""

    def __init__(self) -> None:
        super().__init__(TYPE_MISMATCH)


# --------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------

_KEYWORDS = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "DATE", "TIMESTAMP", "STRUCT", "CONST"})
_OPERATORS = ("<=>", "==", "<>", "!=", "<=", ">=", "=", "<", ">")  # longest first
_OP_CANONICAL = {"=": "=", "==": "=", "<>": "!=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

_STRING_RE = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""", re.DOTALL)
_TIMESTAMP_VALUE_RE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_DATE_VALUE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_WORD_RE = re.compile(r"[A-Za-z0-9_]+")
_QUOTED_IDENT_RE = re.compile(r"`(?:``|[^`])*`")
_WS = " \t\r\n"  # the only whitespace Hive's lexers skip


@dataclass(frozen=True)
class Token:
    kind: str  # KEYWORD IDENT STRING INT DATE_VALUE TIMESTAMP_VALUE OP ( ) , - EOF
    text: str  # keyword upper-cased, identifier as written (unquoted), literal as written
    pos: int   # 0-based offset into the filter string


def _error(text: str, pos: int, what: str) -> FilterError:
    return FilterError(f"{what} at position {pos} in filter {text!r}")


def tokenize(text: str) -> list[Token]:
    """Split a filter into tokens; the longest match wins, as in ANTLR lexers."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WS:
            i += 1
            continue
        if ch in "(),-":
            tokens.append(Token(ch, ch, i))
            i += 1
            continue
        if ch in "'\"":
            m = _STRING_RE.match(text, i)
            if not m:
                raise _error(text, i, "unterminated string literal")
            tokens.append(Token("STRING", m.group(), i))
            i = m.end()
            continue
        if ch == "`":
            m = _QUOTED_IDENT_RE.match(text, i)
            if not m:
                raise _error(text, i, "unterminated `quoted` identifier")
            tokens.append(Token("IDENT", m.group()[1:-1].replace("``", "`"), i))
            i = m.end()
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            tokens.append(Token("OP", op, i))
            i += len(op)
            continue
        if m := _TIMESTAMP_VALUE_RE.match(text, i):
            tokens.append(Token("TIMESTAMP_VALUE", m.group(), i))
        elif m := _DATE_VALUE_RE.match(text, i):
            tokens.append(Token("DATE_VALUE", m.group(), i))
        elif m := _WORD_RE.match(text, i):
            word = m.group()
            if word.isdigit():
                tokens.append(Token("INT", word, i))
            elif word.upper() in _KEYWORDS:
                tokens.append(Token("KEYWORD", word.upper(), i))
            else:
                tokens.append(Token("IDENT", word, i))
        else:
            raise _error(text, i, f"unexpected character {ch!r}")
        i = m.end()
    tokens.append(Token("EOF", "", n))
    return tokens


# --------------------------------------------------------------------------------------------
# AST
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Const:
    """A literal. kind: 'string' (value = text without quotes), 'int' (value = int),
    'date' / 'timestamp' (value = the literal's text, already validated)."""
    kind: str
    value: str | int
    pos: int

    def text(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Key:
    name: str  # lower-cased
    pos: int


@dataclass(frozen=True)
class Comparison:
    """``key op value``; reversed comparisons are normalised by flipping op (``1 < k`` -> ``k > 1``)."""
    key: Key
    op: str  # = != < <= > >= like
    value: Const


@dataclass(frozen=True)
class Between:
    key: Key
    low: Const
    high: Const
    negated: bool


@dataclass(frozen=True)
class InList:
    key: Key
    values: tuple[Const, ...]
    negated: bool


@dataclass(frozen=True)
class And:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class MatchAll:
    """The empty filter."""


Node = Comparison | Between | InList | And | Or | MatchAll

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


# --------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------

class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    # -- helpers --
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.i += 1
        return tok

    def is_kw(self, word: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == "KEYWORD" and tok.text == word

    def fail(self, tok: Token, expected: str) -> FilterError:
        found = "end of filter" if tok.kind == "EOF" else repr(tok.text)
        return _error(self.text, tok.pos, f"expected {expected}, found {found}")

    def expect(self, kind: str, expected: str) -> Token:
        tok = self.next()
        if tok.kind != kind:
            raise self.fail(tok, expected)
        return tok

    def expect_kw(self, word: str) -> Token:
        tok = self.next()
        if tok.kind != "KEYWORD" or tok.text != word:
            raise self.fail(tok, word)
        return tok

    # -- rules --
    def parse(self) -> Node:
        node = self.or_expr()
        tok = self.peek()
        if tok.kind != "EOF":
            raise self.fail(tok, "AND, OR or end of filter")
        return node

    def or_expr(self) -> Node:
        parts = [self.and_expr()]
        while self.is_kw("OR"):
            self.next()
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_expr(self) -> Node:
        parts = [self.expr()]
        while self.is_kw("AND"):
            self.next()
            parts.append(self.expr())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def expr(self) -> Node:
        tok = self.peek()
        if tok.kind == "(":
            # '(' key ')' [NOT] IN ...  versus a parenthesised sub-expression
            if self.peek(1).kind == "IDENT" and self.peek(2).kind == ")" and (
                self.is_kw("IN", 3) or (self.is_kw("NOT", 3) and self.is_kw("IN", 4))
            ):
                return self.in_list()
            if self.is_kw("STRUCT", 1):
                raise _error(self.text, self.peek(1).pos, "multi-column (STRUCT) IN is not supported")
            self.next()
            node = self.or_expr()
            self.expect(")", "')'")
            return node
        if tok.kind == "KEYWORD" and tok.text == "NOT":
            raise _error(self.text, tok.pos, "NOT is only allowed in NOT BETWEEN and (key) NOT IN")
        if tok.kind == "IDENT":
            return self.key_first()
        if self.starts_const():
            return self.const_first()
        raise self.fail(tok, "a partition key, a constant or '('")

    def in_list(self) -> Node:
        self.expect("(", "'('")
        key = self.key()
        self.expect(")", "')'")
        negated = self.is_kw("NOT")
        if negated:
            self.next()
        self.expect_kw("IN")
        self.expect("(", "'(' starting the IN list")
        values = [self.const()]
        while self.peek().kind == ",":
            self.next()
            values.append(self.const())
        self.expect(")", "',' or ')' closing the IN list")
        return InList(key, tuple(values), negated)

    def key_first(self) -> Node:
        key = self.key()
        tok = self.peek()
        negated = False
        if self.is_kw("NOT"):
            self.next()
            negated = True
            tok = self.peek()
            if not (self.is_kw("BETWEEN") or self.is_kw("IN")):
                raise self.fail(tok, "BETWEEN or IN after NOT")
        if self.is_kw("BETWEEN"):
            self.next()
            low = self.const()
            self.expect_kw("AND")
            high = self.const()
            return Between(key, low, high, negated)
        if self.is_kw("IN"):
            raise _error(self.text, tok.pos,
                         f"IN needs the key in parentheses: ({key.name}) {'NOT ' if negated else ''}IN (...)")
        op = self.operator()
        return Comparison(key, op, self.const())

    def const_first(self) -> Node:
        value = self.const()
        op_tok = self.peek()
        op = self.operator()
        key = self.key()
        if op == "like":
            raise _error(self.text, op_tok.pos, f"the value must be on the right of LIKE (key {key.name})")
        return Comparison(key, _FLIP[op], value)

    def key(self) -> Key:
        tok = self.expect("IDENT", "a partition key")
        return Key(tok.text.lower(), tok.pos)

    def operator(self) -> str:
        tok = self.next()
        if tok.kind == "KEYWORD" and tok.text == "LIKE":
            return "like"
        if tok.kind == "OP":
            if tok.text == "<=>":
                raise _error(self.text, tok.pos, "operator <=> is not supported")
            return _OP_CANONICAL[tok.text]
        raise self.fail(tok, "a comparison operator (= == <> != < <= > >= LIKE)")

    def starts_const(self) -> bool:
        tok = self.peek()
        return tok.kind in ("STRING", "INT", "-", "DATE_VALUE", "TIMESTAMP_VALUE") or (
            tok.kind == "KEYWORD" and tok.text in ("DATE", "TIMESTAMP"))

    def const(self) -> Const:
        tok = self.next()
        if tok.kind == "STRING":
            return Const("string", tok.text[1:-1], tok.pos)
        if tok.kind in ("INT", "-"):
            digits = tok if tok.kind == "INT" else self.expect("INT", "digits after '-'")
            value = int(digits.text) * (-1 if tok.kind == "-" else 1)
            if not _LONG_MIN <= value <= _LONG_MAX:
                raise _error(self.text, tok.pos, f"integer {value} does not fit in a 64-bit long")
            return Const("int", value, tok.pos)
        if tok.kind == "DATE_VALUE" or (tok.kind == "KEYWORD" and tok.text == "DATE"):
            lit = tok.text if tok.kind == "DATE_VALUE" else self.expect("STRING", "a quoted date").text[1:-1]
            if _parse_date_strict(lit) is None:
                raise _error(self.text, tok.pos, f"invalid date {lit!r} (expected yyyy-mm-dd)")
            return Const("date", lit, tok.pos)
        if tok.kind == "TIMESTAMP_VALUE" or (tok.kind == "KEYWORD" and tok.text == "TIMESTAMP"):
            lit = tok.text if tok.kind == "TIMESTAMP_VALUE" else self.expect("STRING", "a quoted timestamp").text[1:-1]
            if _parse_timestamp(lit) is None:
                raise _error(self.text, tok.pos, f"invalid timestamp {lit!r} (expected yyyy-mm-dd hh:mm:ss)")
            return Const("timestamp", lit, tok.pos)
        raise self.fail(tok, "a constant (string, integer, date or timestamp)")


def parse_filter(text: str) -> Node:
    """Parse a filter into an AST; an empty or blank filter is MatchAll."""
    if not text.strip(_WS):
        return MatchAll()
    return _Parser(text).parse()


# --------------------------------------------------------------------------------------------
# Value parsing
# --------------------------------------------------------------------------------------------

_INT_VALUE_RE = re.compile(r"\s*[+-]?\d+\s*")
_DATE_PREFIX_RE = re.compile(r"(\d{1,4})-(\d{1,2})-(\d{1,2})(?!\d)")
_DATE_STRICT_RE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_TIMESTAMP_RE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?")


def _make_date(m: re.Match[str] | None) -> _dt.date | None:
    if m is None:
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _parse_date_strict(s: str) -> _dt.date | None:
    """A whole yyyy-m-d value (stored partition values, DATE literals)."""
    return _make_date(_DATE_STRICT_RE.fullmatch(s))


def _parse_date_prefix(s: str) -> _dt.date | None:
    """Like Hive's SimpleDateFormat("yyyy-MM-dd").parse: a valid date at the start is enough."""
    return _make_date(_DATE_PREFIX_RE.match(s))


def _parse_timestamp(s: str) -> tuple[_dt.datetime, int] | None:
    """yyyy-mm-dd[ hh:mm:ss[.fffffffff]] -> (datetime to the second, nanoseconds)."""
    m = _TIMESTAMP_RE.fullmatch(s.strip())
    if m is None:
        return None
    try:
        when = _dt.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                            int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0))
    except ValueError:
        return None
    return when, int((m.group(7) or "0").ljust(9, "0"))


def _parse_int(s: str) -> int | None:
    return int(s) if _INT_VALUE_RE.fullmatch(s) else None


def _parse_decimal(s: str) -> Decimal | None:
    try:
        d = Decimal(s.strip())
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def _java_order(s: str) -> str:
    """A string whose Python order equals Java's String.compareTo (UTF-16 code units).

    Python compares code points; they differ only for characters above U+FFFF, which Java sees
    as surrogates (0xD800-0xDFFF) and so sorts *before* U+E000-U+FFFF.
    """
    if s.isascii() or max(s) < "\U00010000":
        return s
    out = []
    for c in s:
        cp = ord(c)
        if cp < 0x10000:
            out.append(c)
        else:
            cp -= 0x10000
            out.append(chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF)))
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Plans: what an index of sorted key values can narrow the candidates to
# --------------------------------------------------------------------------------------------

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
ORDERS: dict[str, Callable[[str], Any]] = {"string": _java_order, "integral": _parse_int, "decimal": _parse_decimal,
                                           "date": _parse_date_strict, "timestamp": _parse_timestamp}
_PAST_EVERY_CHARACTER = "\U0010FFFF"   # above every UTF-16 code unit, so above every continuation of a prefix


def _range(key: int, order: str, op: str, target: Any) -> Plan:
    if op == "=":
        return Range(key, order, target, target)
    if op in ("<", "<="):
        return Range(key, order, high=target, high_inclusive=op == "<=")
    if op in (">", ">="):
        return Range(key, order, low=target, low_inclusive=op == ">=")
    return None   # != selects nearly everything: the predicate alone is cheaper


def _all_of(plans: Sequence[Plan]) -> Plan:
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
    prefix = _java_order(like.prefix)
    plan = Range(index, "string", prefix, prefix + _PAST_EVERY_CHARACTER, high_inclusive=False,
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
            return (lambda values: all(p(values) for p in all_of)), _all_of([plan for _, plan in compiled])
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
        return _error(self.text, pos, what)

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
            return self.typed(idx, node.op, "string", _java_order(const.text()))
        if category in ("integral", "decimal"):
            if const.kind == "string":
                raise FilterTypeMismatch()
            if const.kind != "int":
                raise self.fail(const.pos,
                                f"cannot compare {type_name} key {key.name!r} with {const.text()!r}: not a number")
            return self.typed(idx, node.op, category, const.value if category == "integral" else Decimal(const.value))
        if category == "date":
            target = _parse_date_prefix(const.text())
            if target is None:
                raise self.fail(const.pos, f"cannot compare date key {key.name!r} with {const.text()!r}: not a date")
            return self.typed(idx, node.op, "date", target)
        # timestamp
        ts = _parse_timestamp(const.text())
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
        return predicate, _range(idx, order, op, target)


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
