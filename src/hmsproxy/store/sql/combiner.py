"""Requests of one kind that arrive together run together: one thread runs a batch for all waiting callers.

Made for decisions that hold a database-wide mutex (lock requests: every `lock` holds the NEXT_LOCK_ID row
until it commits). Taken one by one, callers queue on that row and each pays the whole transaction while
the others wait. Combined, the callers waiting in this process share one transaction: the mutex is taken
once per batch and the statements are shared, so a burst of N requests costs about what one did.

Each caller puts its request in the queue and then takes its turn; whoever gets the turn while its own
request is still queued runs a batch of everything queued (up to `max_batch`), and callers whose request
a batch already answered just pick up their answer. No thread of its own, no timer: a lone caller runs its
request at once, as before.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Request = TypeVar("Request")
Answer = TypeVar("Answer")


class _Slot(Generic[Request, Answer]):
    __slots__ = ("answer", "done", "error", "request")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.answer: Answer | None = None
        self.error: BaseException | None = None
        self.done = False


class Combiner(Generic[Request, Answer]):
    def __init__(self, run_batch: Callable[[Sequence[Request]], Sequence[Answer | BaseException]],
                 max_batch: int = 64) -> None:
        """`run_batch` answers each request in order: the answer, or the exception to raise to its caller
        (an exception raised by `run_batch` itself is raised to every caller of the batch)."""
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._queue_guard = threading.Lock()
        self._queue: list[_Slot[Request, Answer]] = []
        self._turn = threading.Lock()  # one batch at a time

    def submit(self, request: Request) -> Answer:
        """Runs `request`, in a batch with whatever else is queued; returns its answer or raises its error."""
        slot: _Slot[Request, Answer] = _Slot(request)
        with self._queue_guard:
            self._queue.append(slot)
        while not slot.done:
            with self._turn:
                if not slot.done:
                    self._run_next_batch()
        if slot.error is not None:
            raise slot.error
        return slot.answer  # type: ignore[return-value]

    def queued(self) -> int:
        """Requests waiting for a batch."""
        with self._queue_guard:
            return len(self._queue)

    def _run_next_batch(self) -> None:
        with self._queue_guard:
            batch, self._queue = self._queue[:self._max_batch], self._queue[self._max_batch:]
        try:
            answers = list(self._run_batch([slot.request for slot in batch]))
        except BaseException as error:  # the batch failed as a whole: every caller in it sees why
            answers = [error] * len(batch)
        for slot, answer in zip(batch, answers):
            if isinstance(answer, BaseException):
                slot.error = answer
            else:
                slot.answer = answer
            slot.done = True
