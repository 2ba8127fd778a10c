"""Locks released through this process, for check_lock calls that hold a WAITING answer.

A waiting check_lock reads the lock once, learns which lock blocks it, and sleeps until that lock (or one
this process cannot name, such as a transaction's locks released by its commit) is released, or until a
timeout: releases through other instances are not seen here, so the caller reads again after it. Waiters
wake only for their own blocker, so a release costs one read, not a read per waiting client.
"""
from __future__ import annotations

import threading
import time
from collections import deque

HISTORY = 4096  # releases remembered for waiters that are between two reads; older ones count as "any"


class LockReleases:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0
        self._history: deque[tuple[int, int | None]] = deque(maxlen=HISTORY)  # (count, lock id; None: unknown)

    def mark(self) -> int:
        """A position to wait from: take it before reading the lock, so no release in between is missed."""
        with self._changed:
            return self._count

    def released(self, lock_id: int | None) -> None:
        """After a commit that released `lock_id` (None: locks not known by id, or possibly some)."""
        with self._changed:
            self._count += 1
            self._history.append((self._count, lock_id))
            self._changed.notify_all()

    def wait(self, since: int, blocker: int, timeout_s: float) -> bool:
        """Whether `blocker` may have been released after the position `since`: True as soon as it may,
        False after the timeout."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not self._may_be_released(since, blocker):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def was_released(self, since: int, blocker: int) -> bool:
        """Whether `blocker` itself was released through this process after the position `since`."""
        with self._changed:
            for count, lock_id in reversed(self._history):
                if count <= since:
                    return False
                if lock_id == blocker:
                    return True
            return False

    def _may_be_released(self, since: int, blocker: int) -> bool:
        if self._count == since:
            return False
        if self._history[0][0] > since + 1:
            return True  # some releases since then are forgotten
        for count, lock_id in reversed(self._history):
            if count <= since:
                return False
            if lock_id is None or lock_id == blocker:
                return True
        return False
