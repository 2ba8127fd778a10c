"""A log line for the first of a burst of like events, then one line per interval saying how many more came:
a flood of refused connections or failing calls cannot flood the log."""
from __future__ import annotations

import logging
import threading
import time


class BurstLog:
    def __init__(self, message: str, interval_s: float, logger: logging.Logger, level: int = logging.WARNING) -> None:
        self._message = message
        self._interval_s = interval_s
        self._logger = logger
        self._level = level
        self._lock = threading.Lock()
        self._window_started: float | None = None
        self._suppressed = 0

    def happened(self, *args: object, exc_info: BaseException | None = None) -> bool:
        """Records one event; True if it was logged (the first of its interval, with `exc_info`'s traceback)."""
        with self._lock:
            now = time.monotonic()
            if self._window_started is not None and now - self._window_started < self._interval_s:
                self._suppressed += 1
                return False
            if self._suppressed:
                self._logger.log(self._level, "%d more like the next line in the last %.0f s", self._suppressed,
                                 now - (self._window_started or now))
            self._window_started, self._suppressed = now, 0
        self._logger.log(self._level, self._message, *args, exc_info=exc_info)
        return True
