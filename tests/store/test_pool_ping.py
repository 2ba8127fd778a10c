"""A pooled connection is pinged at checkout only when it has been idle (engines.PING_IDLE_S): one the database
dropped while it was idle is replaced before a call uses it, and a connection in steady use is not pinged at
all, which saves a round trip per transaction. MariaDB and PostgreSQL; the database ends the session itself."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy import exc as sa_exc

from hmsproxy.store.sql.database import Database
from support.databases import fresh_database

SESSION_ID = {"mariadb": "SELECT CONNECTION_ID()", "postgres": "SELECT pg_backend_pid()"}
END_SESSION = {"mariadb": "KILL {id}", "postgres": "SELECT pg_terminate_backend({id})"}


@pytest.fixture(params=["mariadb", "postgres"])
def backend_url(request, tmp_path) -> Iterator[tuple[str, str]]:
    with fresh_database(request.param, tmp_path) as url:
        yield request.param, url


def _session(db: Database, backend: str) -> int:
    """The database's id of the session a read transaction ran in."""
    with db.transaction() as conn:
        return int(conn.execute(text(SESSION_ID[backend])).scalar_one())


def _end_session(url: str, backend: str, session: int) -> None:
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(END_SESSION[backend].format(id=session)))
    finally:
        admin.dispose()


def test_a_connection_the_database_dropped_while_idle_is_replaced_before_use(backend_url):
    backend, url = backend_url
    db = Database(url, pool_size=1, ping_idle_s=0.0)   # every reuse counts as idle
    try:
        first = _session(db, backend)
        _end_session(url, backend, first)
        assert _session(db, backend) != first   # the call ran, on a new connection
    finally:
        db.dispose()


def test_a_connection_in_steady_use_is_not_pinged(backend_url):
    """With pool_pre_ping every checkout pinged, and this call would have succeeded: here it meets the dropped
    connection, fails once, and the pool replaces its connections."""
    backend, url = backend_url
    db = Database(url, pool_size=1, ping_idle_s=3600.0)
    try:
        first = _session(db, backend)
        _end_session(url, backend, first)
        with pytest.raises(sa_exc.DBAPIError) as failure:
            _session(db, backend)
        assert failure.value.connection_invalidated
        assert _session(db, backend) != first
    finally:
        db.dispose()
