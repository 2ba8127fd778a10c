"""Where transaction ids come from: the two ways Hive's schemas hand them out.

- A counter (`NEXT_TXN_ID`, one row): Hive 2.3 and 3.1, and hmsproxy's own schema. Opening reserves ids from
  the row read FOR UPDATE; the row is also the commit mutex; a committed transaction's TXNS row is deleted.
- TXNS itself (Hive 4, HIVE-20212 removed NEXT_TXN_ID): TXN_ID is an auto-increment column and TXN_LOCK_TBL
  is the mutex, so that no transaction opens while a commit takes its commit id. A committed transaction's
  row stays with state 'c' until a cleaner removes it, so the highest id ever given is always MAX(TXN_ID).
  hmsproxy takes the mutex exclusively to open, too (Hive 4 takes it shared): then ids become visible in id
  order, and a snapshot that sees MAX(TXN_ID) sees every lower id that exists. With shared opens, two opens
  may commit out of id order, and a snapshot taken between them would count the lower, still invisible id
  as committed; Hive 4 therefore treats recent gaps below the high watermark as open. Exclusive opens
  queue as opens on the NEXT_TXN_ID row do.

In both, the commit id of a transaction with updates or deletes is the highest id handed out so far, read
while holding the mutex exclusively.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import Connection, column, delete, func, insert, select, table, text, update

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.row_inserts import RowValues
from hmsproxy.store.sql.sequences import next_value

COMMITTED = "c"  # Hive 4's TXN_STATE of a committed transaction kept in TXNS


class TxnIds(Protocol):
    def open(self, conn: Connection, rows: Sequence[RowValues]) -> list[int]:
        """Inserts the TXNS rows (without TXN_ID) and returns their new ids, in order."""

    def commit_id(self, conn: Connection) -> int:
        """Takes the commit mutex exclusively (until the transaction ends); the highest id handed out."""

    def high_watermark(self, conn: Connection) -> int:
        """The highest id handed out, without any lock."""

    def end_commit(self, conn: Connection, txn_id: int) -> None:
        """What becomes of a committed transaction's TXNS row."""

    def forget_committed(self, conn: Connection, below: int) -> None:
        """Removes committed rows below `below` (the oldest open transaction, else the high watermark, whose
        row always stays): no snapshot needs them any more (the cleaner's part)."""


class CounterIds:
    def open(self, conn: Connection, rows: Sequence[RowValues]) -> list[int]:
        first = next_value(conn, s.NEXT_TXN_ID.c.NTXN_NEXT, len(rows))
        ids = list(range(first, first + len(rows)))
        conn.execute(insert(s.TXNS), [{**row, "TXN_ID": txn_id} for row, txn_id in zip(rows, ids)])
        return ids

    def commit_id(self, conn: Connection) -> int:
        return next_value(conn, s.NEXT_TXN_ID.c.NTXN_NEXT, 0) - 1

    def high_watermark(self, conn: Connection) -> int:
        return int(conn.execute(select(s.NEXT_TXN_ID.c.NTXN_NEXT)).scalar_one()) - 1

    def end_commit(self, conn: Connection, txn_id: int) -> None:
        conn.execute(delete(s.TXNS).where(s.TXNS.c.TXN_ID == txn_id))

    def forget_committed(self, conn: Connection, below: int) -> None:
        return None  # committed rows were deleted at commit


class TxnsTableIds:
    def open(self, conn: Connection, rows: Sequence[RowValues]) -> list[int]:
        _take_txn_lock(conn)  # exclusively, so that ids become visible in id order (module doc)
        return [_insert_txn(conn, row) for row in rows]

    def commit_id(self, conn: Connection) -> int:
        _take_txn_lock(conn)
        return self.high_watermark(conn)

    def high_watermark(self, conn: Connection) -> int:
        return int(conn.execute(select(func.max(s.TXNS.c.TXN_ID))).scalar() or 0)

    def end_commit(self, conn: Connection, txn_id: int) -> None:
        conn.execute(update(s.TXNS).where(s.TXNS.c.TXN_ID == txn_id).values(TXN_STATE=COMMITTED))

    def forget_committed(self, conn: Connection, below: int) -> None:
        conn.execute(delete(s.TXNS).where(s.TXNS.c.TXN_STATE == COMMITTED, s.TXNS.c.TXN_ID < below))


def txn_ids_for(layout: Layout) -> TxnIds:
    """The counter where the schema has NEXT_TXN_ID (Hive 2.3/3.1, an older hmsproxy); Hive 4's way otherwise."""
    return CounterIds() if layout.txn_counter else TxnsTableIds()


# TXNS as a plain list of columns: TXN_ID is filled by the database, which the declared table cannot say.
_TXNS_AUTO_ID = table("TXNS", *(column(c.name) for c in s.TXNS.columns))


def _insert_txn(conn: Connection, row: RowValues) -> int:
    """One row, one id: the database picks it (MySQL reports it as the last insert id)."""
    if conn.dialect.name == "mysql":
        return int(conn.execute(insert(_TXNS_AUTO_ID).values(**row)).lastrowid)
    return int(conn.execute(insert(_TXNS_AUTO_ID).values(**row).returning(_TXNS_AUTO_ID.c.TXN_ID)).scalar_one())


def _take_txn_lock(conn: Connection) -> None:
    """TXN_LOCK_TBL exclusively, with Hive 4's statements (DatabaseProduct.lockTable): a row lock on MySQL,
    where LOCK TABLES would end the transaction; a table lock on PostgreSQL. SQLite's write transactions
    hold the whole file already."""
    if conn.dialect.name == "mysql":
        conn.execute(text("SELECT TXN_LOCK FROM TXN_LOCK_TBL FOR UPDATE"))
    elif conn.dialect.name == "postgresql":
        conn.execute(text('LOCK TABLE "TXN_LOCK_TBL" IN EXCLUSIVE MODE'))
