"""Hive's "regex" patterns as HMS 2.3 really evaluates them, matched in linear time.

HMS hands LIKE filters and name patterns (get_tables, get_databases, get_functions) to DataNucleus'
`String.matches`, which rewrites the "regex" into SQL LIKE (escape `\\`): `.*` is any sequence, `.` any
one character, `\\.` a literal dot, `\\\\` two literal backslashes, `\\` + another character a literal
backslash then that character read as LIKE text (so `%` and `_` after it stay wildcards), everything
else literal (`[`, `(`, `+`, `?` included). A leading `(?i)` makes the match case-insensitive. The whole
value must match.

A pattern is therefore fixed-length segments joined by "any sequence". Each segment compiles to a regular
expression with no quantifier or alternative, and the segments are placed leftmost in turn (the suffix
anchored at the end): no backtracking, so a crafted pattern costs at most (value length x pattern length)
steps in the regex engine instead of an exponential number.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

_ANY_ONE = object()   # `.`
_ANY_SEQ = object()   # `.*`


def _tokens(pattern: str) -> list[object]:
    """The pattern as literal characters, _ANY_ONE and _ANY_SEQ (DataNucleus' rewrite, see the docstring)."""
    tokens: list[object] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == ".":
                tokens.append(".")
            elif nxt == "\\":
                tokens += ["\\", "\\"]
            else:
                tokens.append("\\")
                tokens.append({"%": _ANY_SEQ, "_": _ANY_ONE}.get(nxt, nxt))
            i += 2
        elif c == "." and i + 1 < n and pattern[i + 1] == "*":
            tokens.append(_ANY_SEQ)
            i += 2
        else:
            tokens.append(_ANY_ONE if c == "." else c)
            i += 1
    return tokens


def _segment(tokens: list[object]) -> re.Pattern[str]:
    return re.compile("".join("." if t is _ANY_ONE else re.escape(str(t)) for t in tokens), re.DOTALL)


@dataclass(frozen=True)
class LikePattern:
    segments: tuple[re.Pattern[str], ...]   # fixed-length pieces between the "any sequence" wildcards
    lengths: tuple[int, ...]
    ignore_case: bool
    prefix: str   # the literal text every match starts with (empty when the case is ignored)

    @classmethod
    def compile(cls, pattern: str) -> LikePattern:
        ignore_case = pattern.startswith("(?i)")
        if ignore_case:
            pattern = pattern[4:].upper()
        pieces: list[list[object]] = [[]]
        for token in _tokens(pattern):
            if token is _ANY_SEQ:
                pieces.append([])
            else:
                pieces[-1].append(token)
        literal = [] if ignore_case else list(itertools.takewhile(lambda t: isinstance(t, str), pieces[0]))
        return cls(tuple(_segment(p) for p in pieces), tuple(len(p) for p in pieces), ignore_case,
                   "".join(str(t) for t in literal))

    def matches(self, value: str) -> bool:
        if self.ignore_case:
            value = value.upper()
        first, last = self.segments[0], self.segments[-1]
        if len(self.segments) == 1:
            return first.fullmatch(value) is not None
        suffix_at = len(value) - self.lengths[-1]
        if suffix_at < self.lengths[0] or first.match(value) is None:
            return False
        position = self.lengths[0]
        for segment in self.segments[1:-1]:
            found = segment.search(value, position, suffix_at)
            if found is None:
                return False
            position = found.end()
        return last.fullmatch(value, suffix_at) is not None
