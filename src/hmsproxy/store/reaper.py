"""The reaper thread: aborts transactions and releases locks whose clients stopped heartbeating.

A client killed while holding a lock or an open transaction would otherwise block the table forever.
Every instance runs one; a pass is idempotent (the store reads the stale rows FOR UPDATE), so several
instances on one database never abort a transaction twice. Failures (the database away) are logged once
per outage and retried at the next interval.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Reaper:
    def __init__(self, reap: Callable[[], list[Any]], interval_s: float) -> None:
        self._reap = reap                 # the store's reap_expired
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="txn-reaper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self._interval_s):
            try:
                aborted = self._reap()
            except Exception as exc:  # the database is down or flaky: try again at the next interval
                if not failing:
                    log.warning("cannot reap abandoned transactions and locks (%s); retrying", exc)
                failing = True
                continue
            if failing:
                log.info("reaping abandoned transactions and locks again")
            failing = False
            if aborted:
                log.info("aborted %d write ids of transactions that stopped heartbeating", len(aborted))
