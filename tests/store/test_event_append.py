"""The notification log's rows on every backend: numbered on from NOTIFICATION_SEQUENCE, which moves past them
(on MySQL and MariaDB the counter, the rows and the commit go in one query), whatever their size, and none
written when the counter has no row."""
import itertools

import pytest
from sqlalchemy import delete, func, insert, select

from hmsproxy.events.journal import Journal
from hmsproxy.events.messages import Event
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.hive_only_tables import MASTER_KEYS
from hmsproxy.store.sql.row_inserts import MAX_QUERY_CHARS
from support.databases import BACKENDS
from support.sql_stores import fresh_store
from support.statements import driver_queries, statements_sent

_KEY_IDS = itertools.count(1)


def _event(name: str, message: str = "{}") -> Event:
    return Event("CREATE_DATABASE", "hive", name, None, message)


def _write(store, events: list[Event]) -> list[int]:
    """One write transaction that appends `events` (and adds a row of its own); the ids they were given."""
    journal = Journal(list(events))
    with store.db.transaction(write=True, journal=journal) as conn:
        conn.execute(insert(MASTER_KEYS).values(KEY_ID=next(_KEY_IDS), MASTER_KEY="k"))
    return journal.event_ids


def _log(store) -> list[tuple[int, str | None, str]]:
    log = s.NOTIFICATION_LOG.c
    with store.db.transaction() as conn:
        return [tuple(row) for row in conn.execute(select(log.EVENT_ID, log.DB_NAME, log.MESSAGE)
                                                   .order_by(log.EVENT_ID))]


def _next_event_id(store) -> int:
    with store.db.transaction() as conn:
        return conn.execute(select(s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID)).scalar_one()


@pytest.mark.parametrize("backend", BACKENDS)
def test_events_are_numbered_on_from_the_counter_which_moves_past_them(backend, tmp_path):
    with fresh_store(backend, tmp_path) as store:
        start = _next_event_id(store)
        sent, ids = statements_sent(store, lambda: [_write(store, [_event(f"d{n}_{i}") for i in range(n)])
                                                    for n in (1, 3, 2)])
        assert ids == [[start], [start + 1, start + 2, start + 3], [start + 4, start + 5]]
        assert _log(store)[-6:] == [(start + i, name, "{}") for i, name in enumerate(
            ["d1_0", "d3_0", "d3_1", "d3_2", "d2_0", "d2_1"])]
        assert _next_event_id(store) == start + 6
        if backend == "mariadb":
            logged = [statement for statement in sent if "NOTIFICATION_LOG" in statement]
            assert len(logged) == 3 and all(statement.startswith("UPDATE `NOTIFICATION_SEQUENCE`")
                                            for statement in logged)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_event_larger_than_a_query_is_written_whole_among_others(backend, tmp_path):
    big = '{"x":"' + "\u00e9'\\" * (MAX_QUERY_CHARS // 2) + '"}'
    with fresh_store(backend, tmp_path) as store:
        start = _next_event_id(store)
        ids = _write(store, [_event("small"), _event("big", big), _event("after")])
        assert ids == [start, start + 1, start + 2]
        assert _log(store)[-3:] == [(start, "small", "{}"), (start + 1, "big", big), (start + 2, "after", "{}")]
        assert _next_event_id(store) == start + 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_counter_without_its_row_fails_the_write_and_leaves_nothing(backend, tmp_path):
    with fresh_store(backend, tmp_path) as store:
        before = _log(store)
        with store.db.transaction(write=True) as conn:
            conn.execute(delete(s.NOTIFICATION_SEQUENCE))
        with pytest.raises(LookupError):
            _write(store, [_event("lost"), _event("too")])
        assert _log(store) == before
        with store.db.transaction() as conn:
            assert conn.execute(select(func.count()).select_from(MASTER_KEYS)).scalar_one() == 0


def test_on_mariadb_the_query_that_appends_the_events_commits_the_write(tmp_path):
    """One round trip fewer per write: no COMMIT of its own after the events' query, and the write is committed
    (another connection reads it)."""
    with fresh_store("mariadb", tmp_path) as store:
        _write(store, [_event("first")])   # connects, and reserves a block of log row ids (a transaction of its own)
        start = _next_event_id(store)
        sent, ids = driver_queries(lambda: _write(store, [_event("one"), _event("two")]))
        assert ids == [start, start + 1]
        assert len(sent) == 2 and sent[0].startswith("INSERT INTO `MASTER_KEYS`")
        assert sent[1].startswith("UPDATE `NOTIFICATION_SEQUENCE`") and sent[1].endswith(";COMMIT")
        assert _log(store)[-2:] == [(start, "one", "{}"), (start + 1, "two", "{}")]
        assert _next_event_id(store) == start + 2
        sent, _ = driver_queries(lambda: _write(store, []))   # a write without events commits as any other
        assert sent[-1] == "COMMIT"
