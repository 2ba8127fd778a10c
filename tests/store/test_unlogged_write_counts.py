"""The count behind noticing a writer that logs no events (store/cache/unlogged_writes.py), look by look, on a real
database of each backend: rows seen at one look must be announced by create events by the next look, which
lets Hive's plain listener (it logs a moment after its commit) be late, but not absent."""
from __future__ import annotations

import pytest
from sqlalchemy import insert, select, update

from hmsproxy.events import messages
from hmsproxy.idl import hms
from hmsproxy.metrics import Metrics
from hmsproxy.store.cache.unlogged_writes import UnloggedWrites
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database, init_schema
from hmsproxy.store.sql.sequences import reserve
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS, fresh_database

MDATABASE = "org.apache.hadoop.hive.metastore.model.MDatabase"


def _database_row(db: Database, name: str, with_its_event: bool = False) -> None:
    """A database as a Java HMS writes it: its id from SEQUENCE_TABLE; its event in the same transaction (as Hive's
    transactional listener and hmsproxy log), or none."""
    seq = s.SEQUENCE_TABLE
    with db.engine.begin() as conn:
        db_id = conn.execute(select(seq.c.NEXT_VAL).where(seq.c.SEQUENCE_NAME == MDATABASE)).scalar_one()
        conn.execute(update(seq).where(seq.c.SEQUENCE_NAME == MDATABASE).values(NEXT_VAL=seq.c.NEXT_VAL + 1))
        conn.execute(insert(s.DBS).values(DB_ID=db_id, NAME=name, DB_LOCATION_URI=f"file:/tmp/{name}",
                                          CTLG_NAME="hive"))
        if with_its_event:
            _log_creation(conn, name)


def _its_event(db: Database, name: str) -> None:
    """The event alone, as Hive's plain listener writes it after the commit."""
    with db.engine.begin() as conn:
        _log_creation(conn, name)


def _log_creation(conn, name: str) -> None:
    event = messages.create_database(hms.Database(name=name, parameters={}, catalogName="hive"))
    event_log.append(conn, [event], reserve(conn, "MNotificationLog", 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_must_be_announced_by_the_next_look(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        store = SqlStore(db)
        found: list[str] = []
        looks = UnloggedWrites(store, Metrics(), found.append)
        assert looks.check() is False  # where to start

        _database_row(db, "logged", with_its_event=True)
        _database_row(db, "late")  # a plain listener's event comes after the look
        assert looks.check() is False
        _its_event(db, "late")
        assert looks.check() is False
        assert looks.check() is False

        _database_row(db, "unlogged")
        assert looks.check() is False  # seen now; its event may still come
        assert looks.check() is True
        assert found == ["1 database(s)"]
        store.close()
