"""The reaper thread: aborts transactions and releases locks whose clients stopped heartbeating.

A client killed while holding a lock or an open transaction would otherwise block the table forever.
Every instance runs one; a pass is idempotent (the store reads the stale rows FOR UPDATE), so several
instances on one database never abort a transaction twice. Failures (the database away) are logged once
per outage and retried at the next interval.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from hmsproxy.ops.background import BackgroundLoop, Outage

log = logging.getLogger(__name__)


class Reaper:
    def __init__(self, reap: Callable[[], Sequence[object]], interval_s: float) -> None:
        self._reap = reap                 # the store's reap_expired
        self._interval_s = interval_s
        self._outage = Outage(log, "cannot reap abandoned transactions and locks (%s); retrying",
                              "reaping abandoned transactions and locks again")
        self._loop = BackgroundLoop("txn-reaper", self._step, first_wait_s=interval_s)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _step(self) -> float:
        try:
            aborted = self._reap()
        except Exception as exc:  # the database is down or flaky: try again at the next interval
            self._outage.failure(exc)
            return self._interval_s
        self._outage.success()
        if aborted:
            log.info("aborted %d write ids of transactions that stopped heartbeating", len(aborted))
        return self._interval_s
