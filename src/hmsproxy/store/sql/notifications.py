"""Reading the notification log (the writes append to it themselves: events/log.py)."""
from __future__ import annotations

from typing import Any, Sequence

from hmsproxy.events import log as event_log
from hmsproxy.events.messages import Event
from hmsproxy.store.sql.database import Database


class NotificationStore:
    db: Database

    def get_events(self, after: int, limit: int | None = None, *, skip_types: Sequence[str] = (),
                   cat: str | None = None, db: str | None = None, tables: Sequence[str] | None = None) -> list[Any]:
        with self.db.transaction() as conn:
            return event_log.read(conn, after, limit, skip_types=skip_types, cat=cat, db=db, tables=tables)

    def table_version(self, db_name: str, tbl_name: str) -> int:
        """The id of the newest event about a table: its version, as far as readers are concerned."""
        with self.db.transaction() as conn:
            return event_log.table_version(conn, db_name, tbl_name)

    def current_event_id(self) -> int:
        with self.db.transaction() as conn:
            return event_log.current_event_id(conn)

    def count_events(self, after: int, db: str, cat: str | None = None, up_to: int | None = None) -> int:
        with self.db.transaction() as conn:
            return event_log.count(conn, after, db, cat, up_to)

    def oldest_event_id(self) -> int | None:
        with self.db.transaction() as conn:
            return event_log.oldest_event_id(conn)

    def add_events(self, events: Sequence[Event]) -> list[int]:
        """Appends events that are not part of a metadata write (fire_listener_event)."""
        with self.db.transaction() as conn:
            return event_log.append(conn, events)

    def clean_events(self, older_than_s: int) -> int:
        with self.db.transaction() as conn:
            return event_log.clean(conn, older_than_s)
