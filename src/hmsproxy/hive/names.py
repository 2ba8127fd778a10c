"""Hive's naming rules: identifier validation, SQL-like name patterns and partition names.

Partition names are `k1=v1/k2=v2` with both sides escaped as Hive's FileUtils.escapePathName does, so a
name is also the relative directory of the partition.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hmsproxy.hive.like import LikePattern

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
DEFAULT_CATALOG = "hive"

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+\Z")
# Characters Hive escapes in partition path components (FileUtils.charToEscape).
_ESCAPED = frozenset([chr(c) for c in range(0x01, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))


def is_valid_identifier(name: str | None) -> bool:
    """Database, table and function names: letters, digits and underscores only (MetaStoreUtils.validateName)."""
    return bool(name and _IDENTIFIER.match(name))


_TO_ESCAPE = re.compile("[" + re.escape("".join(sorted(_ESCAPED))) + "]")


def escape_path_name(text: str) -> str:
    if not _TO_ESCAPE.search(text):   # the usual value: looking costs less than substituting nothing
        return text
    return _TO_ESCAPE.sub(lambda found: f"%{ord(found.group()):02X}", text)


def unescape_path_name(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and _is_hex(text[i + 1 : i + 3]):
            out.append(chr(int(text[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def normalise_partition_value(value: str | None) -> str:
    """An empty or missing value is stored as Hive's default partition name."""
    return DEFAULT_PARTITION_NAME if value is None or value == "" else value


def make_partition_name(keys: Sequence[str], values: Sequence[str]) -> str:
    return "/".join([f"{escape_path_name(k)}={escape_path_name(normalise_partition_value(v))}"
                     for k, v in zip(keys, values)])


def partition_missing_message(values: Sequence[str]) -> str:
    """Hive's NoSuchObjectException text for a partition that does not exist (values as a Java list)."""
    return f"partition values=[{', '.join(values)}]"


def partition_exists_message(db: str, table: str, values: Sequence[str]) -> str:
    """Hive's refusal of a rename onto an existing partition (HiveAlterHandler; values as a Java list)."""
    return f"Partition already exists:{db}.{table}.[{', '.join(values)}]"


def parse_partition_name(name: str) -> list[tuple[str, str]]:
    """`a=1/b=x%2Fy` -> [("a", "1"), ("b", "x/y")]; raises ValueError on a component without `=`."""
    pairs: list[tuple[str, str]] = []
    for component in name.split("/"):
        if not component:
            continue
        key, sep, value = component.partition("=")
        if not sep or not key:
            raise ValueError(f"invalid partition name component {component!r} in {name!r}")
        pairs.append((unescape_path_name(key), unescape_path_name(value)))
    return pairs


def filter_by_pattern(names: Iterable[str], pattern: str | None) -> list[str]:
    """Hive's listing patterns as its ObjectStore reads them: the pattern trimmed, alternatives split on `|`
    (each kept as it is, spaces included), `*` means any
    sequence, each alternative matched case-insensitively as HMS's DataNucleus matches a "regex"
    (hmsproxy/hive/like.py: `.` is any one character, `[`, `(`, `+`, `?` are literal)."""
    if pattern is None or pattern == "" or pattern == "*":
        return sorted(names)
    alternatives = [LikePattern.compile("(?i)" + alt.replace("*", ".*")) for alt in pattern.strip().split("|")]
    return sorted(n for n in names if any(alt.matches(n) for alt in alternatives))
