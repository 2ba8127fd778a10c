"""Reading the notification log (the writes append to it themselves: store/sql/event_log.py)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from sqlalchemy import func, select

from hmsproxy.events import messages as m
from hmsproxy.events.messages import Event
from hmsproxy.idl import hms
from hmsproxy.store.domain import NotificationEvent
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database

CREATED_ROWS = {"database": s.DBS.c.DB_ID, "table": s.TBLS.c.TBL_ID, "partition": s.PARTITIONS.c.PART_ID,
                "function": s.FUNCS.c.FUNC_ID}
READ_BATCH = 500   # ADD_PARTITION messages read per statement
CREATE_EVENTS = {m.CREATE_DATABASE: "database", m.CREATE_TABLE: "table", m.ADD_PARTITION: "partition",
                 m.CREATE_FUNCTION: "function"}


class CreationMark(NamedTuple):
    """Where a look at created rows stopped: the newest event id and the highest id of each kind of row."""
    event_id: int
    highest: dict[str, int]


class NotificationStore:
    db: Database

    def get_events(self, after: int, limit: int | None = None, *, skip_types: Sequence[str] = (),
                   cat: str | None = None, db: str | None = None,
                   tables: Sequence[str] | None = None) -> list[NotificationEvent]:
        with self.db.transaction() as conn:
            rows = event_log.read(conn, after, limit, skip_types=skip_types, cat=cat, db=db, tables=tables)
        return [hms.NotificationEvent(eventId=r.EVENT_ID, eventTime=r.EVENT_TIME, eventType=r.EVENT_TYPE,
                                      dbName=r.DB_NAME, tableName=r.TBL_NAME, message=r.MESSAGE,
                                      messageFormat=r.MESSAGE_FORMAT, catName=r.CAT_NAME) for r in rows]

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
            return self.db.append_events(conn, events)

    def clean_events(self, older_than_s: int) -> int:
        with self.db.transaction() as conn:
            return event_log.clean(conn, older_than_s)

    def creations_since(self, mark: CreationMark | None, known_adds: Mapping[int, int]
                        ) -> tuple[CreationMark, dict[str, tuple[int, int]]]:
        """In one snapshot: kind -> (rows created since `mark`, rows the create events since `mark` announce),
        and the new mark. A writer that appends its event in the transaction of its rows (hmsproxy, Hive's
        DbNotificationListener) never shows more rows than events announce. `known_adds` (event id -> partitions)
        counts ADD_PARTITION events without reading their messages."""
        with self.db.transaction() as conn:
            event_id = event_log.current_event_id(conn)
            highest, created = {}, {}
            for kind, ids in CREATED_ROWS.items():
                after = mark.highest[kind] if mark else None
                rows = select(func.count(), func.max(ids))
                count, top = conn.execute(rows.where(ids > after) if after is not None else rows).one()
                highest[kind] = top if top is not None else (after or 0)
                created[kind] = count if mark else 0
            announced = dict.fromkeys(CREATED_ROWS, 0)
            if mark is not None and event_id > mark.event_id:
                log = s.NOTIFICATION_LOG
                to_read = []
                for number, kind in conn.execute(
                        select(log.c.EVENT_ID, log.c.EVENT_TYPE)
                        .where(log.c.EVENT_ID > mark.event_id, log.c.EVENT_ID <= event_id,
                               log.c.EVENT_TYPE.in_(CREATE_EVENTS))):
                    if kind != m.ADD_PARTITION:
                        announced[CREATE_EVENTS[kind]] += 1
                    elif number in known_adds:
                        announced["partition"] += known_adds[number]
                    else:
                        to_read.append(number)
                for start in range(0, len(to_read), READ_BATCH):
                    for message, message_format in conn.execute(
                            select(log.c.MESSAGE, log.c.MESSAGE_FORMAT)
                            .where(log.c.EVENT_ID.in_(to_read[start:start + READ_BATCH]))):
                        announced["partition"] += _announced_rows(message, message_format)
        return CreationMark(event_id, highest), {kind: (created[kind], announced[kind]) for kind in CREATED_ROWS}


def _announced_rows(message: str, message_format: str | None) -> int:
    """The partitions an ADD_PARTITION message announces."""
    try:
        return m.parse(m.ADD_PARTITION, message, message_format).partition_count
    except ValueError:  # unreadable: as many as may be, so that nothing is blamed on it
        return 1 << 62
