"""Hive's snapshot strings: ValidTxnList, ValidWriteIdList, ValidTxnWriteIdList and TxnIdUtils.compare.

The example cases restate the ones in Hive's storage-api unit tests (TestValidReadTxnList,
TestValidReaderWriteIdList, TestTxnIdUtils) in our own string form.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmsproxy.hive.write_ids import (
    LONG_MAX,
    ValidTxnList,
    ValidTxnWriteIdList,
    ValidWriteIdList,
    compare,
    is_fresh_or_newer,
)

M = LONG_MAX
T = "default.table1"


def wl(hwm: int, open_ids=(), aborted=(), table: str = T) -> ValidWriteIdList:
    return ValidWriteIdList.of(table, hwm, open_ids, aborted)


def valid_set(w: ValidWriteIdList, low: int = 0) -> frozenset[int]:
    """The committed ids above `low` (ids <= low are assumed valid in every list compared)."""
    return frozenset(i for i in range(low + 1, w.high_watermark + 1) if w.is_valid(i))


# --- ValidTxnList (ValidReadTxnList) -----------------------------------------------------------------------------

def test_txn_list_without_exceptions():
    txns = ValidTxnList(high_watermark=1)
    assert str(txns) == f"1:{M}::"
    back = ValidTxnList.parse(str(txns))
    assert back == txns and back.is_valid(1) and not back.is_valid(2)


def test_txn_list_with_open_exceptions_keeps_min_open_as_written():
    # Hive's own example: min open 4 although 2 is open too; Hive neither derives nor checks it.
    txns = ValidTxnList.parse("5:4:2,4:")
    assert txns.min_open_id == 4 and txns.open_ids == (2, 4) and txns.aborted_ids == ()
    assert [txns.is_valid(i) for i in range(1, 7)] == [True, False, True, False, True, False]
    assert txns.format() == "5:4:2,4:"


def test_txn_list_open_and_aborted_interleaved():
    txns = ValidTxnList(high_watermark=11, min_open_id=4, open_ids=(4, 6, 10), aborted_ids=(2, 8))
    assert str(txns) == "11:4:4,6,10:2,8"
    assert [i for i in range(12) if txns.is_aborted(i)] == [2, 8]
    assert [i for i in range(12) if txns.is_open(i)] == [4, 6, 10]
    assert ValidTxnList.parse("11:4:4,6,10:2,8") == txns


def test_txn_list_ranges_hive4_form():
    # Hive 4 writes runs of >= 5 consecutive ids of one kind as lo-hi; 8 and 10 are split by the aborted 9.
    txns = ValidTxnList(high_watermark=11, min_open_id=4, open_ids=(4, 5, 6, 7, 8, 10), aborted_ids=(2, 9))
    assert txns.format(compact=True) == "11:4:4-8,10:2,9"
    assert txns.format() == "11:4:4,5,6,7,8,10:2,9"
    assert ValidTxnList.parse("11:4:4-8,10:2,9") == txns
    short_run = ValidTxnList(high_watermark=9, min_open_id=1, open_ids=(1, 2, 3, 4))
    assert short_run.format(compact=True) == "9:1:1,2,3,4:"


def test_txn_list_long_run_of_exceptions():
    txns = ValidTxnList(high_watermark=2000, min_open_id=900, open_ids=tuple(range(100, 1100)))
    assert txns.format(compact=True) == "2000:900:100-1099:"
    for text in (txns.format(), txns.format(compact=True)):
        back = ValidTxnList.parse(text)
        assert back == txns
        assert all(back.is_valid(i) for i in range(1, 100)) and not any(back.is_valid(i) for i in range(100, 1100))
        assert all(back.is_valid(i) for i in range(1100, 2001)) and not back.is_valid(2001)


def test_txn_list_short_forms_hive_reads():
    # Java's split drops trailing empty fields, so Hive's reader accepts 2 and 3 fields.
    assert ValidTxnList.parse(f"7:{M}") == ValidTxnList(high_watermark=7)
    assert ValidTxnList.parse("7:3:3") == ValidTxnList(high_watermark=7, min_open_id=3, open_ids=(3,))


# --- ValidWriteIdList (ValidReaderWriteIdList) -------------------------------------------------------------------

def test_write_id_list_without_exceptions():
    w = ValidWriteIdList.parse(f"default.t:4:{M}::")
    assert w == wl(4, table="default.t") and w.exceptions == ()
    assert str(w) == "default.t:4:9223372036854775807::"
    assert w.is_valid(4) and not w.is_valid(5)


def test_write_id_list_hive_examples():
    w = ValidWriteIdList(table_name="default.t1", high_watermark=5, min_open_id=4, open_ids=(2, 4))
    assert str(w) == "default.t1:5:4:2,4:"
    assert [w.is_valid(i) for i in range(1, 7)] == [True, False, True, False, True, False]
    w = ValidWriteIdList(table_name="default.t1", high_watermark=11, min_open_id=4, open_ids=(4, 6, 10),
                         aborted_ids=(2, 8))
    assert str(w) == "default.t1:11:4:4,6,10:2,8"
    assert ValidWriteIdList.parse(str(w)) == w
    assert [i for i in range(12) if w.is_aborted(i)] == [2, 8] and w.exceptions == (2, 4, 6, 8, 10)


def test_write_id_list_all_aborted():
    w = ValidWriteIdList.parse(f"db.t:3:{M}::1,2,3")
    assert w.open_ids == () and w.aborted_ids == (1, 2, 3)
    assert not any(w.is_valid(i) for i in range(1, 5)) and all(w.is_aborted(i) for i in (1, 2, 3))
    assert str(w) == f"db.t:3:{M}::1,2,3"


def test_write_id_list_null_table_and_of():
    assert ValidWriteIdList.parse(f"null:0:{M}::").table_name is None
    assert str(ValidWriteIdList(table_name=None, high_watermark=0)) == f"null:0:{M}::"
    assert wl(9, open_ids=(8, 5), aborted=(2,)).format() == f"{T}:9:5:5,8:2"


def test_huge_ids():
    w = ValidWriteIdList.parse(f"db.t:{M}:{M - 2}:{M - 2}:{M}")
    assert w.is_open(M - 2) and w.is_aborted(M) and w.is_valid(M - 1) and not w.is_valid(M)
    assert str(w) == f"db.t:{M}:{M - 2}:{M - 2}:{M}"
    txns = ValidTxnList.parse(f"{M}:{M - 9}:{M - 9}-{M - 5}:")
    assert txns.open_ids == tuple(range(M - 9, M - 4))
    with pytest.raises(ValueError, match="64-bit"):
        ValidWriteIdList.parse(f"db.t:{M + 1}:{M}::")


@pytest.mark.parametrize("text, problem", [
    ("", "empty"),
    ("db.t", "no ':'"),
    ("db.t:5", "field"),
    ("db.t:5:1:2:3:4", "field"),
    (f"db.t:x:{M}::", "high watermark 'x'"),
    ("db.t:5:-1::", "min open id '-1'"),
    (f"db.t:5:{M}:1,,2:", "open ids ''"),
    (f"db.t:5:{M}:+3:", "open ids '+3'"),
    (f"db.t:5:{M}:1_0:", "open ids '1_0'"),
    (f"db.t:5:{M}:6:", "outside"),
    (f"db.t:5:{M}:0:", "outside"),
    (f"db.t:5:{M}:2:2", "twice"),
    (f"db.t:5:{M}:3,3:", "twice"),
    (f"db.t:9:{M}:2-4:", "open ids '2-4'"),  # ValidReaderWriteIdList has no range form in any Hive version
    (f":5:{M}::", "table name"),
])
def test_malformed_write_id_lists(text, problem):
    with pytest.raises(ValueError, match="malformed ValidWriteIdList") as err:
        ValidWriteIdList.parse(text)
    assert problem in str(err.value) and repr(text) in str(err.value)


@pytest.mark.parametrize("text, problem", [
    ("", "empty"), ("5", "field"), ("5:4:3:2:1", "field"), ("5:4:4-2:", "empty"), ("5:4:a-3:", "'a'"),
    (f"{M}:1:1-{M}:", "expand"), ("5:4:6:", "outside"), (f"5:{M}:1-3:2", "twice"),
])
def test_malformed_txn_lists(text, problem):
    with pytest.raises(ValueError, match="malformed ValidTxnList") as err:
        ValidTxnList.parse(text)
    assert problem in str(err.value)


def test_constructor_validates_too():
    with pytest.raises(ValueError):
        ValidWriteIdList(table_name="a:b", high_watermark=1)
    with pytest.raises(ValueError):
        ValidTxnList(high_watermark=-1)
    with pytest.raises(ValueError):
        ValidTxnList(high_watermark=3, open_ids=(4,))


# --- ValidTxnWriteIdList -----------------------------------------------------------------------------------------

def test_txn_write_id_list_round_trip_and_lookup():
    text = f"42$default.a:3:{M}::$default.b:9:4:4,7:5"
    snap = ValidTxnWriteIdList.parse(text)
    assert snap.txn_id == 42 and [t.table_name for t in snap.tables] == ["default.a", "default.b"]
    assert snap.get("default.b").open_ids == (4, 7) and snap.get("default.c") is None
    assert str(snap) == text
    assert ValidTxnWriteIdList.parse("42") == ValidTxnWriteIdList(42)
    # Java's split drops trailing empty pieces, so Hive ignores trailing '$'s
    assert ValidTxnWriteIdList.parse(f"42$default.a:3:{M}::$") == ValidTxnWriteIdList.parse(f"42$default.a:3:{M}::")
    assert ValidTxnWriteIdList.parse("5$$") == ValidTxnWriteIdList(5)


@pytest.mark.parametrize("text", ["", "x$db.t:1:1:1:", "5$db.t", f"5$db.t:1:{M}::$db.t:2:{M}::", "5$$x"])
def test_malformed_txn_write_id_lists(text):
    with pytest.raises(ValueError, match="malformed ValidTxnWriteIdList"):
        ValidTxnWriteIdList.parse(text)


# --- compare: Hive's TestTxnIdUtils cases ------------------------------------------------------------------------

R = tuple(range(1, 6))  # ids 1..5


@pytest.mark.parametrize("a, b, expected", [
    (wl(5, R), wl(5, R), 0),
    (wl(5, R), wl(8, range(1, 9)), 0),                   # b only adds uncommitted ids above a's hwm
    (wl(5, R), wl(8, range(2, 9)), -1),                  # 1 committed in b
    (wl(8, (1, 2, 3, 4, 6, 7, 8)), wl(5, R), 1),         # 5 committed in a
    (wl(8, (1, 2, 3, 4, 6, 7)), wl(8, range(1, 9)), 1),  # 5 and 8 committed in a
    (wl(5, R), wl(105, (100, 101, 105)), -1),            # far in the future
    (wl(0), wl(5, R), 0),                                # before any write
    (wl(0), wl(8, range(1, 9)), 0),
    (wl(0), wl(8, range(2, 9)), -1),
    (wl(5), wl(5), 0),
    (wl(0), wl(5), -1),
    (wl(5), wl(5, R), 1),
    (wl(5), wl(105, (100, 101, 105)), -1),
    # open vs aborted does not matter; aborted ids forgotten by cleanup make an equal state look newer
    (wl(5), wl(6, aborted=(6,)), 0),
    (wl(5), wl(7, (7,), (6,)), 0),
    (wl(6, aborted=(6,)), wl(8, (7,), (6, 8)), 0),
    (wl(5), wl(8), -1),
    (wl(7, (7,), (6,)), wl(8), -1),
    # testCompareWriteIds
    (wl(4), wl(5), -1),
    (wl(5, (1, 2, 4, 5)), wl(5, R), 1),
    (wl(6, (2, 4, 5)), wl(5, (2, 4, 5)), 1),
    (wl(3, (1, 2, 3)), wl(5, R), 0),
    (wl(9, (1, 2, 3)), wl(11, (1, 2, 3, 10, 11)), 0),
    (wl(9, (1, 2, 3)), wl(11, (1, 2, 3)), -1),
    (wl(9), wl(11, (10, 11)), 0),
    (wl(9), wl(11, (10,)), -1),
    (wl(9, (8,)), wl(11, (8,)), -1),
    (wl(9, (8,)), wl(11, (8, 10, 11)), 0),
    (wl(11, (8, 10, 11)), wl(11, (8, 10, 11), table="default.table2"), -1),
])
def test_compare_hive_cases(a, b, expected):
    assert compare(a, b) == expected
    assert compare(b, a) == -expected
    if a.table_name == b.table_name:
        assert (valid_set(a) == valid_set(b)) is (expected == 0)


def test_compare_where_hive_3_was_asymmetric():
    # Before HIVE-24975 compare(a, b) returned 1 here although b has committed 4 and a has not.
    a, b = wl(6, (4, 5, 6)), wl(4)
    assert compare(a, b) == -1 and compare(b, a) == 1


def test_design_examples():
    cached, request = ValidWriteIdList.parse("db.t:11:7:7,8:"), ValidWriteIdList.parse("db.t:12:7:7,8,12:")
    assert compare(cached, request) == 0 and is_fresh_or_newer(cached, request)
    # 8 is committed in `db.t:12:7:7,12:` and still open in `db.t:12:7:7,8,12:`: the one without 8 is newer.
    # (DESIGN.md lists this pair the other way round; Hive's compare says the list *without* 8 is newer.)
    newer, older = ValidWriteIdList.parse("db.t:12:7:7,12:"), ValidWriteIdList.parse("db.t:12:7:7,8,12:")
    assert compare(newer, older) == 1
    assert is_fresh_or_newer(newer, older)        # cache has seen 8 commit: good enough for the older reader
    assert not is_fresh_or_newer(older, newer)    # cache predates 8's commit: go to the database


def test_table_names():
    a, b = wl(5, table="db.a"), wl(5, table="db.b")
    assert compare(a, b) == -1 and compare(b, a) == 1
    assert not is_fresh_or_newer(a, b) and not is_fresh_or_newer(b, a)
    assert compare(wl(5, table="DB.A"), a) == 0 and is_fresh_or_newer(wl(5, table="DB.A"), a)
    nameless = ValidWriteIdList(table_name=None, high_watermark=5)
    assert not is_fresh_or_newer(nameless, a) and not is_fresh_or_newer(a, nameless)
    with pytest.raises(ValueError):
        compare(nameless, a)


# --- properties ---------------------------------------------------------------------------------------------------

BASES = st.sampled_from([0, LONG_MAX - 64])  # small ids, and ids at the top of Java's long range
ONE_TABLE = st.just("db.t")


@st.composite
def write_id_lists(draw, base: int | None = None, table: st.SearchStrategy[str] = ONE_TABLE,
                   max_span: int = 12) -> ValidWriteIdList:
    """Well-formed lists whose ids lie in base+1 .. base+span; small spans make equal states likely."""
    if base is None:
        base = draw(BASES)
    hwm = base + draw(st.integers(0, max_span))
    ids = draw(st.sets(st.integers(base + 1, hwm))) if hwm > base else set()
    aborted = draw(st.sets(st.sampled_from(sorted(ids)))) if ids else set()
    open_ids = ids - aborted
    min_open = draw(st.sampled_from([min(open_ids, default=LONG_MAX), LONG_MAX]))
    return ValidWriteIdList(table_name=draw(table), high_watermark=hwm, min_open_id=min_open,
                            open_ids=tuple(open_ids), aborted_ids=tuple(aborted))


@st.composite
def pairs(draw, tables=ONE_TABLE) -> tuple[int, ValidWriteIdList, ValidWriteIdList]:
    base = draw(BASES)
    return base, draw(write_id_lists(base, tables)), draw(write_id_lists(base, tables))


@given(write_id_lists(table=st.sampled_from(["db.t", "default.some_table"]), max_span=40))
def test_write_id_list_round_trip(w):
    text = w.format()
    assert ValidWriteIdList.parse(text) == w and ValidWriteIdList.parse(text).format() == text


@given(write_id_lists(max_span=40))
def test_txn_list_round_trip_both_forms(w):
    txns = ValidTxnList(high_watermark=w.high_watermark, min_open_id=w.min_open_id, open_ids=w.open_ids,
                        aborted_ids=w.aborted_ids)
    for compact in (False, True):
        text = txns.format(compact=compact)
        assert ValidTxnList.parse(text) == txns and ValidTxnList.parse(text).format(compact=compact) == text
    assert len(txns.format(compact=True)) <= len(txns.format())


@given(pairs(tables=st.sampled_from(["db.t", "DB.T", "db.u"])))
def test_compare_is_antisymmetric(pair):
    _, a, b = pair
    assert compare(a, b) == -compare(b, a)
    assert compare(a, b) in (-1, 0, 1)


@given(write_id_lists())
def test_compare_is_reflexive(w):
    assert compare(w, w) == 0 and is_fresh_or_newer(w, w)


@given(pairs())
def test_compare_is_valid_set_equality(pair):
    """Hive's rule is exactly "same set of committed ids" for every well-formed pair (exceptions unique and in
    1..hwm), not only for snapshots of one history; and a nonzero answer always has a witness: an id committed
    in the newer list and not in the other."""
    base, a, b = pair
    va, vb = valid_set(a, base), valid_set(b, base)
    result = compare(a, b)
    assert (result == 0) is (va == vb)
    if result == 1:
        assert va - vb
    if result == -1:
        assert vb - va


@st.composite
def histories(draw) -> list[tuple[int, frozenset[int], frozenset[int]]]:
    """Snapshots (hwm, open, aborted) of one table after each step of a random run of allocate/commit/abort."""
    next_id, open_ids, aborted = 1, set(), set()
    snaps = [(0, frozenset(), frozenset())]
    for _ in range(draw(st.integers(0, 25))):
        action = draw(st.sampled_from(["allocate", "commit", "abort"] if open_ids else ["allocate"]))
        if action == "allocate":
            open_ids.add(next_id)
            next_id += 1
        else:
            w = draw(st.sampled_from(sorted(open_ids)))
            open_ids.discard(w)
            if action == "abort":
                aborted.add(w)
        snaps.append((next_id - 1, frozenset(open_ids), frozenset(aborted)))
    return snaps


@given(histories(), st.data())
def test_snapshots_of_one_history_order_by_time(snaps, data):
    i = data.draw(st.integers(0, len(snaps) - 1))
    j = data.draw(st.integers(i, len(snaps) - 1))
    earlier, later = (wl(h, o, ab, table="db.t") for h, o, ab in (snaps[i], snaps[j]))
    result = compare(earlier, later)
    assert result in (-1, 0)
    assert (result == 0) is (valid_set(earlier) == valid_set(later))
    assert is_fresh_or_newer(later, earlier)
    assert is_fresh_or_newer(earlier, later) is (result == 0)


@given(pairs())
def test_fresh_or_newer_needs_same_table(pair):
    _, a, b = pair
    other = ValidWriteIdList(table_name="db.other", high_watermark=a.high_watermark, open_ids=a.open_ids,
                             aborted_ids=a.aborted_ids, min_open_id=a.min_open_id)
    assert not is_fresh_or_newer(other, b) and not is_fresh_or_newer(b, other)
    assert is_fresh_or_newer(a, b) is (compare(a, b) >= 0)
