"""Applying notification-log events written by other instances to this instance's cache.

The rule is simple on purpose: an event about a table drops that table's cached entry; a later read goes to the
database and the loader reloads the table, both seeing at least the state the event describes. The reload also
settles the table's place in the name index (listings), from the database rather than the event, because an event
can be applied after a newer change to the same name. Transaction events only move write ids: a commit marks the
transaction's write ids valid in the cached entries, which is what makes those entries usable again for snapshots
that include the commit (the flow in DESIGN.md). The log is totally ordered, so every table event of a transaction
is applied before its commit.
"""
from __future__ import annotations

from hmsproxy.events import messages as m
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.domain import NotificationEvent

TABLE_EVENTS = {m.CREATE_TABLE, m.DROP_TABLE, m.ADD_PARTITION, m.ALTER_PARTITION, m.DROP_PARTITION,
                m.UPDATE_TBL_COL_STAT, m.DELETE_TBL_COL_STAT, m.UPDATE_PART_COL_STAT, m.DELETE_PART_COL_STAT,
                m.INSERT}


def apply_event(store: CachedStore, event: NotificationEvent) -> None:
    """Brings the cache up to the state after `event`."""
    kind = event.eventType
    cat = (event.catName or "hive").lower()
    db = (event.dbName or "").lower()
    if kind in (m.CREATE_DATABASE, m.ALTER_DATABASE):
        store.refresh_database(cat, db)
    elif kind == m.DROP_DATABASE:
        store.forget_database(cat, db)
    elif kind in (m.CREATE_FUNCTION, m.DROP_FUNCTION):
        store.refresh_function(cat, db, m.parse(kind, event.message, event.messageFormat).function_name.lower())
    elif kind == m.ALTER_TABLE:
        parsed = m.parse(kind, event.message, event.messageFormat)
        before, after = parsed.table_before, parsed.table_after
        store.invalidate((cat, before.dbName.lower(), before.tableName.lower()), gone=True)
        store.invalidate((cat, after.dbName.lower(), after.tableName.lower()), table=after)
    elif kind in TABLE_EVENTS:
        key = (cat, db, (event.tableName or "").lower())
        if kind == m.CREATE_TABLE:
            store.invalidate(key, table=m.parse(kind, event.message, event.messageFormat).table)
        else:
            store.invalidate(key, gone=kind == m.DROP_TABLE)
    elif kind == m.ALLOC_WRITE_ID:
        parsed = m.parse(kind, event.message, event.messageFormat)
        store.write_ids_changed(("hive", db, (event.tableName or "").lower()),
                                [w for _, w in parsed.txn_to_write_ids], "open")
    elif kind in (m.COMMIT_TXN, m.ABORT_TXN):
        txn_id = m.parse(kind, event.message, event.messageFormat).txn_id
        outcome = "committed" if kind == m.COMMIT_TXN else "aborted"
        for write in store.delegate.txn_writes(txn_id):
            store.write_ids_changed(("hive", write.db, write.table), [write.write_id], outcome)
