"""Combiner: requests that arrive while a batch runs are answered together in the next one, each caller
with its own answer or its own error."""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import pytest

from hmsproxy.store.sql.combiner import Combiner
from support.polling import wait_for


class GatedBatches:
    """A run_batch that records its batches and holds the first one until `gate` is set."""

    def __init__(self, answer: Callable[[int], int | Exception]) -> None:
        self.batches: list[list[int]] = []
        self.gate = threading.Event()
        self.first_running = threading.Event()
        self.answer = answer

    def __call__(self, requests: Sequence[int]) -> list[int | Exception]:
        self.batches.append(list(requests))
        if len(self.batches) == 1:
            self.first_running.set()
            assert self.gate.wait(10)
        return [self.answer(r) for r in requests]


def _submit_all(combiner: Combiner, batches: GatedBatches, later: list[int]) -> dict[int, object]:
    """Submits 0 (which runs alone and is held), then `later` while it runs; returns what each caller got."""
    got: dict[int, object] = {}

    def call(request: int) -> None:
        try:
            got[request] = combiner.submit(request)
        except Exception as error:
            got[request] = error

    threads = [threading.Thread(target=call, args=(0,))]
    threads[0].start()
    assert batches.first_running.wait(10)
    threads += [threading.Thread(target=call, args=(r,)) for r in later]
    for thread in threads[1:]:
        thread.start()
    wait_for(lambda: combiner.queued() >= len(later), "every later caller queued behind the running batch",
             timeout=10, interval=0.001)
    batches.gate.set()
    for thread in threads:
        thread.join(10)
    return got


def test_a_lone_request_runs_at_once():
    combiner = Combiner(lambda requests: [r * 10 for r in requests])
    assert combiner.submit(4) == 40


def test_requests_arriving_during_a_batch_share_the_next_one():
    batches = GatedBatches(lambda r: r * 10)
    got = _submit_all(Combiner(batches), batches, [1, 2, 3, 4, 5])
    assert got == {r: r * 10 for r in range(6)}
    assert batches.batches[0] == [0]
    assert sorted(batches.batches[1]) == [1, 2, 3, 4, 5] and len(batches.batches) == 2


def test_an_error_answer_goes_to_its_caller_only():
    batches = GatedBatches(lambda r: ValueError(f"no {r}") if r == 2 else r)
    got = _submit_all(Combiner(batches), batches, [1, 2, 3])
    assert isinstance(got[2], ValueError) and str(got[2]) == "no 2"
    assert [got[r] for r in (0, 1, 3)] == [0, 1, 3]


def test_a_failed_batch_fails_its_callers_and_not_the_next_batch():
    calls = []

    def run(requests: Sequence[int]) -> list[int]:
        calls.append(list(requests))
        if len(calls) == 1:
            raise RuntimeError("database gone")
        return list(requests)

    combiner = Combiner(run)
    with pytest.raises(RuntimeError, match="database gone"):
        combiner.submit(1)
    assert combiner.submit(2) == 2


def test_batches_hold_at_most_max_batch_requests():
    batches = GatedBatches(lambda r: r)
    got = _submit_all(Combiner(batches, max_batch=2), batches, [1, 2, 3, 4, 5])
    assert got == {r: r for r in range(6)}
    assert all(len(batch) <= 2 for batch in batches.batches)
    assert sorted(r for batch in batches.batches for r in batch) == list(range(6))
