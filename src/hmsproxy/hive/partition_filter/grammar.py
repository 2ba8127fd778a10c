r"""Hive's partition filter grammar: a filter string -> its syntax tree (tokens, AST, a recursive-descent parser).

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
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from hmsproxy.hive.partition_filter.java_values import LONG_MAX, LONG_MIN, parse_date_strict, parse_timestamp


class FilterError(ValueError):
    """The filter does not parse or names something that is not a partition key; message says what and where."""


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


def error_at(text: str, pos: int, what: str) -> FilterError:
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
                raise error_at(text, i, "unterminated string literal")
            tokens.append(Token("STRING", m.group(), i))
            i = m.end()
            continue
        if ch == "`":
            m = _QUOTED_IDENT_RE.match(text, i)
            if not m:
                raise error_at(text, i, "unterminated `quoted` identifier")
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
            raise error_at(text, i, f"unexpected character {ch!r}")
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
        return error_at(self.text, tok.pos, f"expected {expected}, found {found}")

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
                raise error_at(self.text, self.peek(1).pos, "multi-column (STRUCT) IN is not supported")
            self.next()
            node = self.or_expr()
            self.expect(")", "')'")
            return node
        if tok.kind == "KEYWORD" and tok.text == "NOT":
            raise error_at(self.text, tok.pos, "NOT is only allowed in NOT BETWEEN and (key) NOT IN")
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
            raise error_at(self.text, tok.pos,
                         f"IN needs the key in parentheses: ({key.name}) {'NOT ' if negated else ''}IN (...)")
        op = self.operator()
        return Comparison(key, op, self.const())

    def const_first(self) -> Node:
        value = self.const()
        op_tok = self.peek()
        op = self.operator()
        key = self.key()
        if op == "like":
            raise error_at(self.text, op_tok.pos, f"the value must be on the right of LIKE (key {key.name})")
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
                raise error_at(self.text, tok.pos, "operator <=> is not supported")
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
            if not LONG_MIN <= value <= LONG_MAX:
                raise error_at(self.text, tok.pos, f"integer {value} does not fit in a 64-bit long")
            return Const("int", value, tok.pos)
        if tok.kind == "DATE_VALUE" or (tok.kind == "KEYWORD" and tok.text == "DATE"):
            lit = tok.text if tok.kind == "DATE_VALUE" else self.expect("STRING", "a quoted date").text[1:-1]
            if parse_date_strict(lit) is None:
                raise error_at(self.text, tok.pos, f"invalid date {lit!r} (expected yyyy-mm-dd)")
            return Const("date", lit, tok.pos)
        if tok.kind == "TIMESTAMP_VALUE" or (tok.kind == "KEYWORD" and tok.text == "TIMESTAMP"):
            lit = tok.text if tok.kind == "TIMESTAMP_VALUE" else self.expect("STRING", "a quoted timestamp").text[1:-1]
            if parse_timestamp(lit) is None:
                raise error_at(self.text, tok.pos, f"invalid timestamp {lit!r} (expected yyyy-mm-dd hh:mm:ss)")
            return Const("timestamp", lit, tok.pos)
        raise self.fail(tok, "a constant (string, integer, date or timestamp)")


def parse_filter(text: str) -> Node:
    """Parse a filter into an AST; an empty or blank filter is MatchAll."""
    if not text.strip(_WS):
        return MatchAll()
    return _Parser(text).parse()
