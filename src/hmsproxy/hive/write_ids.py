"""Hive's transaction snapshots as strings: ValidTxnList, ValidWriteIdList and ValidTxnWriteIdList.

Clients send these strings (in requests and in `hive.txn.valid.txns` / `hive.txn.tables.valid.writeids`) and the
cache stores one per transactional table, so they must read and write byte for byte as Hive does. Sources, all in
apache/hive `storage-api/src/java/org/apache/...`:

- ValidTxnList (hadoop/hive/common/ValidReadTxnList.java): `<hwm>:<minOpenTxn>:<open ids>:<aborted ids>`.
  Hive 3.1 writes and reads plain comma lists. Hive 4 *writes* runs of >= 5 consecutive ids of the same kind as
  `lo-hi` (e.g. `11:4:4-8,10:2,9`) and reads both forms; Hive 3.1 cannot read ranges. We read both and write the
  plain form by default, which every Hive version reads; `format(compact=True)` writes Hive 4's form.
- ValidWriteIdList (ValidReaderWriteIdList.java): `<db.table>:<hwm>:<minOpenWriteId>:<open ids>:<aborted ids>`,
  plain comma lists in every Hive version (no ranges, so we do not read them here either); table `null` is None.
- ValidTxnWriteIdList (ValidTxnWriteIdList.java): `<txnId>$<ValidWriteIdList>$<ValidWriteIdList>...`.
- compare (hive/common/util/TxnIdUtils.java): Hive 4's version, i.e. after HIVE-24975 fixed the branch where `b`
  has fewer exceptions (before the fix compare was not antisymmetric there).

Where we are stricter than Hive's readers (which parse whatever `Long.parseLong` accepts and ignore extra
fields), it is for strings Hive never writes: ids must be plain decimal digits in 0..2**63-1, exceptions unique,
>= 1 and <= the high watermark (Hive's compare and isValid assume this), no extra fields, and an empty string is
an error rather than Hive's "everything is valid" default (which Hive itself calls a bad constructor).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

LONG_MAX = 9223372036854775807
"""Java's Long.MAX_VALUE: Hive's min-open value when nothing is open."""

MAX_EXPANDED_IDS = 1_000_000
"""A `lo-hi` range from a client expands to a tuple of ids; refuse absurd ones instead of exhausting memory."""

_MIN_RANGE = 5  # Hive 4 ValidReadTxnList.MIN_RANGE_LENGTH: shorter runs are written id by id
_DIGITS = re.compile(r"[0-9]+\Z")  # ASCII only: Python's int() would also take '_', '+', and non-ASCII digits

S = TypeVar("S", bound="_Snapshot")


def _long(text: str, what: str) -> int:
    if not _DIGITS.match(text):
        raise ValueError(f"{what} {text!r} is not a non-negative integer")
    value = int(text)
    if value > LONG_MAX:
        raise ValueError(f"{what} {text} does not fit in a signed 64-bit integer")
    return value


def _ids(text: str, what: str, ranges: bool) -> list[int]:
    if not text:
        return []
    out: list[int] = []
    for item in text.split(","):
        if ranges and "-" in item:
            lo_text, _, hi_text = item.partition("-")
            lo, hi = _long(lo_text, what), _long(hi_text, what)
            if lo > hi:
                raise ValueError(f"{what} range {item!r} is empty")
            if len(out) + (hi - lo + 1) > MAX_EXPANDED_IDS:
                raise ValueError(f"{what} expand to more than {MAX_EXPANDED_IDS} ids")
            out.extend(range(lo, hi + 1))
        else:
            out.append(_long(item, what))
    return out


def _join(ids: tuple[int, ...], compact: bool) -> str:
    """Comma list; with compact, Hive 4's writeTxnRange: runs of >= 5 consecutive ids become `lo-hi`."""
    if not compact:
        return ",".join(map(str, ids))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        if j - i + 1 >= _MIN_RANGE:
            parts.append(f"{ids[i]}-{ids[j]}")
        else:
            parts.extend(map(str, ids[i : j + 1]))
        i = j + 1
    return ",".join(parts)


