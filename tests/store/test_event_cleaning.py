"""The notification log's clean-up on every backend: events past the time to live go, oldest first, up to the first
one still young; an event stamped earlier than one before it (its writer's clock behind) is kept until those
before it expire, so a clean never walks the whole log while its oldest event is young, and writes append their
events while it deletes."""
import threading
import time

import pytest
from sqlalchemy import event, select, update

from hmsproxy.events.messages import Event
from hmsproxy.store.sql import schema as s
from support.databases import BACKENDS
from support.sql_stores import fresh_store


def _log_with_ages(store, ages_s: list[int]) -> list[int]:
    """Events stamped `ages_s` seconds ago, in log order; their ids."""
    ids = store.add_events([Event("CREATE_DATABASE", "hive", f"db{i}", None, "{}") for i in range(len(ages_s))])
    now = int(time.time())
    log = s.NOTIFICATION_LOG.c
    with store.db.transaction(write=True) as conn:
        for event_id, age in zip(ids, ages_s):
            conn.execute(update(s.NOTIFICATION_LOG).where(log.EVENT_ID == event_id).values(EVENT_TIME=now - age))
    return ids


def _kept(store) -> list[int]:
    with store.db.transaction() as conn:
        return list(conn.execute(select(s.NOTIFICATION_LOG.c.EVENT_ID).order_by(s.NOTIFICATION_LOG.c.EVENT_ID))
                    .scalars())


@pytest.mark.parametrize("backend", BACKENDS)
def test_expired_events_go_and_young_ones_stay(backend, tmp_path):
    with fresh_store(backend, tmp_path) as store:
        ids = _log_with_ages(store, [1000, 900, 10, 5])
        assert store.clean_events(100) == 2
        assert _kept(store) == ids[2:]
        assert store.clean_events(100) == 0
        assert _kept(store) == ids[2:]
        assert store.clean_events(1) == 2   # every event expired: the log empties
        assert _kept(store) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_event_stamped_early_waits_for_the_events_before_it(backend, tmp_path):
    with fresh_store(backend, tmp_path) as store:
        ids = _log_with_ages(store, [1000, 50, 1000, 0])
        assert store.clean_events(100) == 1
        assert _kept(store) == ids[1:]   # the third is past the time to live, but after a young one
        assert store.clean_events(20) == 2   # the second expired: both go
        assert _kept(store) == ids[3:]


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])   # SQLite: one writer at a time, whatever it writes
def test_writes_append_events_while_a_clean_deletes(backend, tmp_path):
    """The clean's transaction is held after its DELETE until an event is appended meanwhile, or for 20 s. Deleting
    by time alone, InnoDB locked every row it read and the end of the log, so every write of every instance waited
    for a clean (a minute apart, 0.6 s each with a 150 MB log)."""
    with fresh_store(backend, tmp_path) as store:
        _log_with_ages(store, [1000, 1000, 0])
        deleting, appended = threading.Event(), threading.Event()

        def hold(conn, cursor, statement, *args):
            if statement.startswith("DELETE FROM") and "NOTIFICATION_LOG" in statement:
                deleting.set()
                appended.wait(timeout=20)

        for engine in store.db.engines:
            event.listen(engine, "after_cursor_execute", hold)
        cleaned: list[int] = []
        cleaner = threading.Thread(target=lambda: cleaned.append(store.clean_events(100)))
        cleaner.start()
        try:
            assert deleting.wait(timeout=20)
            store.add_events([Event("CREATE_DATABASE", "hive", "meanwhile", None, "{}")])
            appended_while_held = cleaner.is_alive()
        finally:
            appended.set()
            cleaner.join()
            for engine in store.db.engines:
                event.remove(engine, "after_cursor_execute", hold)
        assert appended_while_held
        assert cleaned == [2] and len(_kept(store)) == 2
