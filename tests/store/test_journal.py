"""A write's journal (events/journal.py) through real SQLite transactions: its events are appended exactly when
the transaction commits, once each even when a conflict makes the transaction run again, and after the commit
the journal holds the ids the log gave them."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine, select, text

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'metastore.db'}")
    init_schema(database, str(tmp_path / "warehouse"))
    yield database
    database.dispose()


def _database(name: str) -> hms.Database:
    return hms.Database(name=name, parameters={}, catalogName="hive")


def _logged(db: Database) -> list[tuple[int, str, str]]:
    log = s.NOTIFICATION_LOG
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(log.c.EVENT_ID, log.c.EVENT_TYPE, log.c.DB_NAME)
                                                .order_by(log.c.EVENT_ID))]


def test_a_committed_transaction_appends_the_events_handed_in_and_those_added_while_writing(db):
    journal = Journal.of(messages.create_database(_database("a")))
    with db.transaction(write=True, journal=journal):
        journal.add(messages.create_database(_database("b")))
    logged = _logged(db)
    assert [(kind, name) for _, kind, name in logged] == [(messages.CREATE_DATABASE, "a"),
                                                          (messages.CREATE_DATABASE, "b")]
    assert journal.event_ids == [event_id for event_id, _, _ in logged]
    assert journal.version == logged[-1][0]


def test_a_failed_transaction_appends_nothing_and_leaves_the_journal_as_handed_in(db):
    handed_in = messages.create_database(_database("a"))
    journal = Journal.of(handed_in)
    with pytest.raises(RuntimeError), db.transaction(write=True, journal=journal):
        journal.add(messages.create_database(_database("b")))
        raise RuntimeError("the write failed")
    assert _logged(db) == []
    assert journal.events == [handed_in] and journal.event_ids == [] and journal.version == 0


def test_a_transaction_repeated_after_a_conflict_appends_each_event_once(db):
    """The first attempt meets a real "database is locked" from a second connection and is repeated by
    retrying_conflicts; the event it added while writing must not be appended twice."""
    impatient = create_engine(db.url, connect_args={"timeout": 0})
    journal = Journal.of(messages.create_database(_database("a")))
    attempts = []

    def write() -> None:
        with db.transaction(write=True, journal=journal):
            journal.add(messages.create_database(_database("b")))
            attempts.append(len(journal.events))
            if len(attempts) == 1:  # this transaction holds the write lock: the other connection fails
                with impatient.begin() as conn:
                    conn.execute(text("UPDATE NOTIFICATION_SEQUENCE SET NEXT_EVENT_ID = NEXT_EVENT_ID"))

    db.retrying_conflicts(write, "test_write")
    impatient.dispose()
    assert attempts == [2, 2]   # the repeat saw the journal as handed in, plus its own event
    assert [(kind, name) for _, kind, name in _logged(db)] == [(messages.CREATE_DATABASE, "a"),
                                                               (messages.CREATE_DATABASE, "b")]
    assert len(journal.event_ids) == 2


def test_only_a_write_transaction_takes_a_journal(db):
    with pytest.raises(ValueError), db.transaction(journal=Journal()):
        pass
