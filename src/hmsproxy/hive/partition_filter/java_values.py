"""Partition values read as the Java metastore reads them: integers, decimals, dates as SimpleDateFormat parses
them, timestamps, and strings in Java's String.compareTo order. The parser checks literals and the compiler and
the plans compare values by these same readings, so they live in one place."""
from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal, InvalidOperation

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


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


def parse_date_strict(s: str) -> _dt.date | None:
    """A whole yyyy-m-d value (stored partition values, DATE literals)."""
    return _make_date(_DATE_STRICT_RE.fullmatch(s))


def parse_date_prefix(s: str) -> _dt.date | None:
    """Like Hive's SimpleDateFormat("yyyy-MM-dd").parse: a valid date at the start is enough."""
    return _make_date(_DATE_PREFIX_RE.match(s))


def parse_timestamp(s: str) -> tuple[_dt.datetime, int] | None:
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


def parse_int(s: str) -> int | None:
    return int(s) if _INT_VALUE_RE.fullmatch(s) else None


def parse_decimal(s: str) -> Decimal | None:
    try:
        d = Decimal(s.strip())
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def java_order(s: str) -> str:
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
