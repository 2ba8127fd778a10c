"""Filters answered through the cached value index (store/cache/value_index.py) select exactly the partitions a
scan with the filter's predicate selects, for every key type, operator and AND/OR nesting; and an indexable
filter tests only the candidates its ranges hold, not every partition."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsproxy.hive.names import make_partition_name
from hmsproxy.hive.partition_filter import PartitionFilter, compile_partition_filter
from hmsproxy.store.cache.partitions import PartitionSet
from support.partition_blocks import small_blocks


@pytest.fixture(autouse=True, scope="module")
def _small_blocks() -> Iterator[None]:
    """Sets of a few partitions per block, so that positions cross blocks."""
    with small_blocks(4):
        yield


DEFAULT = "__HIVE_DEFAULT_PARTITION__"
KEYS = [("s", "string"), ("i", "int"), ("d", "date"), ("t", "timestamp")]
# Values as stored, including ones a typed reading refuses (never matched) and characters beyond the BMP,
# which Java orders differently from Python.
VALUES = {
    "s": ["", "a", "ab", "abc", "a.b", "b", "B", "2024-01-01", DEFAULT, "a\U0001F600", "a\uffff", "a%b"],
    "i": ["1", "2", "10", "-3", "01", "9223372036854775807", DEFAULT, "x"],
    "d": ["2024-01-01", "2024-01-10", "2023-12-31", "2024-1-1", DEFAULT, "soon"],
    "t": ["2024-01-01 00:00:00", "2024-01-01 12:30:00", "2023-12-31 23:59:59", DEFAULT],
}
CONSTANTS = {
    "s": ["'a'", "'ab'", "'b'", "''", "'a\U0001F600'", "'a\uffff'", f"'{DEFAULT}'", "'2024-01-01'"],
    "i": ["1", "2", "10", "-3", "0", f"'{DEFAULT}'"],
    "d": ["'2024-01-01'", "'2024-1-10'", "DATE '2023-12-31'", f"'{DEFAULT}'"],
    "t": ["TIMESTAMP '2024-01-01 00:00:00'", "'2024-01-01 12:30:00'"],
}
LIKES = ["'a.*'", "'ab.*'", "'.*b'", "'a.b'", "'2024-01.*'", "'(?i)a.*'", "'a\\\\%.*'", "'a\U0001F600.*'"]
OPERATORS = ["=", "!=", "<>", "<", "<=", ">", ">="]


def _comparison() -> st.SearchStrategy[str]:
    key = st.sampled_from([k for k, _ in KEYS])
    return key.flatmap(lambda k: st.one_of(
        st.builds(lambda op, c: f"{k} {op} {c}", st.sampled_from(OPERATORS), st.sampled_from(CONSTANTS[k])),
        st.builds(lambda lo, hi, neg: f"{k} {'not ' if neg else ''}between {lo} and {hi}",
                  st.sampled_from(CONSTANTS[k]), st.sampled_from(CONSTANTS[k]), st.booleans()),
        st.builds(lambda cs, neg: f"({k}) {'not ' if neg else ''}in ({', '.join(cs)})",
                  st.lists(st.sampled_from(CONSTANTS[k]), min_size=1, max_size=3), st.booleans()),
        *([st.builds(lambda p: f"s like {p}", st.sampled_from(LIKES))] if k == "s" else [])))


FILTERS = st.recursive(_comparison(), lambda inner: st.builds(
    lambda parts, joiner: "(" + f" {joiner} ".join(parts) + ")",
    st.lists(inner, min_size=2, max_size=3), st.sampled_from(["and", "or"])), max_leaves=6)

# Unique by name, as a table's partitions are: "" and the default partition's value give one name.
ROWS = st.lists(st.tuples(*(st.sampled_from(VALUES[k]) for k, _ in KEYS)), max_size=40,
                unique_by=lambda row: make_partition_name([k for k, _ in KEYS], list(row)))


def _partition_set(rows: list[tuple[str, ...]]) -> PartitionSet:
    keys = tuple(k for k, _ in KEYS)
    return PartitionSet.of_values(keys, ((make_partition_name(keys, list(r)), r) for r in rows))


@settings(max_examples=400, deadline=None)
@given(ROWS, FILTERS)
def test_the_index_selects_what_a_scan_selects(rows, text):
    partitions = _partition_set(rows)
    try:
        partition_filter = compile_partition_filter(text, KEYS)
    except ValueError:
        return   # refused filters (e.g. an integer against a date key) are the parser's tests
    scanned = [n for n, v in zip(partitions.names, partitions.values) if partition_filter.matches(v)]
    assert partitions.names_matching(partition_filter) == scanned
    candidates, exact = partitions.index.select(partition_filter.plan)
    positions = [partitions.names.index(n) for n in scanned]
    if candidates is not None:
        assert set(positions) <= set(candidates) and candidates == sorted(candidates)
        assert not exact or candidates == positions, "an exact selection holds only matches"


def _counting(partition_filter: PartitionFilter, tested: list[int]) -> PartitionFilter:
    def matches(values):
        tested.append(1)
        return partition_filter.matches(values)
    return PartitionFilter(matches, partition_filter.plan)


def test_an_indexable_filter_tests_only_its_candidates():
    rows = [(f"v{n % 100:02d}", str(n), "2024-01-01", "2024-01-01 00:00:00") for n in range(10_000)]
    partitions = _partition_set(rows)
    # filter: (matches, partitions its predicate tests at most: none where every part is a comparison, which the
    # index answers exactly; the candidates of a LIKE's prefix, or of an AND's narrowest part where another is one)
    cases = {"s = 'v07'": (100, 0), "s = 'v07' and i < 500": (5, 0), "i < 500 and s = 'v07'": (5, 0),
             "(s) in ('v01', 'v02') or i between 10 and 19": (210, 0), "i >= 10 and i < 20": (10, 0),
             "i > 5 and i >= 10 and i <= 30 and i < 20": (10, 0), "i <= 19 and i < 19 and i >= 10": (9, 0),
             "i >= 10 and i > 10 and i < 13": (2, 0), "s like 'v0.*'": (1000, 1000),
             "i >= 9990": (10, 0), "s like 'v0.*' and i < 100": (10, 100), "i < 50 and s != 'v07'": (49, 50)}
    for text, (expected, most_tested) in cases.items():
        tested: list[int] = []
        names = partitions.names_matching(_counting(compile_partition_filter(text, KEYS), tested))
        assert len(names) == expected, text
        assert len(tested) <= most_tested, f"{text}: {len(tested)} partitions tested for {expected} matches"


def test_what_an_index_cannot_narrow_is_tested_on_every_partition():
    rows = [(f"v{n}", str(n), "2024-01-01", "2024-01-01 00:00:00") for n in range(50)]
    partitions = _partition_set(rows)
    for text in ("s != 'v1'", "s like '.*1'", "s = 'v1' or i != 3", ""):
        tested: list[int] = []
        partitions.names_matching(_counting(compile_partition_filter(text, KEYS), tested))
        assert len(tested) == 50, text


def test_a_selection_at_once_needs_sorted_values_an_exact_plan_and_few_candidates():
    """What the connection loop may answer itself: binary searches and a bounded walk, never a sort or a predicate."""
    rows = [(f"v{n % 10}", str(n), "2024-01-01", "2024-01-01 00:00:00") for n in range(100)]
    partitions = _partition_set(rows)

    def at_once(text: str, most: int = 50) -> list[str] | None:
        positions = partitions.index.selected_at_once(compile_partition_filter(text, KEYS).plan, most)
        return None if positions is None else [partitions.names[i] for i in positions]

    assert at_once("s = 'v3' and i < 30") is None, "the values of s and i are not sorted yet"
    assert len(partitions.names_matching(compile_partition_filter("s = 'v3' and i < 30", KEYS))) == 3
    assert at_once("s = 'v3' and i < 30") == partitions.names_matching(compile_partition_filter(
        "s = 'v3' and i < 30", KEYS))
    assert at_once("i >= 40 and i < 60", most=19) is None, "20 candidates"
    assert len(at_once("i >= 40 and i < 60", most=20) or []) == 20
    assert at_once("s like 'v3.*' and i < 30") is None, "a LIKE leaves its candidates to the predicate"
    assert at_once("s = 'v3' and i != 3") is None and at_once("") is None
