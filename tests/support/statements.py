"""Counting the SQL statements a store call sends: how tests see round trips without timing anything."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import event

T = TypeVar("T")


def count_statements(store: Any, call: Callable[[], T]) -> tuple[int, T]:
    """(statements `call` sent through the SQL store's engine, what it returned)."""
    seen: list[str] = []

    def listener(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(store.db.engine, "before_cursor_execute", listener)
    try:
        result = call()
    finally:
        event.remove(store.db.engine, "before_cursor_execute", listener)
    return len(seen), result
