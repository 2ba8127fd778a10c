"""Tests for hmsproxy.hive.partition_filter.

Expectations marked "HMS 2.3.10" were measured against the real Hive Metastore 2.3.10 (Derby)
with get_partitions_by_filter; the rest follow Hive 4's PartitionFilter.g4 or our documented
leniency.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmsproxy.hive.partition_filter import FilterError, FilterTypeMismatch, compile_filter

DEFAULT = "__HIVE_DEFAULT_PARTITION__"

STRING_VALUES = ["10", "9", 'a"b', 'a\\"b', "a'b", "a%b", "axb", "a.b", "2024-01-01", "2024-02-01",
                 DEFAULT, "ABC", "abc", "a\\b"]
INT_VALUES = ["9", "10", "-1", "01", DEFAULT]
DATE_VALUES = ["2024-01-01", "2024-01-10", "2023-12-31", DEFAULT]
MULTI = [("a", "1"), ("a", "2"), ("b", "1"), ("b", "10"), ("2024-01-01", "0")]


def select(flt: str, keys: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]) -> list:
    pred = compile_filter(flt, keys)
    return [r for r in rows if pred(r)]


def s(flt: str) -> set[str]:
    """Matching values of a single string key 's'."""
    return {r[0] for r in select(flt, [("s", "string")], [[v] for v in STRING_VALUES])}


def i(flt: str, values: Sequence[str] = INT_VALUES) -> set[str]:
    """Matching values of a single int key 'i'."""
    return {r[0] for r in select(flt, [("i", "int")], [[v] for v in values])}


def d(flt: str) -> set[str]:
    return {r[0] for r in select(flt, [("d", "date")], [[v] for v in DATE_VALUES])}


def m(flt: str) -> set[str]:
    """Matching rows of (ds string, hr int), as 'ds/hr'."""
    return {"/".join(r) for r in select(flt, [("ds", "string"), ("hr", "int")], MULTI)}


# ------------------------------------------------------------------------------ empty filters

@pytest.mark.parametrize("flt", ["", " ", "  \t\r\n "])
def test_empty_or_blank_filter_matches_everything(flt: str) -> None:
    # HMS 2.3.10: "" -> all partitions; "   " -> MetaException (we accept it, documented)
    assert s(flt) == set(STRING_VALUES)


# ------------------------------------------------------------------------------ Spark's forms

def test_spark_and_with_numeric_comparison() -> None:
    assert m('ds = "a" and hr > 1') == {"a/2"}  # HMS 2.3.10


def test_spark_in_and_not_in() -> None:
    assert m('(ds) in ("a", "b")') == {"a/1", "a/2", "b/1", "b/10"}
    assert m("(hr) not in (0, 1)") == {"a/2", "b/10"}
    assert m('(ds) in ("a") and (hr) not in (1)') == {"a/2"}  # HMS 2.3.10


def test_spark_not_equal_like_or_range() -> None:
    assert s('s != "10"') == set(STRING_VALUES) - {"10"}  # HMS 2.3.10: default partition included
    assert s('s like "2024-01-0.*"') == {"2024-01-01"}
    assert m('(ds = "a" or ds = "b")') == {"a/1", "a/2", "b/1", "b/10"}
    assert m("hr >= 1 and hr <= 2") == {"a/1", "a/2", "b/1"}


def test_spark_dates_as_quoted_strings() -> None:
    assert d('d = "2024-01-01"') == {"2024-01-01"}  # HMS 2.3.10
    assert d('d > "2024-01-01"') == {"2024-01-10"}  # HMS 2.3.10
    assert m('ds = "2024-01-01"') == {"2024-01-01/0"}


# ------------------------------------------------------------------------------ grammar

def test_and_binds_tighter_than_or() -> None:
    assert s('s = "9" or s = "10" and s = "x"') == {"9"}  # HMS 2.3.10
    assert s('(s = "9" or s = "10") and s = "x"') == set()  # HMS 2.3.10
    assert m('ds = "b" or hr = 2 and ds = "x"') == {"b/1", "b/10"}  # HMS 2.3.10


def test_nested_parentheses() -> None:
    assert m('((ds = "a"))') == {"a/1", "a/2"}
    assert m('ds = "a" AND (hr = 1 OR hr = 2)') == {"a/1", "a/2"}
    assert m('(((ds = "a") or (ds = "b")) and ((hr) in (10)))') == {"b/10"}


@pytest.mark.parametrize("op, expected", [
    ("=", {"10"}), ("==", {"10"}), ("!=", {"-1", "9", "01"}), ("<>", {"-1", "9", "01"}),
    ("<", {"-1", "9", "01"}), ("<=", {"-1", "9", "01", "10"}), (">", set()), (">=", {"10"}),
])
def test_all_comparison_operators(op: str, expected: set[str]) -> None:
    assert i(f"i {op} 10") == expected


@pytest.mark.parametrize("flt, expected", [
    ("9 < i", {"10"}), ("9 <= i", {"9", "10"}), ("9 > i", {"-1", "01"}), ("9 >= i", {"-1", "01", "9"}),
    ("9 = i", {"9"}), ("9 != i", {"-1", "01", "10"}),
])
def test_reversed_comparison(flt: str, expected: set[str]) -> None:
    assert i(flt) == expected
    # HMS 2.3.10: "9" > s on a string key is s < "9"
    assert s('"9" > s') == {"10", "2024-01-01", "2024-02-01"}


def test_keywords_and_keys_are_case_insensitive() -> None:
    assert s('S = "10"') == {"10"}  # HMS 2.3.10
    assert s('s LiKe "a.*" AnD s != "abc"') == {'a"b', 'a\\"b', "a'b", "a%b", "axb", "a.b", "a\\b"}
    assert m('(DS) IN ("a") aNd hR NoT BeTwEeN 2 AnD 10') == {"a/1"}
    assert compile_filter('DS = "a"', [("ds", "string")])(["a"])


def test_backquoted_keys() -> None:
    assert s('`s` = "10"') == {"10"}
    pred = compile_filter('`date` = "x" and `we``ird` = "y"', [("date", "string"), ("we`ird", "string")])
    assert pred(["x", "y"]) and not pred(["x", "z"])


def test_whitespace_is_optional_around_operators() -> None:
    assert m("hr>1") == {"a/2", "b/10"}  # HMS 2.3.10
    assert m('ds="a"and hr=1') == {"a/1"}  # HMS 2.3.10


# ------------------------------------------------------------------------------ literals

def test_strings_in_single_or_double_quotes() -> None:
    assert s("s = '10'") == s('s = "10"') == {"10"}


def test_embedded_quotes_and_backslashes_are_not_unescaped() -> None:
    # Hive only trims the quotes; a backslash merely keeps the string open (HMS 2.3.10).
    assert s("s = 'a\"b'") == {'a"b'}
    assert s('s = "a\'b"') == {"a'b"}
    assert s('s = "a\\"b"') == {'a\\"b'}
    assert s("s = 'a\\'b'") == set()  # the value is a\'b, not a'b
    assert s('s = "a\\b"') == {"a\\b"}
    assert s("s = 'a\\\\b'") == set()  # a\\b has two backslashes


def test_negative_numbers() -> None:
    assert i("i < 0") == {"-1"}  # HMS 2.3.10
    assert i("i > -5") == {"-1", "01", "9", "10"}  # HMS 2.3.10
    assert i("i > - 5") == {"-1", "01", "9", "10"}  # Hive 4 allows space after '-'
    assert i("-1 = i") == {"-1"}
    assert i("i between -1 and 1") == {"-1", "01"}


def test_integer_out_of_long_range_is_an_error() -> None:
    with pytest.raises(FilterError, match="64-bit"):
        compile_filter("i = 99999999999999999999", [("i", "int")])  # HMS 2.3.10: MetaException
    assert i("i < 9223372036854775807") == {"-1", "01", "9", "10"}
    assert i("i > -9223372036854775808") == {"-1", "01", "9", "10"}


def test_date_literals() -> None:
    assert d("d > 2024-01-01") == {"2024-01-10"}  # HMS 2.3.10 (bare date)
    assert d("d = DATE '2024-01-10'") == {"2024-01-10"}
    assert d('d <= date "2024-01-01"') == {"2024-01-01", "2023-12-31"}
    assert s("s = 2024-01-01") == {"2024-01-01"}  # HMS 2.3.10: date literal on a string key
    assert s("s = DATE '2024-01-01'") == {"2024-01-01"}
    with pytest.raises(FilterError, match="invalid date"):
        compile_filter("d = 2024-02-30", [("d", "date")])
    with pytest.raises(FilterError, match="invalid date"):
        compile_filter("d = DATE 'soon'", [("d", "date")])


def test_timestamp_literals_and_keys() -> None:
    keys = [("t", "timestamp")]
    rows = [["2024-01-01 10:00:00"], ["2024-01-01 09:59:59.5"], ["2024-01-02 00:00:00"], [DEFAULT]]

    def got(f: str) -> set[str]:
        return {r[0] for r in select(f, keys, rows)}

    assert got("t >= 2024-01-01 10:00:00") == {"2024-01-01 10:00:00", "2024-01-02 00:00:00"}
    assert got("t < TIMESTAMP '2024-01-01 10:00:00'") == {"2024-01-01 09:59:59.5"}
    assert got('t > "2024-01-01"') == {"2024-01-01 10:00:00", "2024-01-01 09:59:59.5", "2024-01-02 00:00:00"}
    assert got("t != '2024-01-02 00:00:00'") == {"2024-01-01 10:00:00", "2024-01-01 09:59:59.5"}


# ------------------------------------------------------------------------------ BETWEEN / IN

def test_between_and_not_between() -> None:
    assert i("i between 1 and 9") == {"01", "9"}  # HMS 2.3.10
    assert i("i not between 1 and 9") == {"-1", "10"}  # HMS 2.3.10 (default partition never matches)
    assert s('s between "1" and "9"') == {"10", "2024-01-01", "2024-02-01", "9"}  # HMS 2.3.10
    assert s('s not between "1" and "9"') == set(STRING_VALUES) - {"10", "2024-01-01", "2024-02-01", "9"}
    assert d('d between "2024-01-01" and "2024-01-05"') == {"2024-01-01"}  # HMS 2.3.10
    assert i("i between 9 and 1") == set()


def test_in_and_not_in() -> None:
    assert i("(i) in (9, 10)") == {"9", "10"}  # HMS 2.3.10
    assert i("(i) not in (9, 10)") == {"-1", "01"}  # HMS 2.3.10
    assert i("(i) in (1)") == {"01"}
    assert s('(s) in ("10", "9")') == {"10", "9"}  # HMS 2.3.10
    assert s('(s) not in ("10", "9")') == set(STRING_VALUES) - {"10", "9"}  # HMS 2.3.10
    with pytest.raises(FilterTypeMismatch):
        i('(i) in ("9", 10)')  # HMS 2.3.10


def test_in_requires_parenthesised_key() -> None:
    with pytest.raises(FilterError, match=r"\(s\) IN"):
        compile_filter('s in ("10")', [("s", "string")])  # HMS 2.3.10: parse error
    with pytest.raises(FilterError, match=r"\(s\) NOT IN"):
        compile_filter('s not in ("10")', [("s", "string")])


# ------------------------------------------------------------------------------ LIKE

@pytest.mark.parametrize("pattern, expected", [
    # all measured on HMS 2.3.10
    ("a.b", {'a"b', "a%b", "a'b", "a.b", "a\\b", "axb"}),
    ("a.*", {'a"b', 'a\\"b', "a%b", "a'b", "a.b", "a\\b", "abc", "axb"}),
    (".*b", {'a"b', 'a\\"b', "a%b", "a'b", "a.b", "a\\b", "axb"}),
    ("a%b", {"a%b"}),              # % is literal
    ("a_b", set()),                # _ is literal
    ("a[x%]b", set()),             # no character classes
    ("ab?c", set()),               # no quantifiers
    ("a", set()), ("b", set()),    # whole-value match, not find()
    ("a.c", {"abc"}),
    ("A.*", {"ABC"}),              # case-sensitive ...
    ("(?i)abc", {"ABC", "abc"}),   # ... unless (?i)
    ("(?i)A.B", {'a"b', "a%b", "a'b", "a.b", "a\\b", "axb"}),
    ("a\\.b", {"a.b"}),            # \. is a literal dot
    ("a\\.*", set()),              # \. then a literal *
    ("a\\b", {"a\\b"}),            # \b is a backslash and b
    ("a\\%", {'a\\"b', "a\\b"}),   # \% is a backslash then any sequence
    ("a\\_", {"a\\b"}),            # \_ is a backslash then any one character
    ("a\\\\b", set()),             # \\ becomes two literal backslashes
    ("a\\\\", set()),
])
def test_like_follows_datanucleus_regex_translation(pattern: str, expected: set[str]) -> None:
    assert s(f"s like '{pattern}'") == expected


def test_like_with_spark_patterns() -> None:
    assert s('s like "2024.*"') == {"2024-01-01", "2024-02-01"}
    assert s('s like ".*-01"') == {"2024-01-01", "2024-02-01"}
    assert s('s like ".*-02-.*"') == {"2024-02-01"}
    assert s('s like ".*"') == set(STRING_VALUES)
    assert s("s like ''") == set()


def test_like_dot_matches_newline_and_values_with_regex_metacharacters() -> None:
    pred = compile_filter('s like "a.b"', [("s", "string")])
    assert pred(["a\nb"])
    assert compile_filter('s like "x+(y).*"', [("s", "string")])(["x+(y)z"])


def test_like_value_must_be_on_the_right() -> None:
    with pytest.raises(FilterError, match="right of LIKE"):
        compile_filter('"a.*" like s', [("s", "string")])  # HMS 2.3.10: MetaException


# ------------------------------------------------------------------------------ types

def test_numeric_versus_lexicographic_comparison() -> None:
    rows = [["9"], ["10"]]
    assert {r[0] for r in select("k > 9", [("k", "int")], rows)} == {"10"}
    assert {r[0] for r in select('k > "9"', [("k", "string")], rows)} == set()
    assert {r[0] for r in select('k < "9"', [("k", "string")], rows)} == {"10"}
    for integral in ("tinyint", "smallint", "int", "bigint"):
        assert {r[0] for r in select("k >= 10", [("k", integral)], rows)} == {"10"}


def test_integral_values_compare_as_numbers() -> None:
    assert i("i = 1") == {"01"}  # HMS 2.3.10
    assert i("i > 9") == {"10"}  # HMS 2.3.10


def test_default_partition_never_matches_numeric_comparisons() -> None:
    values = ["9", "10", DEFAULT, "abc", ""]
    assert i("i > 9", values) == {"10"}  # HMS 2.3.10
    assert i("i = 9", values) == {"9"}  # HMS 2.3.10
    assert i("i != 9", values) == {"10"}  # HMS 2.3.10: not even !=
    assert i("i < 100 or i >= 100", values) == {"9", "10"}
    assert i("(i) not in (1)", values) == {"9", "10"}
    assert d('d != "2024-01-01"') == {"2024-01-10", "2023-12-31"}  # HMS 2.3.10


def test_default_partition_name_constant_compares_as_string() -> None:
    # Hive 4's isDefaultPartition rule (HMS 2.3.10 answers MetaException)
    assert i(f'i = "{DEFAULT}"') == {DEFAULT}
    assert i(f'i != "{DEFAULT}"') == {"9", "10", "-1", "01"}
    assert d(f"d = '{DEFAULT}'") == {DEFAULT}


def test_default_partition_is_an_ordinary_string_for_string_keys() -> None:
    assert DEFAULT in s('s > "9"')  # HMS 2.3.10
    assert s(f's = "{DEFAULT}"') == {DEFAULT}


@pytest.mark.parametrize("text, key_type", [
    ('i = "1"', "int"), ("i > '9'", "bigint"), ('i = "x"', "int"), ('i between "0" and "5"', "int"),
    ('x = "1.5"', "decimal(4,2)"), ("s = 10", "string"), ("s < 2", "string"), ("s != 1", "string"),
    ("s like 1", "string"), ("d = 5", "date"), ("t = 5", "timestamp")])
def test_a_constant_of_another_type_than_its_key_is_refused_as_hive_refuses_it(text, key_type) -> None:
    """HMS 2.3.10 answers these with one text (tests/api/test_hive_answers.py asks it)."""
    with pytest.raises(FilterTypeMismatch, match=r"^Filtering is supported only on partition keys of type string$"):
        compile_filter(text, [(text.split()[0], key_type)])


def test_a_date_on_an_integral_key_is_not_a_number() -> None:
    with pytest.raises(FilterError, match="not a number"):
        compile_filter("i = 2024-01-01", [("i", "int")])


def test_date_keys() -> None:
    assert d('d = "2024-1-1"') == {"2024-01-01"}  # HMS 2.3.10: SimpleDateFormat leniency
    assert d('d > "2024-01-01x"') == {"2024-01-10"}  # HMS 2.3.10: prefix parse
    assert d("d < '2024-01-10 12:00:00'") == {"2024-01-01", "2023-12-31"}
    with pytest.raises(FilterError, match="not a date"):
        compile_filter('d = "x"', [("d", "date")])  # HMS 2.3.10: MetaException


def test_varchar_and_char_keys_compare_as_strings() -> None:
    rows = [["a"], ["b"]]
    assert select('v > "a"', [("v", "varchar(10)")], rows) == [["b"]]
    assert select('c = "a"', [("c", "char(5)")], rows) == [["a"]]


def test_decimal_keys_compare_as_numbers() -> None:
    rows = [["1.50"], ["10"], ["2"], [DEFAULT]]
    assert {r[0] for r in select("x > 1", [("x", "decimal(10,2)")], rows)} == {"1.50", "10", "2"}


def test_unsupported_key_type_is_an_error() -> None:
    with pytest.raises(FilterError, match="boolean"):
        compile_filter('b = "true"', [("b", "boolean")])
    # a key of an odd type that the filter does not mention is fine
    assert compile_filter('s = "x"', [("s", "string"), ("b", "boolean")])(["x", "true"])


def test_java_string_order_for_supplementary_characters() -> None:
    # Java compares UTF-16 code units: U+1F600 (surrogates D83D DE00) sorts before U+FB01.
    rows = [["\U0001F600"], ["\uFB01"]]
    assert select('k < "\uFB01"', [("k", "string")], rows) == [["\U0001F600"]]
    assert select('k > "\U0001F600"', [("k", "string")], rows) == [["\uFB01"]]


def test_multi_key_predicate_uses_the_right_position() -> None:
    keys = [("a", "string"), ("b", "int"), ("c", "string")]
    pred = compile_filter('c = "z" and b = 2 and a like "x.*"', keys)
    assert pred(["xy", "2", "z"])
    assert not pred(["xy", "2", "y"])
    assert not pred(["y", "2", "z"])


# ------------------------------------------------------------------------------ errors

def test_unknown_key_is_named() -> None:
    with pytest.raises(FilterError) as err:
        compile_filter('ds = "a" and x = "1"', [("ds", "string")])  # HMS 2.3.10: MetaException
    assert "'x' is not a partition key" in str(err.value)
    assert "position 13" in str(err.value)


@pytest.mark.parametrize("flt, pos", [
    ('ds = "a" and', 12),          # HMS 2.3.10: parse error
    ('(ds = "a"', 9),
    ('ds = "a")', 8),              # HMS 2.3.10 ignores the trailing ')'; we refuse
    ("ds = 'a' 'b'", 9),           # HMS 2.3.10 ignores the trailing 'b'; we refuse
    ("ds = a", 5),
    ("ds = 1a", 5),
    ("ds = @", 5),
    ("ds =", 4),
    ('ds = "abc', 5),
    ("`ds = 'a'", 0),
    ('not (ds = "a")', 0),        # HMS 2.3.10: parse error
    ('ds not = "a"', 7),
    ('ds <=> "a"', 3),
    ('(struct(ds)) in (struct("a"), struct("b"))', 1),
    ("(ds) in ()", 9),
    ('(ds) in ("a",)', 13),
    ('ds = "a" or or ds = "b"', 12),
    ("hr = -", 6),
    ('ds between "a"', 14),
    ("", None),
])
def test_parse_errors_report_position(flt: str, pos: int | None) -> None:
    keys = [("ds", "string"), ("hr", "int")]
    if pos is None:
        compile_filter(flt, keys)
        return
    with pytest.raises(FilterError) as err:
        compile_filter(flt, keys)
    assert f"at position {pos} " in str(err.value)
    assert repr(flt) in str(err.value)


def test_filter_error_is_a_value_error() -> None:
    assert issubclass(FilterError, ValueError)


# ------------------------------------------------------------------------------ property

_OPS = {"=": operator.eq, "==": operator.eq, "!=": operator.ne, "<>": operator.ne, "<": operator.lt,
        "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_FLIPPED = {"=": "=", "==": "==", "!=": "!=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(value=longs, const=longs, op=st.sampled_from(sorted(_OPS)), reverse=st.booleans(),
       padded=st.booleans())
def test_int_key_comparison_equals_python_numeric_comparison(
        value: int, const: int, op: str, reverse: bool, padded: bool) -> None:
    flt = f"{const} {_FLIPPED[op]} k" if reverse else f"k {op} {const}"
    stored = f"{value:+05d}" if padded else str(value)  # "0009" / "+009" still compare as numbers
    assert compile_filter(flt, [("k", "bigint")])([stored]) is _OPS[op](value, const)


@given(value=st.integers(-1000, 1000), low=st.integers(-1000, 1000), high=st.integers(-1000, 1000),
       negated=st.booleans())
def test_int_key_between_equals_python_range(value: int, low: int, high: int, negated: bool) -> None:
    flt = f"k {'not ' if negated else ''}between {low} and {high}"
    assert compile_filter(flt, [("k", "int")])([str(value)]) is ((low <= value <= high) != negated)


@given(value=st.text(max_size=6), const=st.text(alphabet=st.characters(blacklist_characters="\"\\"), max_size=6),
       op=st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
def test_string_key_comparison_equals_java_order(value: str, const: str, op: str) -> None:
    def java(x: str) -> bytes:  # Java compareTo = UTF-16 code unit order
        return x.encode("utf-16-be", "surrogatepass")

    assert compile_filter(f'k {op} "{const}"', [("k", "string")])([value]) is _OPS[op](java(value), java(const))
