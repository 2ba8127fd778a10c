"""The linear LIKE matcher means what a backtracking regex of the same pattern means (DataNucleus' reading
of HMS "regex" patterns: `.*` any sequence, `.` any one character, the rest literal), for any pattern."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hmsproxy.hive.like import LikePattern

PIECES = st.sampled_from(["a", "b", ".", ".*", "\\.", "\\\\", "\\%", "\\_", "%", "_", "[", "(", "?", "+", "\\"])


def _backtracking(pattern: str) -> re.Pattern[str]:
    """The same pattern as one Python regex: exponential on crafted input, right on small input."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(re.escape(".") if nxt == "." else re.escape("\\\\") if nxt == "\\" else
                       re.escape("\\") + {"%": ".*", "_": "."}.get(nxt, re.escape(nxt)))
            i += 2
        elif pattern.startswith(".*", i):
            out.append(".*")
            i += 2
        else:
            out.append("." if c == "." else re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


VALUES = st.text(alphabet="ab", max_size=8) | st.text(alphabet="ab.\\%_[(?+", max_size=10)


@settings(max_examples=1500, deadline=None)
@given(st.lists(PIECES, max_size=8).map("".join), VALUES)
def test_the_linear_matcher_agrees_with_a_backtracking_regex(pattern, value):
    assert LikePattern.compile(pattern).matches(value) == bool(_backtracking(pattern).fullmatch(value))


def test_case_insensitive_patterns():
    assert LikePattern.compile("(?i)SALES.*").matches("sales_eu")
    assert not LikePattern.compile("SALES.*").matches("sales_eu")


def test_pieces_never_overlap_the_anchored_suffix():
    for pattern, value in ((".*a.*a", "a"), ("a.*b.*b", "ab"), ("a.*a", "a"), (".*ab.*b", "ab"), ("a.*.*a", "a")):
        assert not LikePattern.compile(pattern).matches(value), pattern
        assert LikePattern.compile(pattern).matches(value + value[-1] if pattern != ".*ab.*b" else "abb"), pattern
