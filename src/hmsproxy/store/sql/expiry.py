"""Heartbeats and expiry: a transaction or a lock lives while its client heartbeats it; one not heartbeated within
the timeout is aborted or released by the reaper (`reap_expired`, run periodically by every instance: idempotent)
and when a waiting lock is checked (locks.py). The reaper also forgets the rows no transaction needs any more.
"""
from __future__ import annotations

from sqlalchemy import Connection, delete, func, select, update

from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.store.domain import TableWrite
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.txn_ids import COMMITTED
from hmsproxy.store.sql.txns import ABORTED, OPEN, Txns, now_ms

MAX_HEARTBEAT_RANGE = 100_000


class Expiry(Txns):
    """The heartbeats and the reaper of SqlStore's transaction part (transactions.py)."""

    txn_timeout_ms: int = 300_000

    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None:
        with self.db.transaction(write=True) as conn:
            if txn_id and self._txn_state(conn, txn_id) == ABORTED:
                raise hms.TxnAbortedException(message=f"Transaction txnid:{txn_id} already aborted")
            if lock_id and not conn.execute(select(s.HIVE_LOCKS.c.HL_LOCK_EXT_ID).where(
                    s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id)).first():
                raise hms.NoSuchLockException(message=f"No such lock: lockid:{lock_id}")  # sic, Hive's text
            self._heartbeat(conn, lock_id, txn_id)

    @staticmethod
    def _heartbeat(conn: Connection, lock_id: int | None, txn_id: int | None) -> None:
        now = now_ms()
        if txn_id:
            conn.execute(update(s.TXNS).where(s.TXNS.c.TXN_ID == txn_id).values(
                TXN_LAST_HEARTBEAT=now, TXN_HEARTBEAT_COUNT=s.TXNS.c.TXN_HEARTBEAT_COUNT + 1))
        if lock_id:
            conn.execute(update(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == lock_id).values(
                HL_LAST_HEARTBEAT=now, HL_HEARTBEAT_COUNT=s.HIVE_LOCKS.c.HL_HEARTBEAT_COUNT + 1))

    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]:
        """Heartbeats the open transactions in [low, high]; returns (aborted ids, unknown ids)."""
        if high - low > MAX_HEARTBEAT_RANGE:
            raise hms.MetaException(message=f"heartbeat range {low}..{high} is larger than {MAX_HEARTBEAT_RANGE}")
        with self.db.transaction(write=True) as conn:
            states = dict(conn.execute(select(s.TXNS.c.TXN_ID, s.TXNS.c.TXN_STATE).where(
                s.TXNS.c.TXN_ID >= low, s.TXNS.c.TXN_ID <= high)).all())
            open_ids = [t for t, state in states.items() if state == OPEN]
            if open_ids:
                conn.execute(update(s.TXNS).where(s.TXNS.c.TXN_ID.in_(open_ids)).values(TXN_LAST_HEARTBEAT=now_ms()))
            aborted = {t for t, state in states.items() if state == ABORTED}
            return aborted, {t for t in range(low, high + 1) if states.get(t, COMMITTED) == COMMITTED}

    def reap_expired(self) -> list[TableWrite]:
        """Aborts transactions and releases locks whose clients stopped heartbeating; returns the write ids
        of the aborted transactions. Safe to run on every instance at once."""
        journal = Journal()
        with self._releasing(None), self.db.transaction(write=True, journal=journal) as conn:
            aborted = self._expire(conn, journal)
            self._forget_old_rows(conn)
            return aborted

    def _forget_old_rows(self, conn: Connection) -> None:
        """WRITE_SET rows committed before every open transaction began can conflict with none any more, and
        no snapshot needs such committed transactions' TXNS rows (where the layout keeps them)."""
        oldest_open = conn.execute(select(func.min(s.TXNS.c.TXN_ID)).where(s.TXNS.c.TXN_STATE == OPEN)).scalar()
        if oldest_open is None:
            high = self.txn_ids.high_watermark(conn)
            write_sets_below, committed_below = high + 1, high  # the highest row stays: it is the high watermark
        else:
            write_sets_below = committed_below = oldest_open
        conn.execute(delete(s.WRITE_SET).where(s.WRITE_SET.c.WS_COMMIT_ID < write_sets_below))
        self.txn_ids.forget_committed(conn, committed_below)

    def _expire(self, conn: Connection, journal: Journal) -> list[TableWrite]:
        """Aborts transactions (with their ABORT_TXN events) and releases plain locks not heartbeated within
        the timeout. The stale rows are read FOR UPDATE, so two instances never abort one twice."""
        cutoff = now_ms() - self.txn_timeout_ms
        is_stale = (s.TXNS.c.TXN_STATE == OPEN) & (s.TXNS.c.TXN_LAST_HEARTBEAT < cutoff)
        candidates = list(conn.execute(select(s.TXNS.c.TXN_ID).where(is_stale)).scalars())
        stale = list(conn.execute(select(s.TXNS.c.TXN_ID).where(  # only the candidates' rows are locked
            s.TXNS.c.TXN_ID.in_(candidates), is_stale).with_for_update()).scalars()) if candidates else []
        conn.execute(delete(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_TXNID == 0,
                                                s.HIVE_LOCKS.c.HL_LAST_HEARTBEAT < cutoff))
        return self._abort(conn, stale, journal)
