"""The poller thread: reads the notification log and applies other instances' events to this cache.

It starts from the event id the prewarm recorded before loading, skips the events this instance wrote
itself (its cache was updated by the write), and applies the rest in log order. When the events it needs
were already cleaned up (a long outage), it clears the cache and prewarms again rather than serve a gap.
When the database cannot be reached it retries with backoff and logs once per outage; reads that can be
answered from the cache still are meanwhile. It also deletes events older than the time to live.

Each round first reads the log's head (one primary-key read of NOTIFICATION_SEQUENCE) and reads the log only when
it moved past what this instance applied or wrote itself: an idle instance costs the database one cheap query per
interval. `wake` starts a round at once, which reads the log without the head first: another instance sends a
wake-up after it commits a write (ops/peer_wake.py), so its change is seen here within milliseconds, and the
interval is only the bound for writers that send none (a Java HMS, another hmsproxy whose datagram was lost).

`catch_up` lets a request thread apply the log up to a given event id at once (a granted lock is a
synchronisation point: store/cache/transactions.py); one lock keeps it and the thread from applying at
the same time.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from hmsproxy.events.messages import Event
from hmsproxy.ops.background import BackgroundLoop, Outage
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.sync import AllocationsSeen, apply_event
from hmsproxy.store.cache.unlogged_writes import UnloggedWrites
from hmsproxy.store.domain import NotificationEvent

log = logging.getLogger(__name__)
BATCH = 1000
MAX_BACKOFF_S = 10.0
OWN_EVENTS_KEPT = 100_000
CATCH_UP_TIMEOUT_S = 10.0
OWN_CONFIRM_TIMEOUT_S = 10.0   # past it, an event still unconfirmed is applied as another writer's: safe
# Small tables changed by other writers are read again in place (sync.py) while a round has spent less than this:
# a burst of events on many tables then delays the round's later events by at most this (they are dropped for the
# loader, as before).
REFRESH_BUDGET_S = 0.05


class Poller:
    def __init__(self, store: CachedStore, metrics: Metrics, *, interval_s: float, event_ttl_s: int,
                 start_after: Callable[[], int], reload_everything: Callable[[], int],
                 unlogged: UnloggedWrites[Any] | None = None, unlogged_check_s: float = 0.0,
                 refresh_budget_s: float = REFRESH_BUDGET_S) -> None:
        self.store = store
        self.metrics = metrics
        self.interval_s = interval_s
        self.refresh_budget_s = refresh_budget_s
        self.event_ttl_s = event_ttl_s
        self._start_after = start_after           # blocks until prewarm recorded its starting event id
        self._reload_everything = reload_everything  # clears the cache, prewarms again, returns the new start
        self.last_applied = 0
        self._own: OrderedDict[int, str] = OrderedDict()   # event id -> type, of events this instance committed
        self._in_flight: set[int] = set()   # this instance's writes whose events may be in the log, outcome untold
        self._own_changed = threading.Condition()
        self._started = threading.Event()
        self._applying = threading.Lock()
        self._allocations = AllocationsSeen()
        self._outage = Outage(log, "cannot read the notification log (%s); retrying with backoff",
                              "notification log reachable again; caught up to event %d")
        self._backoff = interval_s
        self._loop = BackgroundLoop("notification-poller", self._step)
        self._last_clean = 0.0
        self._unlogged = unlogged  # None once it found something, or when not looking
        self._unlogged_check_s = unlogged_check_s
        self._last_unlogged_check = 0.0
        self._told = False   # woken by a writer's wake-up: the log moved

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def wake(self) -> None:
        """Starts the next round now, reading the log without its head first: another writer said it committed
        events."""
        self._told = True
        self._loop.wake()

    # ---- the database's EventWatcher: the events this instance writes (its cache has them once committed) ----

    def sending(self, write: int) -> None:
        with self._own_changed:
            self._in_flight.add(write)

    def committed(self, write: int, events: list[tuple[int, Event]]) -> None:
        with self._own_changed:
            self._in_flight.discard(write)
            self._own.update((event_id, event.event_type) for event_id, event in events)
            while len(self._own) > OWN_EVENTS_KEPT:
                self._own.popitem(last=False)
            self._own_changed.notify_all()

    def abandoned(self, write: int) -> None:
        with self._own_changed:
            self._in_flight.discard(write)
            self._own_changed.notify_all()

    def _is_own(self, event_id: int) -> bool:
        """Whether this instance wrote an event the poller read. What the poller reads is committed, but its
        writer learns the event's id and confirms the commit a moment later: an event not known as own is
        decided once the writes under way after it was read have told their outcome (one of them may be its
        writer; a write that starts later cannot be). Taken for another writer's, an own event would drop its
        table's entry for a reload, which a steady stream of writes to a big table never lets finish. An event
        whose writer failed is another writer's (the database reuses the ids of a failed write)."""
        with self._own_changed:
            if event_id not in self._own:
                under_way = set(self._in_flight)
                self._own_changed.wait_for(lambda: under_way.isdisjoint(self._in_flight),
                                           timeout=OWN_CONFIRM_TIMEOUT_S)
            return self._own.pop(event_id, None) is not None

    def _skip_own(self) -> None:
        """Steps over the events next in the log that this instance wrote, without reading them: the log holds
        them (their commits are confirmed) and the cache has them. On its own on a database, an
        instance then reads none of its events back (an add of 100 partitions is a message of ~100 KB)."""
        with self._own_changed:
            while (event_type := self._own.pop(self.last_applied + 1, None)) is not None:
                self.metrics.notification_events_applied.labels(event_type).inc()
                self.last_applied += 1

    def _step(self) -> float:
        """Applies the next batch (first waiting for prewarm's start); returns the wait before the next: none after a
        full batch, the interval after the rest, a doubling backoff while the database fails."""
        if not self._started.is_set():
            self.last_applied = self._start_after()
            self.metrics.notification_last_applied.set(self.last_applied)
            self._started.set()
        try:
            told, self._told = self._told, False
            with self._applying:
                busy = self.poll_once() if told or self._log_moved() else self._idle()
            self.metrics.notification_last_poll.set_to_current_time()
        except Exception as exc:  # the database is down or flaky: retry, log once per outage
            self.metrics.notification_poll_errors.inc()
            self._outage.failure(exc)
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
            return self._backoff
        self._outage.success(self.last_applied)
        self._backoff = self.interval_s
        return 0.0 if busy else self.interval_s   # a full batch: more events are waiting

    def catch_up(self, event_id: int) -> bool:
        """Applies every event up to `event_id` before returning; False if that cannot be done now."""
        if not self._started.is_set():
            return False
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        with self._applying:
            while self.last_applied < event_id:
                if time.monotonic() > deadline:
                    return False
                try:
                    self.poll_once()
                except Exception as exc:  # the database is unreachable: the caller falls back
                    log.warning("cannot catch up with the notification log to event %d: %s", event_id, exc)
                    return False
        return True

    def _log_moved(self) -> bool:
        """Whether the log holds events this instance neither applied nor wrote (one read of its head)."""
        self._skip_own()
        return self.store.current_event_id() > self.last_applied

    def _idle(self) -> bool:
        """A round with nothing new in the log: only the chores that keep their own pace."""
        self.metrics.notification_last_applied.set(self.last_applied)
        self.metrics.notification_lag_events.set(0)
        self.metrics.notification_lag_seconds.set(0)
        self._clean()
        self._check_unlogged()
        return False

    def poll_once(self) -> bool:
        """Applies the next batch of events; True if the batch was full (or the cache was reloaded)."""
        self._skip_own()
        events = self.store.get_events(self.last_applied, BATCH)
        if self._log_has_gap(events):
            self.last_applied = self._reload_everything()
            return True
        refresh_until = time.monotonic() + self.refresh_budget_s
        for event in events:
            refresh = time.monotonic() < refresh_until
            if not self._is_own(event.eventId) and not self._applied(event, refresh):
                self.last_applied = self._reload_everything()
                return True
            self.metrics.notification_events_applied.labels(event.eventType).inc()
            self.last_applied = event.eventId
        head = self.store.current_event_id()
        self._skip_own()   # those written meanwhile: no lag
        lag = max(head - self.last_applied, 0)
        self.metrics.notification_last_applied.set(self.last_applied)
        self.metrics.notification_lag_events.set(lag)
        waiting = self.store.get_events(self.last_applied, 1) if lag else []
        self.metrics.notification_lag_seconds.set(max(time.time() - waiting[0].eventTime, 0) if waiting else 0)
        self._clean()
        self._check_unlogged()
        return len(events) == BATCH

    def _log_has_gap(self, events: list[NotificationEvent]) -> bool:
        """Whether events this instance has not applied were cleaned up. Finding none newer, or the very next one,
        is proof enough that none were (cleaning takes the oldest first); otherwise the log's oldest event tells."""
        if self.last_applied == 0 or not events or events[0].eventId == self.last_applied + 1:
            return False
        oldest = self.store.oldest_event_id()
        if oldest is None or oldest <= self.last_applied + 1:
            return False
        log.warning("events %d..%d were cleaned up before this instance applied them: reloading the cache",
                    self.last_applied + 1, oldest - 1)
        return True

    def _applied(self, event: NotificationEvent, refresh: bool) -> bool:
        """Applies an event; False when its message cannot be read (a format or a row this instance does not
        understand): nothing then tells what the event changed, and only reloading everything is safe. Retrying
        it would stop the poller at that event for good."""
        try:
            apply_event(self.store, event, self._allocations, refresh)
            return True
        except ValueError as exc:
            log.warning("event %d (%s) cannot be read (%s): reloading the cache", event.eventId, event.eventType, exc)
            return False

    def _check_unlogged(self) -> None:
        if self._unlogged is None or time.monotonic() - self._last_unlogged_check < self._unlogged_check_s:
            return
        self._last_unlogged_check = time.monotonic()
        if self._unlogged.check():
            self._unlogged = None  # the cache passes through for good: nothing more to find

    def _clean(self) -> None:
        if time.monotonic() - self._last_clean < 60:
            return
        self._last_clean = time.monotonic()
        removed = self.store.clean_events(self.event_ttl_s)
        if removed:
            log.info("cleaned %d notification events older than %d s", removed, self.event_ttl_s)
