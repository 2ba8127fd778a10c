"""Hive naming rules: identifiers, partition name escaping and listing patterns."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmsproxy.hive.names import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    filter_by_pattern,
    is_valid_identifier,
    make_partition_name,
    parse_partition_name,
    unescape_path_name,
)


@pytest.mark.parametrize("name, valid", [("sales_2024", True), ("A1", True), ("", False), ("a-b", False),
                                         ("a b", False), ("a.b", False), (None, False), ("é", False)])
def test_identifiers(name, valid):
    assert is_valid_identifier(name) is valid


def test_partition_names_escape_like_hive():
    assert make_partition_name(["ds", "hr"], ["2024/01:02", "1"]) == "ds=2024%2F01%3A02/hr=1"
    assert make_partition_name(["k"], ["a=b#c%"]) == "k=a%3Db%23c%25"
    assert make_partition_name(["k"], [""]) == f"k={DEFAULT_PARTITION_NAME}"


def test_parse_partition_name_round_trips_and_rejects_garbage():
    assert parse_partition_name("ds=2024%2F01/hr=1") == [("ds", "2024/01"), ("hr", "1")]
    with pytest.raises(ValueError):
        parse_partition_name("ds")


@given(st.text(min_size=1, max_size=20))
def test_escape_unescape_round_trip(text):
    escaped = escape_path_name(text)
    assert "/" not in escaped and "=" not in escaped
    assert unescape_path_name(escaped) == text


def test_patterns_are_case_insensitive_alternatives_with_star():
    names = ["sales", "sales_eu", "Staging", "other"]
    assert filter_by_pattern(names, "sales*") == ["sales", "sales_eu"]
    assert filter_by_pattern(names, "sales|other") == ["other", "sales"]
    assert filter_by_pattern(names, "STAG*") == ["Staging"]
    assert filter_by_pattern(names, None) == sorted(names)
    # as HMS 2.3 matches them (measured): regex syntax other than `.` and `.*` is literal
    assert filter_by_pattern(names + ["s1", "(s)", "sx"], "s[0-9]") == []
    assert filter_by_pattern(names + ["s1", "(s)", "sx"], "(s)") == ["(s)"]
    assert filter_by_pattern(names + ["s1", "(s)", "sx"], "s.") == ["s1", "sx"]
