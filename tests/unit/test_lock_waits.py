"""LockReleases wakes a waiting check_lock for its own blocker only (and for releases it cannot name)."""
from __future__ import annotations

import threading

from hmsproxy.store.sql.lock_waits import HISTORY, LockReleases


def test_a_release_of_another_lock_does_not_count():
    releases = LockReleases()
    since = releases.mark()
    releases.released(7)
    assert releases.wait(since, blocker=5, timeout_s=0.01) is False


def test_the_blockers_release_counts_even_before_the_wait_begins():
    releases = LockReleases()
    since = releases.mark()
    releases.released(7)
    releases.released(5)
    assert releases.wait(since, blocker=5, timeout_s=0) is True
    assert releases.wait(releases.mark(), blocker=5, timeout_s=0) is False  # a later position: not again


def test_a_release_not_known_by_id_counts_for_every_waiter():
    releases = LockReleases()
    since = releases.mark()
    releases.released(None)
    assert releases.wait(since, blocker=5, timeout_s=0) is True


def test_forgotten_releases_count():
    releases = LockReleases()
    since = releases.mark()
    for lock_id in range(HISTORY + 1):
        releases.released(10_000 + lock_id)
    assert releases.wait(since, blocker=5, timeout_s=0) is True


def test_a_waiter_is_woken_by_its_blockers_release():
    releases = LockReleases()
    since = releases.mark()
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(releases.wait(since, blocker=5, timeout_s=60)))
    waiter.start()
    releases.released(6)
    releases.released(5)
    waiter.join(timeout=60)
    assert outcome == [True]


def test_was_released_names_the_blocker_only():
    releases = LockReleases()
    since = releases.mark()
    releases.released(None)
    releases.released(7)
    assert releases.was_released(since, 5) is False  # "maybe" (None) is not "surely"
    releases.released(5)
    assert releases.was_released(since, 5) is True
    assert releases.was_released(releases.mark(), 5) is False
