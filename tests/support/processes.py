"""Work started in several processes at one moment: how tests look for a lost or doubled effect."""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any


def run_at_once(target: Callable[..., None], args_per_process: Sequence[tuple[Any, ...]],
                timeout_s: float = 300) -> list[Any]:
    """Runs `target(*args, start, results)` in one spawned process per `args`: each waits on the barrier `start`
    that all share before its work, and puts one result on the queue `results`. Returns the results in the order
    they came, once every process has exited cleanly."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(len(args_per_process)), context.Queue()
    workers = [context.Process(target=target, args=(*args, start, results)) for args in args_per_process]
    for worker in workers:
        worker.start()
    collected = [results.get(timeout=timeout_s) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    return collected
