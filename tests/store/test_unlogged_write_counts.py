"""The count behind noticing a writer that logs no events (store/cache/unlogged_writes.py), look by look, on a real
database of each backend: rows seen at one look must be announced by create events by the next look, which
lets Hive's plain listener (it logs a moment after its commit) be late, but not absent."""
from __future__ import annotations

import pytest
from sqlalchemy import func, insert, select, update

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.unlogged_writes import UnloggedWrites
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.sequences import reserve
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS, fresh_database
from support.sql_stores import add_table_t

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


def _add_logged(store: SqlStore, first: int, count: int) -> None:
    """Partitions of d.t added as hmsproxy adds them: their ADD_PARTITION event in the write's transaction."""
    table = store.get_table("hive", "d", "t")
    parts = [hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=table.sd, parameters={}, createTime=1,
                           lastAccessTime=0) for i in range(first, first + count)]
    store.add_partitions("hive", "d", "t", parts, journal=Journal.of(messages.add_partition(table, parts)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_own_partition_events_are_counted_as_they_commit_and_only_other_writers_messages_are_read(backend, tmp_path):
    """An ADD_PARTITION message is ~1 KB per partition: a look reads only other writers'. To tell, this
    instance's own message is rewritten to announce nothing once it committed: read back, its partitions would
    look unannounced."""
    with fresh_database(backend, tmp_path) as url:
        own_db, other_db = Database(url), Database(url)
        init_schema(own_db, f"file:{tmp_path}")
        own, other = SqlStore(own_db), SqlStore(other_db)
        found: list[str] = []
        looks = UnloggedWrites(own, Metrics(), found.append)
        own_db.event_watchers.append(looks)
        add_table_t(own, f"file:{tmp_path}", hms.StorageDescriptor(
            cols=[hms.FieldSchema(name="c", type="string")], location=f"file:{tmp_path}/d.db/t", inputFormat="i",
            outputFormat="o", serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={}))
        assert looks.check() is False  # where to start

        _add_logged(own, 0, 5)
        _add_logged(other, 5, 3)
        log = s.NOTIFICATION_LOG
        with own_db.engine.begin() as conn:
            own_event = conn.execute(select(func.min(log.c.EVENT_ID)).where(
                log.c.EVENT_TYPE == messages.ADD_PARTITION)).scalar_one()
            table = own.get_table("hive", "d", "t")
            conn.execute(update(log).where(log.c.EVENT_ID == own_event).values(
                MESSAGE=messages.add_partition(table, []).message))
        assert looks.check() is False
        assert looks.check() is False   # the 8 rows seen at the last look: 5 counted at commit, 3 read
        assert found == []

        _add_logged(other, 8, 2)
        with own_db.engine.begin() as conn:   # another writer's message is read: announcing nothing, it is blamed
            conn.execute(update(log).where(log.c.EVENT_ID == own_event + 2).values(
                MESSAGE=messages.add_partition(table, []).message))
        assert looks.check() is False
        assert looks.check() is True
        assert found == ["2 partition(s)"]
        own.close()
        other.close()
