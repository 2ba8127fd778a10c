"""Several instances opening a new SQLite file at one moment (a scaled deployment starting together): each
connection switches the file to write-ahead logging, and none may fail doing so. Each opener has its own
Database (engine and connection), as a process of its own would, started together from threads."""
from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import text

from hmsproxy.store.sql.database import Database

OPENERS = 6
FILES = 200


def _journal_mode(db: Database, barrier: threading.Barrier, modes: list[str]) -> None:
    barrier.wait()
    try:
        with db.engine.connect() as conn:
            modes.append(conn.execute(text("PRAGMA journal_mode")).scalar())
    except Exception as exc:   # reported to the test, which names it
        modes.append(repr(exc))


def test_instances_opening_a_new_file_at_once_all_switch_it_to_wal(tmp_path: Path):
    for index in range(FILES):
        dbs = [Database(f"sqlite:///{tmp_path / f'new-{index}.db'}") for _ in range(OPENERS)]
        barrier, modes = threading.Barrier(OPENERS), []
        openers = [threading.Thread(target=_journal_mode, args=(db, barrier, modes)) for db in dbs]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(timeout=60)
        for db in dbs:
            db.engine.dispose()
        assert modes == ["wal"] * OPENERS, f"file {index}: {modes}"
