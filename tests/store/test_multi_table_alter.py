"""alter_tables: several tables altered in one database transaction, all or none (the REST catalog's multi-table
commit), on every backend, with the notification events of the tables that changed and nothing else."""
from __future__ import annotations

import copy

import pytest

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.store.domain import TableChange
from support.builders import database, table
from support.databases import BACKENDS
from support.sql_stores import fresh_store

KEY = "metadata_location"


def _pointed(store, name: str, value: str) -> hms.Table:
    created = table(hms, "lake", name)
    created.parameters = {KEY: value}
    created.catName = "hive"
    store.create_table(created)
    return store.get_table("hive", "lake", name)


def _moved(current: hms.Table, value: str) -> hms.Table:
    moved = copy.deepcopy(current)
    moved.parameters = {**(moved.parameters or {}), KEY: value}
    return moved


@pytest.mark.parametrize("backend", BACKENDS)
def test_all_tables_change_together_or_none_does(backend, tmp_path):
    with fresh_store(backend, tmp_path) as store:
        lake = database(hms, "lake", f"file:{tmp_path}/lake.db")
        lake.catalogName = "hive"
        store.create_database(lake)
        a, b = _pointed(store, "a", "a1"), _pointed(store, "b", "b1")
        before = store.current_event_id()

        changes = [TableChange("lake", "a", _moved(a, "a2"), (KEY, "a1")),
                   TableChange("lake", "b", _moved(b, "b2"), (KEY, "b1"))]
        store.alter_tables("hive", changes, Journal.of(*(messages.alter_table(t, c.new_table)
                                                         for t, c in zip((a, b), changes))))
        assert [store.get_table("hive", "lake", n).parameters[KEY] for n in ("a", "b")] == ["a2", "b2"]
        events = store.get_events(before)
        assert sorted((e.eventType, e.tableName) for e in events) == [("ALTER_TABLE", "a"), ("ALTER_TABLE", "b")]

        a, b = store.get_table("hive", "lake", "a"), store.get_table("hive", "lake", "b")
        after_first = store.current_event_id()
        stale = [TableChange("lake", "a", _moved(a, "a3"), (KEY, "a2")),    # holds
                 TableChange("lake", "b", _moved(b, "b3"), (KEY, "b1"))]    # another writer moved b since
        with pytest.raises(hms.MetaException, match="The table has been modified"):
            store.alter_tables("hive", stale, Journal.of(*(messages.alter_table(t, c.new_table)
                                                           for t, c in zip((a, b), stale))))
        assert [store.get_table("hive", "lake", n).parameters[KEY] for n in ("a", "b")] == ["a2", "b2"]
        assert store.get_events(after_first) == []