@dataclass(frozen=True, kw_only=True)
class _Snapshot:
    """What both lists share: ids <= high_watermark are committed unless listed as open or aborted."""

    high_watermark: int
    min_open_id: int = LONG_MAX  # stored as given: Hive neither derives nor checks it (its own tests don't match)
    open_ids: tuple[int, ...] = ()
    aborted_ids: tuple[int, ...] = ()
    exceptions: tuple[int, ...] = field(init=False, repr=False, compare=False)  # open + aborted, sorted

    _RANGES: ClassVar[bool] = False  # whether parse accepts `lo-hi`

    def __post_init__(self) -> None:
        for name in ("high_watermark", "min_open_id"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= LONG_MAX:
                raise ValueError(f"{name} {value!r} must be an integer in 0..{LONG_MAX}")
        open_ids, aborted = tuple(sorted(self.open_ids)), tuple(sorted(self.aborted_ids))
        exceptions = tuple(sorted(open_ids + aborted))
        for i, w in enumerate(exceptions):
            if type(w) is not int or not 1 <= w <= self.high_watermark:
                raise ValueError(f"exception {w!r} is outside 1..high watermark {self.high_watermark}")
            if i and exceptions[i - 1] == w:
                raise ValueError(f"write/txn id {w} is listed twice")
        object.__setattr__(self, "open_ids", open_ids)
        object.__setattr__(self, "aborted_ids", aborted)
        object.__setattr__(self, "exceptions", exceptions)

    def is_valid(self, id_: int) -> bool:
        """Committed in this snapshot: not above the high watermark and neither open nor aborted."""
        return id_ <= self.high_watermark and not _contains(self.exceptions, id_)

    def is_open(self, id_: int) -> bool:
        return _contains(self.open_ids, id_)

    def is_aborted(self, id_: int) -> bool:
        return _contains(self.aborted_ids, id_)

    def _body(self, compact: bool = False) -> str:
        return (f"{self.high_watermark}:{self.min_open_id}:"
                f"{_join(self.open_ids, compact)}:{_join(self.aborted_ids, compact)}")

    @classmethod
    def _from_fields(cls: type[S], fields: list[str], **extra: object) -> S:
        """fields = hwm, minOpen[, open[, aborted]]: Hive accepts the short forms (Java's split drops trailing
        empty strings, so `5:9223372036854775807::` reaches Hive's reader as two fields)."""
        if not 2 <= len(fields) <= 4:
            raise ValueError(f"expected <hwm>:<minOpen>[:<open ids>[:<aborted ids>]], got {len(fields)} field(s)")
        fields = fields + [""] * (4 - len(fields))
        return cls(high_watermark=_long(fields[0], "high watermark"),
                   min_open_id=_long(fields[1], "min open id"),
                   open_ids=tuple(_ids(fields[2], "open ids", cls._RANGES)),
                   aborted_ids=tuple(_ids(fields[3], "aborted ids", cls._RANGES)), **extra)


def _contains(ids: tuple[int, ...], id_: int) -> bool:
    i = bisect.bisect_left(ids, id_)
    return i < len(ids) and ids[i] == id_


def _parse_error(cls: type, text: str, problem: object) -> ValueError:
    return ValueError(f"malformed {cls.__name__} {text!r}: {problem}")


@dataclass(frozen=True, kw_only=True)
class ValidTxnList(_Snapshot):
    """Hive's ValidReadTxnList: the transactions a reader may see. `str()` is the plain (Hive 3.1) form."""

    _RANGES: ClassVar[bool] = True

    @classmethod
    def parse(cls, text: str) -> ValidTxnList:
        """Reads both the plain form and Hive 4's `lo-hi` ranges."""
        try:
            if not text:
                raise ValueError("empty string")
            return cls._from_fields(text.split(":"))
        except ValueError as e:
            raise _parse_error(cls, text, e) from None

    def format(self, compact: bool = False) -> str:
        """compact=False: what Hive 3.1 writes and every version reads; True: exactly what Hive 4 writes."""
        return self._body(compact)

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True, kw_only=True)
class ValidWriteIdList(_Snapshot):
    """Hive's ValidReaderWriteIdList: one table's write ids a reader may see. None table name is Hive's `null`."""

    table_name: str | None

    def __post_init__(self) -> None:
        name = self.table_name
        if name is not None and (not name or ":" in name or "$" in name):
            raise ValueError(f"table name {name!r} must be non-empty without ':' or '$'")
        super().__post_init__()

    @classmethod
    def of(cls, table_name: str | None, high_watermark: int, open_ids: Iterable[int] = (),
           aborted_ids: Iterable[int] = ()) -> ValidWriteIdList:
        """Builds a snapshot with min_open_id = smallest open id (LONG_MAX if none), as the metastore reports it."""
        open_t = tuple(open_ids)
        return cls(table_name=table_name, high_watermark=high_watermark, min_open_id=min(open_t, default=LONG_MAX),
                   open_ids=open_t, aborted_ids=tuple(aborted_ids))

    @classmethod
    def parse(cls, text: str) -> ValidWriteIdList:
        try:
            if not text:
                raise ValueError("empty string")
            name, sep, rest = text.partition(":")
            if not sep:
                raise ValueError("no ':' after the table name")
            table = None if name.lower() == "null" else name
            return cls._from_fields(rest.split(":"), table_name=table)
        except ValueError as e:
            raise _parse_error(cls, text, e) from None

    def format(self) -> str:
        return f"{'null' if self.table_name is None else self.table_name}:{self._body()}"

    def __str__(self) -> str:
        return self.format()


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _shorter_vs_longer(s_hwm: int, longer: tuple[int, ...], l_hwm: int, n: int) -> int:
    """S has n exceptions, equal to L's first n. Every id in S.hwm+1 .. L.ex[n]-1 is committed in L, so S's
    hwm decides unless it is exactly L.ex[n]-1; then the two agree iff L's remaining exceptions cover every id
    up to L.hwm (consecutive and ending at L.hwm), else L has committed something above S.hwm."""
    bound = longer[n] - 1
    if s_hwm != bound:
        return _sign(s_hwm - bound)
    rest = longer[n:]
    covered = all(rest[i] == rest[i - 1] + 1 for i in range(1, len(rest))) and rest[-1] == l_hwm
    return 0 if covered else -1


