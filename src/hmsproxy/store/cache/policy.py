"""Which tables the cache holds: Hive's whitelist/blacklist of `db.table` patterns."""
from __future__ import annotations

import re
from dataclasses import dataclass


def _compile(patterns: str) -> list[re.Pattern[str]]:
    """Comma-separated Java-style regexes matched against `db.table`, case-insensitively."""
    return [re.compile(p.strip() + r"\Z", re.IGNORECASE) for p in patterns.split(",") if p.strip()]


@dataclass(frozen=True)
class CachePolicy:
    whitelist: tuple[re.Pattern[str], ...]
    blacklist: tuple[re.Pattern[str], ...]

    @classmethod
    def from_patterns(cls, whitelist: str = ".*", blacklist: str = "") -> CachePolicy:
        try:
            return cls(tuple(_compile(whitelist or ".*")), tuple(_compile(blacklist)))
        except re.error as exc:
            raise ValueError(f"invalid cache whitelist/blacklist pattern: {exc}") from None

    def allows(self, db: str, table: str) -> bool:
        name = f"{db}.{table}"
        return any(p.match(name) for p in self.whitelist) and not any(p.match(name) for p in self.blacklist)
