"""Counting the SQL statements a store call sends: how tests see round trips without timing anything."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import event

T = TypeVar("T")


def count_statements(store: Any, call: Callable[[], T]) -> tuple[int, T]:
    """(statements `call` sent through the SQL store's engines, what it returned)."""
    seen, result = statements_sent(store, call)
    return len(seen), result


def statements_sent(store: Any, call: Callable[[], T]) -> tuple[list[str], T]:
    """(the statements `call` sent through the SQL store's engines, in order; what it returned)."""
    seen: list[str] = []

    def listener(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    for engine in store.db.engines:
        event.listen(engine, "before_cursor_execute", listener)
    try:
        result = call()
    finally:
        for engine in store.db.engines:
            event.remove(engine, "before_cursor_execute", listener)
    return seen, result


def driver_queries(call: Callable[[], T]) -> tuple[list[str], T]:
    """(every query pymysql sent while `call` ran, COMMIT and ROLLBACK included: one round trip each; what `call`
    returned). Counts at the driver, below SQLAlchemy, which does not see a transaction's COMMIT as a statement."""
    from pymysql.connections import Connection

    seen: list[str] = []
    send = Connection._execute_command

    def counted(self: Any, command: int, sql: Any) -> Any:
        seen.append(sql.decode("utf-8", "replace") if isinstance(sql, bytes) else str(sql))
        return send(self, command, sql)

    Connection._execute_command = counted   # type: ignore[method-assign]
    try:
        result = call()
    finally:
        Connection._execute_command = send   # type: ignore[method-assign]
    return seen, result
