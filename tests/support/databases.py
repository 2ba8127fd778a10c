"""Fresh, empty metastore databases on each backend for a test, dropped afterwards.

MariaDB (127.0.0.1:3306, root) and PostgreSQL (127.0.0.1:5432, trust auth) are used when reachable;
a test that needs one that is absent is skipped with the reason, or fails where the run requires that backend
(support.required)."""
from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import create_engine, text

from support.required import missing

MARIADB_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/test"
POSTGRES_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
BACKENDS = ("sqlite", "mariadb", "postgres")


def _reachable(url: str) -> str | None:
    try:
        engine = create_engine(url)
        with engine.connect():
            pass
        engine.dispose()
        return None
    except Exception as exc:  # any failure means "not usable here"
        return f"{type(exc).__name__}: {exc}".splitlines()[0]


def postgres_reachable() -> bool:
    return _reachable(POSTGRES_ADMIN) is None


@contextlib.contextmanager
def fresh_database(backend: str, workdir: Path) -> Iterator[str]:
    """Yields the URL of a new empty database on the backend and drops it afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{workdir / f'metastore-{uuid.uuid4().hex[:8]}.db'}"
        return
    admin = MARIADB_ADMIN if backend == "mariadb" else POSTGRES_ADMIN
    problem = _reachable(admin)
    if problem:
        missing(backend, f"{backend} server not reachable at {admin}: {problem}")
    name = f"hmsproxy_test_{uuid.uuid4().hex[:10]}"
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        if backend == "mariadb":
            yield f"mysql+pymysql://root@127.0.0.1:3306/{name}"
        else:
            yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with engine.connect() as conn:
            if backend == "postgres":
                conn.execute(text(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"))
            conn.execute(text(f"DROP DATABASE {name}"))
        engine.dispose()
