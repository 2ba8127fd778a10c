"""What one store write adds to the notification log: passed to the write, filled in by it.

The caller hands in the events of its change (the handler builds them, as Hive's listener would); the store
adds those only it can build while writing (each dropped partition, a transaction's allocations), and its
write transaction appends them all just before it commits, so that an event exists exactly when its change
does. After the commit the journal holds their ids: the newest is the version the write gave its table,
which the cache stamps on its entry.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hmsproxy.events.messages import Event


@dataclass
class Journal:
    events: list[Event] = field(default_factory=list)
    event_ids: list[int] = field(default_factory=list)   # of the events committed so far, in order
    partition_ids: dict[str, int] = field(default_factory=dict)   # the ids a write gave the partitions it added
    before_commit: Callable[[], None] = lambda: None   # waits for work beside the write that must succeed first
    # Rows the store's write leaves to be inserted in the query that appends the events (one round trip fewer
    # per write): (table, rows) pairs, as the SQL store's row_inserts takes them.
    rows: list[Any] = field(default_factory=list)
    # What the store's write was planned on and holds until it commits (the SQL store's Assumption), or None: its
    # events are appended only where it still holds, else the write fails and is planned again (remembered_tables.py).
    held: Any = None

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
