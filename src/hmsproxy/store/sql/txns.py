"""Transactions in Hive's tables (TXNS, TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS, WRITE_SET): open, commit,
abort, and the snapshot of which are open or aborted.

Transaction ids come from NEXT_TXN_ID or from TXNS itself, as the schema's Hive version does (txn_ids.py).
Committed transactions leave TXNS (at once, or through the reaper where Hive 4's layout keeps them as 'c'); aborted
ones stay (their write ids remain invalid). Shared-write locks let transactions update one table concurrently, as
in Hive 3+: a transaction that updated or deleted is checked at commit against the WRITE_SET of those that committed
since it began, and aborted if both changed the same table or partition (one of them with an update), so that
neither change is lost. The other parts of the transaction store (transactions.py) build on this one.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.hive.write_ids import LONG_MAX, ValidTxnList
from hmsproxy.idl import hms
from hmsproxy.store.domain import TableWrite, TxnInfo
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lock_waits import LockReleases
from hmsproxy.store.sql.txn_ids import COMMITTED, TxnIds

OPEN, ABORTED = "o", "a"
_TXN_STATES = {OPEN: hms.TxnState.OPEN, ABORTED: hms.TxnState.ABORTED}
_TXN_STATE = select(s.TXNS.c.TXN_STATE).where(s.TXNS.c.TXN_ID == bindparam("txn_id")).with_for_update()


def now_ms() -> int:
    """The time as Hive's transaction and lock tables keep it: milliseconds since the epoch."""
    return int(time.time() * 1000)


class TxnState(Protocol):
    """What a snapshot reads of a TXNS row."""
    TXN_ID: int
    TXN_STATE: str


def valid_txn_list(high: int, rows: Sequence[TxnState]) -> ValidTxnList:
    """The snapshot of the high watermark and the TXNS rows below it that are not committed (`_open_txns`)."""
    open_ids = [r.TXN_ID for r in rows if r.TXN_STATE == OPEN]
    aborted = [r.TXN_ID for r in rows if r.TXN_STATE == ABORTED]
    return ValidTxnList(high_watermark=high, min_open_id=min(open_ids, default=LONG_MAX), open_ids=tuple(open_ids),
                        aborted_ids=tuple(aborted))


