"""Table write ids in Hive's tables (TXN_TO_WRITE_ID, NEXT_WRITE_ID): allocated per table to transactions, and
each table's valid write ids as a transaction snapshot sees them. Write ids come from NEXT_WRITE_ID per table, read
with SELECT ... FOR UPDATE inside the call's transaction, so several metastore instances hand out unique ones.
"""
from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, insert, select, update

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.hive.write_ids import ValidTxnList, ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.txns import ABORTED, Txns, valid_txn_list

NO_WRITE_IDS = "table write ids (Hive 3 brought them)"


class WriteIds(Txns):
    """The write ids of SqlStore's transaction part (transactions.py)."""

    def allocate_write_ids(self, db_name: str, table: str, txn_ids: Sequence[int],
                           journal: Journal | None = None) -> list[tuple[int, int]]:
        """A write id per transaction for the table (the one it already has, or the next)."""
        if not self.layout.write_ids:
            raise self.layout.lacking(NO_WRITE_IDS)
        journal = Journal() if journal is None else journal
        with self.db.transaction(write=True, journal=journal) as conn:
            for txn_id in txn_ids:
                if self._txn_state(conn, txn_id) == ABORTED:
                    raise hms.TxnAbortedException(message=f"Transaction txnid:{txn_id} already aborted")
            t2w = s.TXN_TO_WRITE_ID
            existing = dict(conn.execute(select(t2w.c.T2W_TXNID, t2w.c.T2W_WRITEID).where(
                t2w.c.T2W_DATABASE == db_name, t2w.c.T2W_TABLE == table, t2w.c.T2W_TXNID.in_(list(txn_ids)))).all())
            missing = [t for t in txn_ids if t not in existing]
            if missing:
                nwi = s.NEXT_WRITE_ID
                where = (nwi.c.NWI_DATABASE == db_name) & (nwi.c.NWI_TABLE == table)
                first = conn.execute(select(nwi.c.NWI_NEXT).where(where).with_for_update()).scalar()
                if first is None:
                    first = 1
                    conn.execute(insert(nwi).values(NWI_DATABASE=db_name, NWI_TABLE=table, NWI_NEXT=1 + len(missing)))
                else:
                    conn.execute(update(nwi).where(where).values(NWI_NEXT=first + len(missing)))
                for i, txn_id in enumerate(missing):
                    existing[txn_id] = first + i
                conn.execute(insert(t2w), [{"T2W_TXNID": t, "T2W_DATABASE": db_name, "T2W_TABLE": table,
                                            "T2W_WRITEID": existing[t]} for t in missing])
                journal.add(messages.alloc_write_id(db_name, table, [(t, existing[t]) for t in missing]))
            return [(t, existing[t]) for t in txn_ids]

    def valid_write_ids(self, full_names: Sequence[str], snapshot: ValidTxnList | None) -> list[ValidWriteIdList]:
        """Each table's write ids as seen by the transaction snapshot (the current one when None)."""
        if not self.layout.write_ids:
            raise self.layout.lacking(NO_WRITE_IDS)
        with self.db.transaction() as conn:
            snapshot = snapshot or valid_txn_list(*self._open_txns(conn))
            aborted_now = set(conn.execute(select(s.TXNS.c.TXN_ID).where(s.TXNS.c.TXN_STATE == ABORTED)).scalars())
            return [self._table_write_ids(conn, name, snapshot, aborted_now) for name in full_names]

    def table_write_ids(self, conn: Connection, db_name: str, table: str) -> ValidWriteIdList | None:
        """The table's write ids as of now, inside the caller's transaction (for cache loads); None where the
        schema keeps none (Hive 2.3's transactional tables are cached as plain ones)."""
        if not self.layout.write_ids:
            return None
        snapshot = valid_txn_list(*self._open_txns(conn))
        return self._table_write_ids(conn, f"{db_name}.{table}", snapshot, set(snapshot.aborted_ids))

    @staticmethod
    def _table_write_ids(conn: Connection, full_name: str, snapshot: ValidTxnList,
                         aborted_now: set[int]) -> ValidWriteIdList:
        db_name, _, table = full_name.partition(".")
        if not table:
            raise hms.MetaException(message=f"table name {full_name!r} must be <db>.<table>")
        t2w = s.TXN_TO_WRITE_ID
        rows = conn.execute(select(t2w.c.T2W_TXNID, t2w.c.T2W_WRITEID).where(
            t2w.c.T2W_DATABASE == db_name.lower(), t2w.c.T2W_TABLE == table.lower())).all()
        visible = [w for txn, w in rows if txn <= snapshot.high_watermark]
        high = max(visible, default=0)
        open_ids: list[int] = []
        aborted: list[int] = []
        for txn, w in rows:
            if w > high or snapshot.is_valid(txn):
                continue
            (aborted if snapshot.is_aborted(txn) or txn in aborted_now else open_ids).append(w)
        return ValidWriteIdList.of(full_name.lower(), high, open_ids, aborted)
