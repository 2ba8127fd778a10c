"""Transactions in the cache: calls pass through to the database; allocations, commits and aborts keep
the write-id lists of cached transactional tables current.

A granted lock is a synchronisation point (what Iceberg's commit protocol relies on: lock, read the table
again, compare, alter, unlock). Before this instance reports a lock ACQUIRED, its cache reflects every
change committed before the grant, through any instance: it applies the notification log up to the
log's head as read in the granting transaction. Should that fail (the log unreachable, or the poller not
started yet), the cached entries of what the lock covers are dropped instead, so that reads under the lock
go to the database.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from hmsproxy.events.journal import Journal
from hmsproxy.hive.write_ids import ValidTxnList, ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.store.cache.shared_cache import SharedCache, TableEntry, TableKey
from hmsproxy.store.domain import LockOutcome, ShowLocksResponseElement, TableWrite, TxnInfo
from hmsproxy.store.rawstore import RawStore


class CachedTransactions:
    """Mixed into CachedStore, whose parts it uses:"""

    delegate: RawStore
    cache: SharedCache
    catch_up: Callable[[int], bool]
    _update_entry: Callable[[TableKey, Callable[[TableEntry], TableEntry], int], None]
    invalidate: Callable[[TableKey], None]

    def open_txns(self, count: int, user: str, host: str, agent: str | None, txn_type: int | None) -> list[int]:
        return self.delegate.open_txns(count, user, host, agent, txn_type)

    def get_open_txns(self) -> tuple[int, list[TxnInfo]]:
        return self.delegate.get_open_txns()

    def current_txn_list(self) -> ValidTxnList:
        return self.delegate.current_txn_list()

    def txn_writes(self, txn_id: int) -> list[TableWrite]:
        return self.delegate.txn_writes(txn_id)

    def valid_write_ids(self, full_names: Sequence[str], snapshot: ValidTxnList | None) -> list[ValidWriteIdList]:
        return self.delegate.valid_write_ids(full_names, snapshot)

    def allocate_write_ids(self, db_name: str, table: str, txn_ids: Sequence[int],
                           journal: Journal | None = None) -> list[tuple[int, int]]:
        key = ("hive", db_name, table)
        journal = Journal() if journal is None else journal   # its version stamps the entry
        with self.cache.writing(key):
            allocated = self.delegate.allocate_write_ids(db_name, table, txn_ids, journal)
            self._update_write_ids(key, [w for _, w in allocated], "open", journal.version)
        return allocated

    def commit_txn(self, txn_id: int) -> list[TableWrite]:
        try:
            writes = self.delegate.commit_txn(txn_id)
        except hms.TxnAbortedException:  # a write conflict aborted it (or it was aborted before)
            self._apply_txn_end(self.delegate.txn_writes(txn_id), "aborted")
            raise
        self._apply_txn_end(writes, "committed")
        return writes

    def abort_txns(self, txn_ids: Sequence[int], skip_unknown: bool = False) -> list[TableWrite]:
        writes = self.delegate.abort_txns(txn_ids, skip_unknown)
        self._apply_txn_end(writes, "aborted")
        return writes

    def _apply_txn_end(self, writes: Sequence[TableWrite], outcome: str) -> None:
        by_table: dict[TableKey, list[int]] = {}
        for write in writes:
            by_table.setdefault(("hive", write.db, write.table), []).append(write.write_id)
        for key, write_ids in by_table.items():
            self.write_ids_changed(key, write_ids, outcome)

    def write_ids_changed(self, key: TableKey, write_ids: Sequence[int], outcome: str, version: int = 0) -> None:
        """Another instance allocated, committed or aborted these write ids of the table (in the event with id
        `version` when that event is about the table: an allocation is, a commit or an abort is not)."""
        with self.cache.writing(key):
            self._update_write_ids(key, write_ids, outcome, version)

    def _update_write_ids(self, key: TableKey, write_ids: Sequence[int], outcome: str, version: int) -> None:
        def change(entry: TableEntry) -> TableEntry:
            if entry.write_ids is None:
                return entry
            return entry.but(write_ids=with_write_ids(entry.write_ids, write_ids, outcome))

        self._update_entry(key, change, version)

    def reap_expired(self) -> list[TableWrite]:
        writes = self.delegate.reap_expired()
        self._apply_txn_end(writes, "aborted")
        return writes

    def lock(self, components: Sequence[hms.LockComponent], txn_id: int | None, user: str, host: str,
             agent: str | None) -> LockOutcome:
        return self.synchronise(self.delegate.lock(components, txn_id, user, host, agent))

    def check_lock(self, lock_id: int) -> LockOutcome:
        return self.synchronise(self.delegate.check_lock(lock_id))

    def synchronise(self, outcome: LockOutcome) -> LockOutcome:
        """Makes a grant a synchronisation point for this cache (see the module docstring)."""
        if outcome.state == hms.LockState.ACQUIRED and not self.catch_up(outcome.event_head):
            self.drop_covered(outcome.scopes)
        return outcome

    def drop_covered(self, scopes: Sequence[tuple[str, str | None]]) -> None:
        """Drops the entries of what a lock covers (a table, or a whole database); reloads read after the grant."""
        for db, table in scopes:
            for key in [("hive", db, table)] if table else list(self.cache.table_keys(("hive", db))):
                self.invalidate(key)

    def unlock(self, lock_id: int) -> None:
        self.delegate.unlock(lock_id)

    def show_locks(self, db_name: str | None, table: str | None, partition: str | None,
                   txn_id: int | None) -> list[ShowLocksResponseElement]:
        return self.delegate.show_locks(db_name, table, partition, txn_id)

    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None:
        self.delegate.heartbeat(lock_id, txn_id)

    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]:
        return self.delegate.heartbeat_txn_range(low, high)


def with_write_ids(current: ValidWriteIdList, write_ids: Sequence[int], outcome: str) -> ValidWriteIdList:
    """The entry's write ids after `write_ids` became open (allocated), committed or aborted here.

    Ids between the old high watermark and a new one that this instance has not seen (allocated by
    another client or instance) count as open: unknown is never treated as committed."""
    high = max([current.high_watermark, *write_ids])
    open_ids = set(current.open_ids) | set(range(current.high_watermark + 1, high + 1))
    aborted = set(current.aborted_ids)
    for write_id in write_ids:
        open_ids.discard(write_id)
        aborted.discard(write_id)
        if outcome == "open":
            open_ids.add(write_id)
        elif outcome == "aborted":
            aborted.add(write_id)
    return ValidWriteIdList.of(current.table_name, high, sorted(open_ids), sorted(aborted))
