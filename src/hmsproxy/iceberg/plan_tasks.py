"""Plans answered in chunks: the file scan tasks a client fetches later through their plan-task tokens.

A large plan answers its first chunk inline and names the others as plan tasks (`POST .../tasks`). The chunks
are kept here, for at most `ttl_s` seconds and `max_plans` plans (oldest dropped first), so an abandoned plan
cannot hold memory for ever; a client asking after that gets a 404 and plans again.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

ScanTasksJson = dict[str, Any]   # the spec's ScanTasks: file-scan-tasks and the delete-files they reference


class UnknownPlan(LookupError):
    """No plan with that id: never made, cancelled, expired or evicted (HTTP 404, NoSuchPlanIdException)."""


class UnknownPlanTask(LookupError):
    """No plan task with that token (HTTP 404, NoSuchPlanTaskException)."""


class _Plan(NamedTuple):
    created: float
    chunks: tuple[ScanTasksJson, ...]


class PlanTasks:
    """The pending chunks of completed plans, bounded in count and age."""

    def __init__(self, max_plans: int, ttl_s: float, tasks_per_chunk: int = 1000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if tasks_per_chunk < 1:
            raise ValueError("tasks_per_chunk must be at least 1")
        self.max_plans = max_plans
        self.ttl_s = ttl_s
        self.tasks_per_chunk = tasks_per_chunk
        self._clock = clock
        self._plans: OrderedDict[str, _Plan] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, chunks: list[ScanTasksJson]) -> tuple[str, list[str]]:
        """Keep a plan's chunks; its new plan id and one plan-task token a chunk."""
        plan_id = uuid.uuid4().hex
        with self._lock:
            self._expire()
            self._plans[plan_id] = _Plan(self._clock(), tuple(chunks))
            while len(self._plans) > self.max_plans:
                self._plans.popitem(last=False)
        return plan_id, [f"{plan_id}-{index}" for index in range(len(chunks))]

    def fetch(self, token: str) -> ScanTasksJson:
        """The chunk a plan-task token names. Tokens stay valid until the plan goes, so a retried fetch works."""
        plan_id, _, index = token.rpartition("-")
        with self._lock:
            self._expire()
            plan = self._plans.get(plan_id)
            if plan is None or not index.isdigit() or int(index) >= len(plan.chunks):
                raise UnknownPlanTask(f"no plan task {token!r} (unknown, expired or its plan cancelled)")
            return plan.chunks[int(index)]

    def get(self, plan_id: str) -> dict[str, Any]:
        """The spec's FetchPlanningResult of a plan: completed, with every chunk named as a plan task."""
        with self._lock:
            self._expire()
            plan = self._plans.get(plan_id)
            if plan is None:
                raise UnknownPlan(f"no plan {plan_id!r} (unknown, expired or cancelled)")
            return {"status": "completed", "plan-tasks": [f"{plan_id}-{index}" for index in range(len(plan.chunks))]}

    def cancel(self, plan_id: str) -> None:
        """Forget a plan and its pending chunks."""
        with self._lock:
            self._expire()
            if self._plans.pop(plan_id, None) is None:
                raise UnknownPlan(f"no plan {plan_id!r} (unknown, expired or cancelled)")

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._plans)

    def _expire(self) -> None:
        oldest_kept = self._clock() - self.ttl_s
        while self._plans:
            plan_id, plan = next(iter(self._plans.items()))
            if plan.created >= oldest_kept:
                break
            del self._plans[plan_id]
