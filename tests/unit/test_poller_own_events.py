"""The poller's record of this instance's own events. A write's events may be in the log before their writer
knows their ids (on MySQL the query that appends them commits too): an event the poller reads that it does not
know as its own waits for the writes under way when it was read, and only for those; the events of a write that
failed are another writer's (the database reuses their ids)."""
from __future__ import annotations

import queue
import threading

import pytest

from hmsproxy.events.messages import Event
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.poller import OWN_CONFIRM_TIMEOUT_S, Poller
from support.polling import wait_for


def _event(event_type: str) -> Event:
    return Event(event_type, "hive", "d", "t", "{}")


def _poller() -> Poller:
    return Poller(None, Metrics(), interval_s=1.0, event_ttl_s=60,   # no store: nothing here reads the log
                  start_after=lambda: 0, reload_everything=lambda: 0)


def _is_own_later(poller: Poller, event_id: int) -> queue.Queue[bool]:
    """Asks the poller about an event it has just read, on a thread of its own (as the poller's thread asks)."""
    answer: queue.Queue[bool] = queue.Queue()
    threading.Thread(target=lambda: answer.put(poller._is_own(event_id)), daemon=True).start()
    return answer


@pytest.mark.parametrize("outcome", ["committed", "abandoned"])
def test_an_event_read_while_a_write_is_under_way_is_own_once_committed_and_another_writers_once_failed(outcome):
    poller = _poller()
    poller.sending(1)
    answer = _is_own_later(poller, 7)
    if outcome == "committed":
        poller.committed(1, [(7, _event("ADD_PARTITION")), (8, _event("ADD_PARTITION"))])
    else:
        poller.abandoned(1)
    assert answer.get(timeout=10) is (outcome == "committed")


def test_an_event_read_waits_only_for_the_writes_under_way_when_it_was_read():
    """A write that starts after the event was read cannot have written it: its outcome is not waited for."""
    poller = _poller()
    poller.sending(1)
    answer = _is_own_later(poller, 9)
    wait_for(lambda: _waiting(poller), "the question asked, waiting for write 1", timeout=10, interval=0.001)
    poller.sending(2)   # after it; under way until the end of the test
    poller.committed(1, [(8, _event("ALTER_TABLE"))])
    assert answer.get(timeout=OWN_CONFIRM_TIMEOUT_S / 2) is False   # waiting for write 2 would take the timeout
    poller.committed(2, [(9, _event("ALTER_TABLE"))])


def _waiting(poller: Poller) -> bool:
    with poller._own_changed:
        return bool(poller._own_changed._waiters)   # type: ignore[attr-defined]   # CPython's Condition


def test_an_event_read_while_no_write_is_under_way_is_decided_at_once():
    poller = _poller()
    poller.committed(1, [(7, _event("ALTER_TABLE"))])
    assert _is_own_later(poller, 7).get(timeout=10) is True
    assert _is_own_later(poller, 8).get(timeout=10) is False


def test_only_committed_own_events_are_stepped_over_unread():
    poller = _poller()
    poller.last_applied = 6
    poller.sending(1)
    poller.committed(1, [(7, _event("ALTER_TABLE"))])
    poller.sending(2)   # its events' ids not known yet: the poller must read the log to get past them
    poller._skip_own()
    assert poller.last_applied == 7
    poller.committed(2, [(8, _event("ALTER_TABLE"))])
    poller._skip_own()
    assert poller.last_applied == 8
