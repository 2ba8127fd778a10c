"""Noticing another metastore that writes to the database without logging events: a Java HMS beside hmsproxy
whose hive-site.xml lacks Hive's DbNotificationListener. hmsproxy's cache learns of other writers only from the
notification log, so such writes would leave it stale.

Every writer that logs announces each database, table, partition and function it creates with a create event:
hmsproxy and Hive's transactional listener in the transaction of the rows, Hive's plain listener
(hive.metastore.event.listeners) a moment after it. So the rows created up to one look are at most as many as
the create events up to the next look announce; more rows than that means a writer that logs nothing. Only
creates can be counted this way; once one is seen, that writer's alters and drops are assumed too: the cache
cannot know what they changed, so it stops answering (every read goes to the database) until hmsproxy is
restarted after the Java HMS got its listener. Slower, never wrong.

The partitions an ADD_PARTITION event announces are in its message (~1 KB per partition); those of this
instance's own events are counted when they commit (it watches the database's events), so that a look reads
only other writers' messages.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from hmsproxy.events import messages as m
from hmsproxy.ops.metrics import Metrics

log = logging.getLogger(__name__)
LISTENER_ADVICE = ("give every Java HMS on this database Hive's notification listener "
                   "(hive.metastore.transactional.event.listeners=org.apache.hive.hcatalog.listener."
                   "DbNotificationListener in its hive-site.xml), then restart hmsproxy")
OWN_ADDS_KEPT = 100_000   # own ADD_PARTITION events remembered between looks; past it the oldest are read back


class Mark(Protocol):
    """Where a look stopped, as the store tells it."""

    @property
    def event_id(self) -> int: ...


M = TypeVar("M", bound=Mark)


class CreationCounts(Protocol[M]):
    """The store's count of rows created and announced since a mark (server.py passes the SQL store)."""

    def creations_since(self, mark: M | None, known_adds: Mapping[int, int]
                        ) -> tuple[M, dict[str, tuple[int, int]]]: ...


class UnloggedWrites(Generic[M]):
    def __init__(self, store: CreationCounts[M], metrics: Metrics, on_found: Callable[[str], None]) -> None:
        self.store = store
        self.metrics = metrics
        self.on_found = on_found
        self._mark: M | None = None
        self._created: dict[str, int] = {}  # per kind, rows created since the first look, up to the last look
        self._announced: dict[str, int] = {}  # per kind, rows the create events since the first look announce
        self._own_adds: dict[int, int] = {}   # event id -> partitions, of own ADD_PARTITION events not looked at
        self._own_adds_lock = threading.Lock()
        self._looking = True

    # ---- the database's EventWatcher --------------------------------------------------------------------------

    def sending(self, write: int) -> None:
        pass

    def committed(self, write: int, events: list[tuple[int, m.Event]]) -> None:
        with self._own_adds_lock:
            if not self._looking:
                return
            for event_id, event in events:
                if event.event_type == m.ADD_PARTITION:
                    self._own_adds[event_id] = event.created_rows
            while len(self._own_adds) > OWN_ADDS_KEPT:
                del self._own_adds[next(iter(self._own_adds))]

    def abandoned(self, write: int) -> None:
        pass

    def check(self) -> bool:
        """Counts what was created and announced since the last check; True (and `on_found` told) when the rows
        seen at the last check outnumber everything announced by now. The first check only marks where to start."""
        with self._own_adds_lock:
            own_adds = dict(self._own_adds)
        self._mark, counts = self.store.creations_since(self._mark, own_adds)
        with self._own_adds_lock:
            for event_id in [i for i in self._own_adds if i <= self._mark.event_id]:
                del self._own_adds[event_id]
        self.metrics.unlogged_write_checks.inc()
        unannounced = {}
        for kind, (created, announced) in counts.items():
            self._announced[kind] = self._announced.get(kind, 0) + announced
            if self._created.get(kind, 0) > self._announced[kind]:
                unannounced[kind] = self._created[kind] - self._announced[kind]
            self._created[kind] = self._created.get(kind, 0) + created
        if not unannounced:
            return False
        what = ", ".join(f"{count} {kind}(s)" for kind, count in sorted(unannounced.items()))
        for kind, count in unannounced.items():
            self.metrics.unlogged_writes.labels(kind).inc(count)
        log.error("another writer created %s in this metastore database without a notification event: the cache "
                  "cannot follow it and now passes every read to the database. To fix, %s", what, LISTENER_ADVICE)
        with self._own_adds_lock:
            self._looking = False
            self._own_adds.clear()
        self.on_found(what)
        return True
