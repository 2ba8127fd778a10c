"""What one store write adds to the notification log: passed to the write, filled in by it.

The caller hands in the events of its change (the handler builds them, as Hive's listener would); the store
adds those only it can build while writing (each dropped partition, a transaction's allocations), and its
write transaction appends them all just before it commits, so that an event exists exactly when its change
does. After the commit the journal holds their ids: the newest is the version the write gave its table,
which the cache stamps on its entry.

A write may also leave work that needs nothing from the commit but whose result is wanted right after it (the
cache's encoding of what was written): `while_committing`, done while the database runs the query that commits,
where the store sends one (MySQL/MariaDB), rather than after it. See WorkAhead.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from sqlalchemy import ColumnElement, Table

from hmsproxy.events.messages import Event

T = TypeVar("T")


class Held(Protocol):
    """What a write was planned on and holds until it commits (the SQL store's Assumption): the condition, and its
    SQL as the database renders it."""

    @property
    def condition(self) -> ColumnElement[bool]: ...

    @property
    def sql(self) -> str: ...


@dataclass
class Journal:
    events: list[Event] = field(default_factory=list)
    event_ids: list[int] = field(default_factory=list)   # of the events committed so far, in order
    partition_ids: dict[str, int] = field(default_factory=dict)   # the ids a write gave the partitions it added
    before_commit: Callable[[], None] = lambda: None   # waits for work beside the write that must succeed first
    # Rows the store's write leaves to be inserted in the query that appends the events (one round trip fewer
    # per write): (table, rows) pairs, as the SQL store's row_inserts takes them.
    rows: list[tuple[Table, Sequence[Mapping[str, object]]]] = field(default_factory=list)
    # What the store's write was planned on and holds until it commits (the SQL store's Assumption), or None: its
    # events are appended only where it still holds, else the write fails and is planned again (remembered_tables.py).
    held: Held | None = None
    # Work done while the query that commits runs (each piece must be safe to run once or never: WorkAhead).
    while_committing: list[Callable[[], None]] = field(default_factory=list)

    @classmethod
    def of(cls, *events: Event) -> Journal:
        return cls(list(events))

    def add(self, event: Event) -> None:
        self.events.append(event)

    def unwritten(self) -> list[Event]:
        return self.events[len(self.event_ids):]

    def committed(self, event_ids: Sequence[int]) -> None:
        self.event_ids += event_ids
        self.rows.clear()
        self.held = None

    def rolled_back(self, added_from: int) -> None:
        """Forgets the events added by a transaction that failed (they are added again if it is repeated);
        the ones handed in before it stay, to be appended by the repeat. Its rows and assumption go: a repeat
        sets them again."""
        del self.events[max(added_from, len(self.event_ids)):]
        self.rows.clear()
        self.held = None

    @property
    def version(self) -> int:
        """The newest event id the write committed; 0 when it committed none."""
        return max(self.event_ids, default=0)

    def work_while_committing(self) -> None:
        for work in self.while_committing:
            work()


class WorkAhead(Generic[T]):
    """Work whose result is wanted once a write has committed and that needs nothing from the write: `run` (at most
    once, never raising) while the database runs the committing query, where the store gets to do it there; else
    `result` does it when asked. Either way `result` gives what `make` returns, or raises what it raised."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._outcome: tuple[T | None, BaseException | None] | None = None

    def run(self) -> None:
        if self._outcome is None:
            try:
                self._outcome = (self._make(), None)
            except Exception as exc:   # raised by `result`, in the call that asked for the work
                self._outcome = (None, exc)

    def result(self) -> T:
        self.run()
        assert self._outcome is not None
        value, error = self._outcome
        if error is not None:
            raise error
        return value   # type: ignore[return-value]   # set by a run that raised nothing
