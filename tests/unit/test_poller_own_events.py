"""The poller's record of this instance's own events: one it reads while its writer is between the commit and
telling it is waited for, and an id whose transaction failed is another writer's (the database reuses it)."""
from __future__ import annotations

import queue
import threading

import pytest

from hmsproxy.events.messages import Event
from hmsproxy.metrics import Metrics
from hmsproxy.store.cache.poller import Poller


def _event(event_type: str) -> Event:
    return Event(event_type, "hive", "d", "t", "{}")


def _poller() -> Poller:
    return Poller(None, Metrics(), interval_s=1.0, event_ttl_s=60,   # no store: nothing here reads the log
                  start_after=lambda: 0, reload_everything=lambda: 0)


@pytest.mark.parametrize("outcome", ["committed", "abandoned"])
def test_an_event_read_while_pending_is_own_once_committed_and_another_writers_once_abandoned(outcome):
    poller = _poller()
    poller.appending([7, 8])
    answer: queue.Queue[bool] = queue.Queue()
    threading.Thread(target=lambda: answer.put(poller._is_own(7))).start()
    if outcome == "committed":
        poller.committed([(7, _event("ADD_PARTITION")), (8, _event("ADD_PARTITION"))])
    else:
        poller.abandoned([7, 8])
    assert answer.get(timeout=10) is (outcome == "committed")


def test_only_committed_own_events_are_stepped_over_unread():
    poller = _poller()
    poller.last_applied = 6
    poller.appending([7])
    poller.committed([(7, _event("ALTER_TABLE"))])
    poller.appending([8])   # its commit not confirmed yet: the poller must read the log to get past it
    poller._skip_own()
    assert poller.last_applied == 7
    poller.committed([(8, _event("ALTER_TABLE"))])
    poller._skip_own()
    assert poller.last_applied == 8
