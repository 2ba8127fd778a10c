"""The SQL store the store-level tests start from: a new SQLite file with Hive's schema."""
from __future__ import annotations

from pathlib import Path

from hmsproxy.idl import hms
from hmsproxy.store.sql.database import Database, init_schema
from hmsproxy.store.sql.store import SqlStore


def sqlite_store(directory: Path, *databases: str) -> SqlStore:
    """A store on `directory`/m.db (warehouse file:/w) holding the named databases, at file:/w/<name>.db."""
    db = Database(f"sqlite:///{directory / 'm.db'}")
    init_schema(db, "file:/w")
    store = SqlStore(db)
    for name in databases:
        store.create_database(hms.Database(name=name, locationUri=f"file:/w/{name}.db", parameters={},
                                           catalogName="hive"))
    return store
