"""The notification log's SQL: events appended in the writing transaction itself (events/journal.py says
which), and read back in order.

Event ids come from the single NOTIFICATION_SEQUENCE row, bumped in one statement that keeps it locked until
the commit: gap-free and unique across every instance writing to the database (writers queue on that row
only for the end of their transaction).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import Connection, and_, delete, func, insert, select, true
from sqlalchemy import exc as sa_exc

from hmsproxy.events.journal import Held
from hmsproxy.events.messages import Event
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.layout import FULL, Layout
from hmsproxy.store.sql.row_inserts import Inserts, insert_numbered_mysql, insert_rows
from hmsproxy.store.sql.sequences import next_value


class StalePlan(Exception):
    """What a write was planned on (remembered, or read without a lock) had changed by the time its events were
    appended: nothing was written, and the write is to be planned again from what the database holds."""


def append(conn: Connection, events: Sequence[Event], first_row: int, layout: Layout = FULL,
           rows_too: Inserts = (), commit: bool = False, held: Held | None = None,
           while_committing: Callable[[], None] | None = None) -> list[int]:
    """Appends events inside the caller's transaction, their rows numbered (NL_ID) from `first_row`, reserved
    from the MNotificationLog counter as Hive's listener numbers them; returns their ids. Before Hive 3 the log
    has no catalog. `rows_too`, rows of the same write, are inserted with them (on MySQL in the same query).
    `commit`: the caller's transaction ends here; on MySQL the same query commits it, and `while_committing` is
    done while it runs. `held`: what the write assumed without reading it; where it fails, StalePlan (checked in
    the same query)."""
    if held is not None and (not events or conn.dialect.name != "mysql"):
        raise ValueError("a write's assumptions are held in the MySQL query that appends its events")
    if not events:
        insert_rows(conn, rows_too)
        return []
    now = int(time.time())
    rows = [layout.values(s.NOTIFICATION_LOG, {
        "NL_ID": first_row + i, "EVENT_ID": i, "EVENT_TIME": now, "EVENT_TYPE": e.event_type,  # EVENT_ID: offset
        "CAT_NAME": e.cat_name, "DB_NAME": e.db_name, "TBL_NAME": e.table_name, "MESSAGE": e.message,
        "MESSAGE_FORMAT": e.message_format}) for i, e in enumerate(events)]
    counter = s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID   # its row stays locked until the commit
    if conn.dialect.name == "mysql":   # the counter and the rows in one round trip
        try:
            first = insert_numbered_mysql(conn, counter, s.NOTIFICATION_LOG, rows, "EVENT_ID", rows_too, commit,
                                          None if held is None else held.sql, while_committing)
        except sa_exc.IntegrityError:   # numbered NULL: the counter lacks its row (as next_value says it), or
            counted, holding = conn.execute(select(    # an assumption failed
                select(func.count()).select_from(s.NOTIFICATION_SEQUENCE).scalar_subquery(),
                true() if held is None else held.condition)).one()
            if counted == 0:
                raise LookupError("NOTIFICATION_SEQUENCE has no row") from None
            if not holding:
                raise StalePlan() from None
            raise
    else:
        first = next_value(conn, counter, len(events))
        numbered = [{**row, "EVENT_ID": first + cast(int, row["EVENT_ID"])} for row in rows]   # EVENT_ID: the offset
        conn.execute(insert(s.NOTIFICATION_LOG), numbered)
        insert_rows(conn, rows_too)
    return [first + i for i in range(len(events))]


def current_event_id(conn: Connection) -> int:
    """The id of the newest event (0 when there is none yet)."""
    next_id: int = conn.execute(select(s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID)).scalar_one()
    return next_id - 1


def read(conn: Connection, after: int, limit: int | None = None, *, skip_types: Sequence[str] = (),
         cat: str | None = None, db: str | None = None, tables: Sequence[str] | None = None) -> list[Any]:
    """Events with ids above `after`, oldest first."""
    log = s.NOTIFICATION_LOG
    query = select(log).where(log.c.EVENT_ID > after).order_by(log.c.EVENT_ID)
    if skip_types:
        query = query.where(log.c.EVENT_TYPE.not_in(list(skip_types)))
    if cat:
        query = query.where(log.c.CAT_NAME == cat)
    if db:
        query = query.where(log.c.DB_NAME == db)
    if tables:
        query = query.where(log.c.TBL_NAME.in_(list(tables)))
    if limit is not None and limit > 0:
        query = query.limit(limit)
    return list(conn.execute(query).all())


def table_version(conn: Connection, db: str, table: str) -> int:
    log = s.NOTIFICATION_LOG
    newest = select(func.max(log.c.EVENT_ID)).where(log.c.DB_NAME == db, log.c.TBL_NAME == table)
    return conn.execute(newest).scalar() or 0


def table_versions(conn: Connection, databases: Sequence[str]) -> dict[tuple[str, str], int]:
    """table_version of every table of the databases that has events, in one query; keyed by lower-case
    names (names are stored lower-case; MariaDB compares them without case)."""
    log = s.NOTIFICATION_LOG
    newest = select(log.c.DB_NAME, log.c.TBL_NAME, func.max(log.c.EVENT_ID)).where(
        log.c.DB_NAME.in_(databases), log.c.TBL_NAME.is_not(None)).group_by(log.c.DB_NAME, log.c.TBL_NAME)
    versions: dict[tuple[str, str], int] = {}
    for db, table, version in conn.execute(newest):
        key = (db.lower(), table.lower())
        versions[key] = max(versions.get(key, 0), version)
    return versions


def count(conn: Connection, after: int, db: str, cat: str | None = None, up_to: int | None = None) -> int:
    log = s.NOTIFICATION_LOG
    query = select(func.count()).select_from(log).where(log.c.EVENT_ID > after, log.c.DB_NAME == db)
    if cat:
        query = query.where(log.c.CAT_NAME == cat)
    if up_to is not None and up_to > 0:
        query = query.where(log.c.EVENT_ID <= up_to)
    return conn.execute(query).scalar_one()


def oldest_event_id(conn: Connection) -> int | None:
    return conn.execute(select(func.min(s.NOTIFICATION_LOG.c.EVENT_ID))).scalar()


def clean(conn: Connection, older_than_s: int) -> int:
    """Deletes the events older than the time to live that come before the first younger one in the log; returns
    how many. No index holds the events' times: deleting by time alone read the whole log, every minute on every
    instance (150 MB for the 2,000 events that made a 100k-partition metastore, during each start's prewarm too).
    Here the log is walked by id from its oldest event to its first young one, and what is deleted lies before it:
    while nothing has expired, one event is read. An event stamped earlier than one before it (its writer's clock
    behind) waits until those before it expire too: events are kept longer, never shorter."""
    log = s.NOTIFICATION_LOG
    cutoff = int(time.time()) - older_than_s
    first_young = conn.execute(select(log.c.EVENT_ID).where(log.c.EVENT_TIME >= cutoff)
                               .order_by(log.c.EVENT_ID).limit(1)).scalar()
    expired = log.c.EVENT_TIME < cutoff
    if first_young is not None:
        expired = and_(log.c.EVENT_ID < first_young, expired)
    return conn.execute(delete(log).where(expired)).rowcount
