"""The server's background loops (the notification poller, the cache loader, the transaction reaper, the upstream
refresher): each a named daemon thread that runs a step, waits, and runs it again until it is stopped."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

STOP_TIMEOUT_S = 10.0   # how long stop() waits for a step under way; the thread is a daemon, so never for ever


class BackgroundLoop:
    """Runs `step` on a thread named `name` until stop(). `step` returns how long to wait before it runs again
    (None: until woken); the first run waits `first_wait_s`. wake() and stop() end a wait at once, and a wake-up
    during a step ends the wait after it, so none is lost."""

    def __init__(self, name: str, step: Callable[[], float | None], *, first_wait_s: float = 0.0) -> None:
        self._step = step
        self._first_wait_s = first_wait_s
        self._stopping = threading.Event()
        self._woken = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._woken.set()

    def stop(self) -> None:
        """Ends the loop after the step under way (waiting for it up to STOP_TIMEOUT_S); a loop never started has
        nothing to wait for."""
        self._stopping.set()
        self._woken.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=STOP_TIMEOUT_S)

    @property
    def stopping(self) -> bool:
        """Whether stop() was called: a long step ends early when it is."""
        return self._stopping.is_set()

    def _run(self) -> None:
        wait: float | None = self._first_wait_s
        while True:
            self._woken.wait(wait)
            self._woken.clear()
            if self._stopping.is_set():
                return
            wait = self._step()


class Outage:
    """A loop's failures said once per outage: a warning at the first (`failed`, with the exception), a line when a
    step works again (`ended`, with its arguments), nothing for the retries between."""

    def __init__(self, log: logging.Logger, failed: str, ended: str) -> None:
        self._log = log
        self._failed = failed
        self._ended = ended
        self.failing = False

    def failure(self, exc: Exception) -> None:
        if not self.failing:
            self._log.warning(self._failed, exc)
        self.failing = True

    def success(self, *args: object) -> None:
        if self.failing:
            self._log.info(self._ended, *args)
        self.failing = False
