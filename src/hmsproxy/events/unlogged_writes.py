"""Noticing another metastore that writes to the database without logging events: a Java HMS beside hmsproxy
whose hive-site.xml lacks Hive's DbNotificationListener. hmsproxy's cache learns of other writers only from the
notification log, so such writes would leave it stale.

Every writer that logs (hmsproxy, Hive's listener) appends its event in the transaction of its rows, so in any
one snapshot the databases, tables, partitions and functions created since the last look are at most as many as
the create events since then announce. More rows than that means a writer that logs nothing. Only creates can
be counted this way; once one is seen, that writer's alters and drops are assumed too: the cache cannot know
what they changed, so it stops answering (every read goes to the database) until hmsproxy is restarted after
the Java HMS got its listener. Slower, never wrong.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from hmsproxy.metrics import Metrics
from hmsproxy.store.sql.notifications import CreationMark

log = logging.getLogger(__name__)
LISTENER_ADVICE = ("give every Java HMS on this database Hive's notification listener "
                   "(hive.metastore.transactional.event.listeners=org.apache.hive.hcatalog.listener."
                   "DbNotificationListener in its hive-site.xml), then restart hmsproxy")


class UnloggedWrites:
    def __init__(self, store: Any, metrics: Metrics, on_found: Callable[[str], None]) -> None:
        self.store = store  # the SQL store: creations_since
        self.metrics = metrics
        self.on_found = on_found
        self._mark: CreationMark | None = None

    def check(self) -> bool:
        """Looks at what was created since the last check; True (and `on_found` told) when more was created than
        announced. The first check only marks where to start."""
        self._mark, counts = self.store.creations_since(self._mark)
        self.metrics.unlogged_write_checks.inc()
        unannounced = {kind: created - announced for kind, (created, announced) in counts.items()
                       if created > announced}
        if not unannounced:
            return False
        what = ", ".join(f"{count} {kind}(s)" for kind, count in sorted(unannounced.items()))
        for kind, count in unannounced.items():
            self.metrics.unlogged_writes.labels(kind).inc(count)
        log.error("another writer created %s in this metastore database without a notification event: the cache "
                  "cannot follow it and now passes every read to the database. To fix, %s", what, LISTENER_ADVICE)
        self.on_found(what)
        return True
