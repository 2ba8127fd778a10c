"""For tests of a write that must wait for another transaction's lock: run it beside that open transaction, see
that it waits, then let it go on."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from support.polling import wait_for

# Counts the transactions waiting for another's lock. MariaDB refreshes its InnoDB lock tables only when they were
# last read 0.1 s ago or more: polled more slowly.
LOCK_WAITS = {"mariadb": "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS",
              "postgres": "SELECT COUNT(*) FROM pg_locks WHERE NOT granted"}


def run_while_locked(backend: str, holder: Connection, call: Callable[[], Any]) -> Any:
    """Runs `call` on a thread while `holder` has an uncommitted change that `call` must wait for; checks that it
    waits (has not returned), commits `holder`, and returns what `call` returned or the exception it raised."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # handed to the test, which decides
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    with holder.engine.connect() as watching:
        wait_for(lambda: bool(outcome) or watching.exec_driver_sql(LOCK_WAITS[backend]).scalar_one() > 0,
                 "the call waiting for the other transaction's lock, or done", interval=0.25)
    assert outcome == [], "the call did not wait for the other transaction"
    holder.commit()
    thread.join(timeout=60)
    [result] = outcome
    return result
