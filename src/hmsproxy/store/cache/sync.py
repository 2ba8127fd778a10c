"""Applying notification-log events written by other instances to this instance's cache.

The rule is simple on purpose: an event about a table drops that table's cached entry; a later read goes to the
database and the loader reloads the table, both seeing at least the state the event describes. (A small table
may instead be read again at once, its entry replaced only when the read is in: the same state, reached sooner.)
The reload also settles the table's place in the name index (listings), from the database rather than the event,
because an event can be applied after a newer change to the same name. Transaction events only move write ids: a
commit marks the transaction's write ids valid in the cached entries, which is what makes those entries usable
again for snapshots that include the commit (the flow in DESIGN.md). A commit's writes are those its message
lists, else those the transaction's ALLOC_WRITE_ID events announced, else the store's record (an upstream HMS
cannot be asked). The log is totally ordered, so every table event of a transaction is applied before its commit.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from hmsproxy.events import messages as m
from hmsproxy.idl.fields import present
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.domain import NotificationEvent, TableWrite

TABLE_EVENTS = {m.CREATE_TABLE, m.DROP_TABLE, m.ADD_PARTITION, m.ALTER_PARTITION, m.DROP_PARTITION,
                m.UPDATE_TBL_COL_STAT, m.DELETE_TBL_COL_STAT, m.UPDATE_PART_COL_STAT, m.DELETE_PART_COL_STAT,
                m.INSERT}
ALLOCATIONS_KEPT = 100_000   # open transactions whose allocations are remembered


class AllocationsSeen:
    """The write ids each open transaction allocated, as the log's ALLOC_WRITE_ID events said: what its commit or
    abort changes, for commit events that do not list them (Hive's and hmsproxy's own) when the store cannot be
    asked either (an upstream HMS). Bounded: the oldest transactions are forgotten first, and a forgotten one is
    asked of the store."""

    def __init__(self, kept: int = ALLOCATIONS_KEPT) -> None:
        self._by_txn: OrderedDict[int, list[TableWrite]] = OrderedDict()
        self._kept = kept

    def add(self, db: str, table: str, txn_to_write_ids: Sequence[tuple[int, int]]) -> None:
        for txn_id, write_id in txn_to_write_ids:
            self._by_txn.setdefault(txn_id, []).append(TableWrite(db, table, write_id))
        while len(self._by_txn) > self._kept:
            self._by_txn.popitem(last=False)

    def ended(self, txn_id: int) -> list[TableWrite] | None:
        return self._by_txn.pop(txn_id, None)


def apply_event(store: CachedStore, event: NotificationEvent, seen: AllocationsSeen, refresh: bool = False) -> None:
    """Brings the cache up to the state after `event`. With `refresh`, a small table the event changed is read
    again at once rather than dropped for a reload (CachedStore.invalidate)."""
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
        old_key = (cat, present(before.dbName).lower(), present(before.tableName).lower())
        new_key = (cat, present(after.dbName).lower(), present(after.tableName).lower())
        if old_key != new_key:
            store.invalidate(old_key, gone=True)
        store.invalidate(new_key, table=after, refresh=refresh)
    elif kind in TABLE_EVENTS:
        key = (cat, db, (event.tableName or "").lower())
        if kind == m.CREATE_TABLE:
            store.invalidate(key, table=m.parse(kind, event.message, event.messageFormat).table)
        else:
            store.invalidate(key, gone=kind == m.DROP_TABLE, refresh=refresh)
    elif kind == m.ALLOC_WRITE_ID:
        parsed = m.parse(kind, event.message, event.messageFormat)
        table = (event.tableName or "").lower()
        store.write_ids_changed(("hive", db, table), [w for _, w in parsed.txn_to_write_ids], "open")
        seen.add(db, table, parsed.txn_to_write_ids)
    elif kind in (m.COMMIT_TXN, m.ABORT_TXN):
        parsed = m.parse(kind, event.message, event.messageFormat)
        outcome = "committed" if kind == m.COMMIT_TXN else "aborted"
        listed = [TableWrite(d, t, w) for d, t, w in parsed.write_ids] if kind == m.COMMIT_TXN else []
        allocated = seen.ended(parsed.txn_id)
        for write in listed or allocated or store.delegate.txn_writes(parsed.txn_id):
            store.write_ids_changed(("hive", write.db.lower(), write.table.lower()), [write.write_id], outcome)