class Txns:
    """Mixed into SqlStore (through transactions.py), which gives it `db`, `layout`, `txn_ids` (txn_ids.py) and
    `lock_releases`."""

    db: Database
    layout: Layout
    txn_ids: TxnIds
    lock_releases: LockReleases

    @contextlib.contextmanager
    def _releasing(self, lock_id: int | None) -> Iterator[None]:
        """Around a transaction that may release a lock (None: locks not known by id): when it has ended,
        check_lock calls waiting on it read again."""
        try:
            yield
        finally:
            self.lock_releases.released(lock_id)

    def open_txns(self, count: int, user: str, host: str, agent: str | None, txn_type: int | None) -> list[int]:
        if count is None or count <= 0:
            raise hms.MetaException(message=f"num_txns must be positive, got {count}")
        journal = Journal()
        with self.db.transaction(write=True, journal=journal) as conn:
            now = now_ms()
            ids = self.txn_ids.open(conn, [self.layout.values(s.TXNS, {
                "TXN_STATE": OPEN, "TXN_STARTED": now, "TXN_LAST_HEARTBEAT": now, "TXN_USER": user or "",
                "TXN_HOST": host or "", "TXN_AGENT_INFO": agent, "TXN_HEARTBEAT_COUNT": 0, "TXN_TYPE": txn_type or 0})
                for _ in range(count)])
            journal.add(messages.open_txn(ids))
        return ids

    def commit_txn(self, txn_id: int) -> list[TableWrite]:
        """Commits; returns the table write ids that became valid. Committing a transaction that committed
        its writes already succeeds again (Hive 4): a client whose first reply was lost retries safely. A
        write conflict aborts the transaction instead (TxnAbortedException, with Hive's text)."""
        journal = Journal()
        with self._releasing(None), self.db.transaction(write=True, journal=journal) as conn:
            if self._committed_with_writes(conn, txn_id):
                return self._writes_of(conn, [txn_id])
            state = self._txn_state(conn, txn_id, committed_is_known=True)
            if state == COMMITTED:  # kept in TXNS by Hive 4's layout: committed before, without writes
                return []
            if state == ABORTED:
                raise hms.TxnAbortedException(message=f"Transaction txnid:{txn_id} already aborted")
            conflict = self._record_write_set(conn, txn_id)
            if conflict is None:
                return self._complete(conn, txn_id, journal)
            self._abort(conn, [txn_id], journal)
        raise hms.TxnAbortedException(message=conflict)

    def _record_write_set(self, conn: Connection, txn_id: int) -> str | None:
        """Adds the transaction's updates and deletes to WRITE_SET under a commit id, unless one of them
        conflicts with a transaction that committed after this one began: then Hive's abort message.
        The commit id is taken under the commit mutex (txn_ids.py), which also makes such commits one at a time."""
        tc = s.TXN_COMPONENTS
        changes = conn.execute(select(tc.c.TC_DATABASE, tc.c.TC_TABLE, tc.c.TC_PARTITION, tc.c.TC_OPERATION_TYPE)
                               .where(tc.c.TC_TXNID == txn_id, tc.c.TC_OPERATION_TYPE.in_(["u", "d"]),
                                      tc.c.TC_TABLE.is_not(None)).distinct()).all()
        if not changes:
            return None
        commit_id = self.txn_ids.commit_id(conn)
        ws = s.WRITE_SET
        for db, table, partition, operation in changes:
            same_place = (ws.c.WS_DATABASE == db) & (ws.c.WS_TABLE == table) & (
                (ws.c.WS_PARTITION == partition) if partition is not None else ws.c.WS_PARTITION.is_(None))
            query = select(ws).where(same_place, ws.c.WS_COMMIT_ID >= txn_id, ws.c.WS_TXNID != txn_id)
            if operation != "u":  # delete beside delete is no conflict: one of the two must be an update
                query = query.where(ws.c.WS_OPERATION_TYPE == "u")
            clash = conn.execute(query.order_by(ws.c.WS_COMMIT_ID).limit(1)).first()
            if clash is not None:
                where = "/".join(p for p in (db, table, partition) if p is not None)
                return (f"Aborting [txnid:{txn_id},{commit_id}] due to a write conflict on {where} committed by "
                        f"[txnid:{clash.WS_TXNID},{clash.WS_COMMIT_ID}] {operation}/{clash.WS_OPERATION_TYPE}")
        conn.execute(insert(ws), [{"WS_DATABASE": db, "WS_TABLE": table, "WS_PARTITION": partition,
                                   "WS_TXNID": txn_id, "WS_COMMIT_ID": commit_id, "WS_OPERATION_TYPE": operation}
                                  for db, table, partition, operation in changes])
        return None

    def _complete(self, conn: Connection, txn_id: int, journal: Journal) -> list[TableWrite]:
        """The rest of a commit: components become completed ones, locks go, and the TXNS row goes or is
        marked committed (txn_ids.py)."""
        components = conn.execute(select(s.TXN_COMPONENTS).where(s.TXN_COMPONENTS.c.TC_TXNID == txn_id)).all()
        if components:  # CTC_TIMESTAMP: the database's own time of the commit, as in Hive
            conn.execute(insert(s.COMPLETED_TXN_COMPONENTS), [self.layout.values(s.COMPLETED_TXN_COMPONENTS, {
                "CTC_TXNID": txn_id, "CTC_DATABASE": c.TC_DATABASE, "CTC_TABLE": c.TC_TABLE,
                "CTC_PARTITION": c.TC_PARTITION, "CTC_WRITEID": c.TC_WRITEID,
                "CTC_UPDATE_DELETE": "Y" if c.TC_OPERATION_TYPE in ("u", "d") else "N"}) for c in components])
        conn.execute(delete(s.TXN_COMPONENTS).where(s.TXN_COMPONENTS.c.TC_TXNID == txn_id))
        conn.execute(delete(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_TXNID == txn_id))
        self.txn_ids.end_commit(conn, txn_id)
        journal.add(messages.commit_txn(txn_id))  # as Hive: readers pair it with the ALLOC_WRITE_ID events
        return self._writes_of(conn, [txn_id])

    def abort_txns(self, txn_ids: Sequence[int], skip_unknown: bool = False) -> list[TableWrite]:
        """Aborts open transactions (aborting an aborted one again is a no-op); returns their write ids. An
        unknown or committed id fails the call, or with `skip_unknown` (abort_txns, as Hive) is passed over."""
        journal = Journal()
        with self._releasing(None), self.db.transaction(write=True, journal=journal) as conn:
            known = []
            for txn_id in txn_ids:
                try:
                    if self._committed_with_writes(conn, txn_id):
                        raise hms.NoSuchTxnException(message=f"Transaction txnid:{txn_id} is already committed.")
                    self._txn_state(conn, txn_id)
                except hms.NoSuchTxnException:
                    if not skip_unknown:
                        raise
                    continue
                known.append(txn_id)
            return self._abort(conn, known, journal)

    def _abort(self, conn: Connection, txn_ids: Iterable[int], journal: Journal) -> list[TableWrite]:
        """Marks the transactions aborted, releases their locks and logs an ABORT_TXN event for each;
        returns their write ids (which stay invalid)."""
        ids = list(txn_ids)
        conn.execute(update(s.TXNS).where(s.TXNS.c.TXN_ID.in_(ids)).values(TXN_STATE=ABORTED))
        conn.execute(delete(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_TXNID.in_(ids)))
        writes: list[TableWrite] = []
        for txn_id in ids:
            own = self._writes_of(conn, [txn_id])
            journal.add(messages.abort_txn(txn_id, [(w.db, w.table, w.write_id) for w in own]))
            writes += own
        return writes

    @staticmethod
    def _committed_with_writes(conn: Connection, txn_id: int) -> bool:
        return conn.execute(select(s.COMPLETED_TXN_COMPONENTS.c.CTC_TXNID).where(
            s.COMPLETED_TXN_COMPONENTS.c.CTC_TXNID == txn_id).limit(1)).first() is not None

    @staticmethod
    def _txn_state(conn: Connection, txn_id: int, committed_is_known: bool = False) -> str:
        """The transaction's state, its row locked; an unknown one, or one committed (kept in TXNS by Hive 4's
        layout) unless the caller handles that, is Hive's NoSuchTxnException."""
        state: str | None = conn.execute(_TXN_STATE, {"txn_id": txn_id}).scalar()
        if state is None:
            raise hms.NoSuchTxnException(message=f"No such transaction txnid:{txn_id}")
        if state == COMMITTED and not committed_is_known:
            raise hms.NoSuchTxnException(message=f"Transaction txnid:{txn_id} is already committed.")
        return state

    def _writes_of(self, conn: Connection, txn_ids: Sequence[int]) -> list[TableWrite]:
        if not self.layout.write_ids:
            return []
        rows = conn.execute(select(s.TXN_TO_WRITE_ID.c.T2W_DATABASE, s.TXN_TO_WRITE_ID.c.T2W_TABLE,
                                   s.TXN_TO_WRITE_ID.c.T2W_WRITEID)
                            .where(s.TXN_TO_WRITE_ID.c.T2W_TXNID.in_(list(txn_ids)))).all()
        return [TableWrite(db, table, write_id) for db, table, write_id in rows]

    def txn_writes(self, txn_id: int) -> list[TableWrite]:
        """The table write ids a transaction allocated (kept after it ends)."""
        with self.db.transaction() as conn:
            return self._writes_of(conn, [txn_id])

    def get_open_txns(self) -> tuple[int, list[TxnInfo]]:
        with self.db.transaction() as conn:
            high, rows = self._open_txns(conn)
        # as Hive 2.3 and 4: agentInfo and heartbeatCount keep their defaults ("Unknown", 0)
        return high, [hms.TxnInfo(id=r.TXN_ID, state=_TXN_STATES[r.TXN_STATE], user=r.TXN_USER, hostname=r.TXN_HOST,
                                  startedTime=r.TXN_STARTED, lastHeartbeatTime=r.TXN_LAST_HEARTBEAT) for r in rows]

    def _open_txns(self, conn: Connection) -> tuple[int, list[Any]]:
        high = self.txn_ids.high_watermark(conn)
        rows = conn.execute(select(s.TXNS).where(s.TXNS.c.TXN_ID <= high, s.TXNS.c.TXN_STATE != COMMITTED)
                            .order_by(s.TXNS.c.TXN_ID)).all()
        return high, list(rows)

    def current_txn_list(self) -> ValidTxnList:
        with self.db.transaction() as conn:
            return valid_txn_list(*self._open_txns(conn))
