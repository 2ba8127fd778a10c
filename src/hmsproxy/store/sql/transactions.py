"""Transactions, table write ids and locks in Hive's tables (TXNS, TXN_TO_WRITE_ID, HIVE_LOCKS, ...): the TxnStore
part of SqlStore, composed of its parts, one job each: txns.py (open, commit with write-conflict checks, abort,
snapshots), write_ids.py (table write ids), locks.py (lock decisions, linearizable across instances) and expiry.py
(heartbeats, and the reaper of what is no longer heartbeated).

Every id is read with SELECT ... FOR UPDATE inside the call's transaction (or handed out by the database itself,
txn_ids.py), so several metastore instances on one database hand out unique ids and see one lock table.
"""
from __future__ import annotations

from hmsproxy.store.sql.locks import Locks
from hmsproxy.store.sql.write_ids import WriteIds


class TransactionStore(WriteIds, Locks):
    """Mixed into SqlStore, which gives it `db`, `layout`, `txn_ids` (txn_ids.py), `lock_releases` and
    `lock_requests` (a Combiner of `_lock_batch`)."""