def compare(a: ValidWriteIdList, b: ValidWriteIdList) -> int:
    """Hive 4's TxnIdUtils.compare: 0 same committed set, 1 a is newer, -1 b is newer.

    Different tables (names compared ignoring case, as Hive does) order by lower-cased name: Hive returns Java's
    String.compareTo value, we return its sign. Open vs aborted and min_open_id are ignored. For well-formed lists
    (exceptions unique, within 1..hwm) the result is 0 exactly when both lists have the same set of valid ids.
    """
    if a.table_name is None or b.table_name is None:
        raise ValueError("compare needs table names (Hive would throw NullPointerException)")
    a_name, b_name = a.table_name.lower(), b.table_name.lower()
    if a_name != b_name:
        return -1 if a_name < b_name else 1
    ax, bx = a.exceptions, b.exceptions
    n = min(len(ax), len(bx))
    for x, y in zip(ax, bx):  # the first difference: the smaller id is committed in the other list
        if x != y:
            return 1 if x > y else -1
    if len(ax) == len(bx):
        return _sign(a.high_watermark - b.high_watermark)
    if len(ax) == n:
        return _shorter_vs_longer(a.high_watermark, bx, b.high_watermark, n)
    return -_shorter_vs_longer(b.high_watermark, ax, a.high_watermark, n)


def is_fresh_or_newer(cached: ValidWriteIdList, requested: ValidWriteIdList) -> bool:
    """May a reader with snapshot `requested` be served the entry cached at `cached`? Never across tables."""
    if cached.table_name is None or requested.table_name is None:
        return False
    if cached.table_name.lower() != requested.table_name.lower():
        return False
    return compare(cached, requested) >= 0


@dataclass(frozen=True)
class ValidTxnWriteIdList:
    """Hive's ValidTxnWriteIdList (`hive.txn.tables.valid.writeids`): a transaction's snapshot of each table it
    reads. Hive writes the tables in HashMap order; we keep the order given or parsed."""

    txn_id: int
    tables: tuple[ValidWriteIdList, ...] = ()

    def __post_init__(self) -> None:
        if type(self.txn_id) is not int or not 0 <= self.txn_id <= LONG_MAX:
            raise ValueError(f"txn id {self.txn_id!r} must be an integer in 0..{LONG_MAX}")
        names = [t.table_name for t in self.tables]
        if len(set(names)) != len(names):  # Hive's map would keep the last one silently
            raise ValueError(f"a table is listed twice in {names}")
        object.__setattr__(self, "tables", tuple(self.tables))

    def get(self, full_table_name: str) -> ValidWriteIdList | None:
        """Exact (case-sensitive) lookup, like Hive's getTableValidWriteIdList."""
        return next((t for t in self.tables if t.table_name == full_table_name), None)

    @classmethod
    def parse(cls, text: str) -> ValidTxnWriteIdList:
        try:
            if not text:
                raise ValueError("empty string")
            first, *rest = text.split("$")
            while rest and rest[-1] == "":  # Java's String.split drops trailing empty pieces
                rest.pop()
            return cls(_long(first, "txn id"), tuple(ValidWriteIdList.parse(t) for t in rest))
        except ValueError as e:
            raise _parse_error(cls, text, e) from None

    def format(self) -> str:
        return "$".join([str(self.txn_id), *(t.format() for t in self.tables)])

    def __str__(self) -> str:
        return self.format()
