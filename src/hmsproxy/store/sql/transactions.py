"""Transactions, table write ids and locks in Hive's tables (TXNS, TXN_TO_WRITE_ID, HIVE_LOCKS, ...).

Transaction ids come from NEXT_TXN_ID or from TXNS itself, as the schema's Hive version does (txn_ids.py); lock
ids from the single-row NEXT_LOCK_ID table and write ids from NEXT_WRITE_ID per table, read with SELECT ... FOR
UPDATE inside the call's transaction, so several metastore instances on one database hand out unique ids and see
one lock table. Committed transactions leave TXNS (at once, or through the reaper where Hive 4's layout keeps them
as 'c'); aborted ones stay (their write ids remain invalid). Shared-write locks let transactions update one table
concurrently, as in Hive 3+: a transaction that updated or deleted is checked at commit against the WRITE_SET of
those that committed since it began, and aborted if both changed the same table or partition (one of them with an
update), so that neither change is lost. A transaction or a lock not heartbeated within the timeout is aborted or
released by the reaper (`reap_expired`, run periodically by every instance: idempotent) and when a waiting lock is
checked.

Lock decisions are linearizable: every decision to grant (lock, check_lock) first takes the NEXT_LOCK_ID row with
SELECT ... FOR UPDATE, one mutex for all instances. (Hive 2.3 and 3.1 queue a lock under that row and decide under
AUX_TABLE's 'CheckLock' row. Beside such a Java HMS the lock-id order keeps decisions apart: a lock is queued with
its id in one transaction, so every lower id is visible to whoever decides a higher one, and a lock defers to every
conflicting lock with a lower id, waiting or held.) Only after holding it does the decision read HIVE_LOCKS, and
write transactions run READ COMMITTED (database.py), so each later statement sees every lock granted, requested or
released by a transaction that committed before: decisions happen one at a time, each seeing all earlier ones. Lock
requests that arrive at one instance together share one such decision (combiner.py): decided in the order they
queued, each against the locks before it, as if they had come one by one. Releases (unlock, commit, abort, expiry)
need no mutex: a decision that misses a release in progress only waits longer. SQLite write transactions are
serialised by the database file itself. Polls of a lock whose state cannot have changed (acquired, or still behind
a live blocker) need no decision either: they are answered by one read, so clients polling while they wait do not
queue for the mutex.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, or_, select, update
from sqlalchemy import true as sa_true

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.hive.write_ids import LONG_MAX, ValidTxnList, ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.store.domain import LockOutcome, ShowLocksResponseElement, TableWrite, TxnInfo
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.combiner import Combiner
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lock_waits import LockReleases
from hmsproxy.store.sql.sequences import next_value
from hmsproxy.store.sql.txn_ids import COMMITTED, TxnIds

OPEN, ABORTED = "o", "a"
ACQUIRED, WAITING = "a", "w"
LOCK_TYPE_CODES = {hms.LockType.SHARED_READ: "r", hms.LockType.SHARED_WRITE: "w",
                   hms.LockType.EXCL_WRITE: "x", hms.LockType.EXCLUSIVE: "e"}
LOCK_CODE_TYPES = {code: kind for kind, code in LOCK_TYPE_CODES.items()}
_TYPE_RANK = {"r": 0, "w": 1, "x": 2, "e": 3}
# Which held lock types a requested type can live with (Hive's lock compatibility matrix).
COMPATIBLE = {"r": {"r", "w", "x"}, "w": {"r", "w"}, "x": {"r"}, "e": set()}
_TXN_STATES = {OPEN: hms.TxnState.OPEN, ABORTED: hms.TxnState.ABORTED}
_LOCK_STATES = {ACQUIRED: hms.LockState.ACQUIRED, WAITING: hms.LockState.WAITING}
MAX_HEARTBEAT_RANGE = 100_000
RECHECK_S = 0.05  # a held check_lock reads again this often, for releases through other instances
WRITE_OPERATIONS = {hms.DataOperationType.INSERT: "i", hms.DataOperationType.UPDATE: "u",
                    hms.DataOperationType.DELETE: "d"}


@dataclass(frozen=True)
class PendingLock:
    """A lock request waiting for its batch: its rows, checked and filled but for the id and the times."""
    components: tuple[Any, ...]
    txn_id: int | None
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class _Undecided:
    """check_lock's one read could not answer: the full decision, with what it must do first."""

    heartbeat: bool  # the lock's (or its transaction's) heartbeat is due
    expire: bool     # a blocker may be abandoned: expire what was before deciding


def _now_ms() -> int:
    return int(time.time() * 1000)


def _scope_overlaps(a: Any, b: Any) -> bool:
    if a.HL_DB != b.HL_DB:
        return False
    if a.HL_TABLE is None or b.HL_TABLE is None:
        return True
    if a.HL_TABLE != b.HL_TABLE:
        return False
    return a.HL_PARTITION is None or b.HL_PARTITION is None or a.HL_PARTITION == b.HL_PARTITION


def _database_read_beside_table_lock(a: Any, b: Any) -> bool:
    """Hive lets a database-level SHARED_READ (a query's guard against DROP DATABASE) live beside an
    EXCLUSIVE lock on one of the database's tables, in either order (2.3 and 4 alike)."""
    return a.HL_TABLE is None and a.HL_LOCK_TYPE == "r" and b.HL_TABLE is not None and b.HL_LOCK_TYPE == "e"


def _conflicts(wanted: Any, held: Any) -> bool:
    if wanted.HL_TXNID and wanted.HL_TXNID == held.HL_TXNID:
        return False  # a transaction's own locks never block it
    if _database_read_beside_table_lock(wanted, held) or _database_read_beside_table_lock(held, wanted):
        return False
    return _scope_overlaps(wanted, held) and (
        held.HL_LOCK_TYPE not in COMPATIBLE[wanted.HL_LOCK_TYPE]
        or wanted.HL_LOCK_TYPE not in COMPATIBLE[held.HL_LOCK_TYPE])


NO_WRITE_IDS = "table write ids (Hive 3 brought them)"


class TransactionStore:
    """Mixed into SqlStore, which gives it `db`, `txn_ids` (txn_ids.py), `lock_releases` and `lock_requests`
    (a Combiner of `_lock_batch`)."""

    db: Database
    layout: Layout
    txn_ids: TxnIds
    lock_releases: LockReleases
    lock_requests: Combiner[PendingLock, LockOutcome]
    txn_timeout_ms: int = 300_000
    check_lock_wait_s: float = 0.0  # how long check_lock holds a WAITING answer (server.py sets the flag's value)

    @contextlib.contextmanager
    def _releasing(self, lock_id: int | None) -> Iterator[None]:
        """Around a transaction that may release a lock (None: locks not known by id): when it has ended,
        check_lock calls waiting on it read again."""
        try:
            yield
        finally:
            self.lock_releases.released(lock_id)

    # ---- transactions ------------------------------------------------------------------------------

    def open_txns(self, count: int, user: str, host: str, agent: str | None, txn_type: int | None) -> list[int]:
        if count is None or count <= 0:
            raise hms.MetaException(message=f"num_txns must be positive, got {count}")
        journal = Journal()
        with self.db.transaction(write=True, journal=journal) as conn:
            now = _now_ms()
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
        state = conn.execute(_TXN_STATE, {"txn_id": txn_id}).scalar()
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
            return _txn_list(*self._open_txns(conn))

    # ---- write ids ---------------------------------------------------------------------------------

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
            snapshot = snapshot or _txn_list(*self._open_txns(conn))
            aborted_now = set(conn.execute(select(s.TXNS.c.TXN_ID).where(s.TXNS.c.TXN_STATE == ABORTED)).scalars())
            return [self._table_write_ids(conn, name, snapshot, aborted_now) for name in full_names]

    def table_write_ids(self, conn: Connection, db_name: str, table: str) -> ValidWriteIdList | None:
        """The table's write ids as of now, inside the caller's transaction (for cache loads); None where the
        schema keeps none (Hive 2.3's transactional tables are cached as plain ones)."""
        if not self.layout.write_ids:
            return None
        snapshot = _txn_list(*self._open_txns(conn))
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

    # ---- locks -------------------------------------------------------------------------------------

    def lock(self, components: Sequence[Any], txn_id: int | None, user: str, host: str,
             agent: str | None) -> LockOutcome:
        """Records a lock request, acquired at once if nothing conflicts. A malformed request is refused before
        it is queued; requests arriving together are decided together (`_lock_batch`)."""
        if not components:
            raise hms.MetaException(message="a lock request needs at least one component")
        rows = [_lock_row(i + 1, c, txn_id, user, host, agent) for i, c in enumerate(components)]
        return self.lock_requests.submit(PendingLock(tuple(components), txn_id, rows))

    def _lock_batch(self, requests: Sequence[PendingLock]) -> list[LockOutcome | Exception]:
        """Lock requests that arrived together, decided in one transaction (combiner.py), retried whole."""
        return self.db.retrying_conflicts(lambda: self._decide_new_locks(requests), "lock")

    def _decide_new_locks(self, requests: Sequence[PendingLock]) -> list[LockOutcome | Exception]:
        """Each request in turn, as if they had come one after the other: each is decided against the locks
        in the database and those of the requests before it. The mutex is held until the commit, so the
        statements after it are as few as the decision allows: read the others once, insert every row in its
        final state at once."""
        answers: list[LockOutcome | Exception] = []
        with self.db.transaction(write=True) as conn:
            first_id = next_value(conn, s.NEXT_LOCK_ID.c.NL_NEXT, len(requests))  # the mutex (module doc)
            head, others = self._locks_in(conn, {row["HL_DB"] for r in requests for row in r.rows})
            now = _now_ms()
            new_rows, writes = [], []
            for lock_id, request in enumerate(requests, start=first_id):
                txn_id = request.txn_id
                try:
                    if txn_id and self._txn_state(conn, txn_id) == ABORTED:
                        raise hms.TxnAbortedException(message=f"Transaction txnid:{txn_id} already aborted")
                except (hms.TxnAbortedException, hms.NoSuchTxnException) as refused:  # this request only
                    answers.append(refused)
                    continue
                rows = [dict(row, HL_LOCK_EXT_ID=lock_id, HL_LAST_HEARTBEAT=0 if txn_id else now)  # see _lock_row
                        for row in request.rows]
                mine = [SimpleNamespace(**row) for row in rows]
                blocked = _first_block(lock_id, mine, others)
                if blocked is None:
                    for row in rows:
                        row.update(HL_LOCK_STATE=ACQUIRED, HL_ACQUIRED_AT=now)
                    answers.append(LockOutcome(lock_id, hms.LockState.ACQUIRED, _scopes(mine), head))
                else:
                    wanted, held = blocked  # as Hive: the component that conflicted is marked
                    rows[wanted.HL_LOCK_INT_ID - 1].update(HL_BLOCKEDBY_EXT_ID=held.HL_LOCK_EXT_ID,
                                                           HL_BLOCKEDBY_INT_ID=held.HL_LOCK_INT_ID)
                    answers.append(LockOutcome(lock_id, hms.LockState.WAITING, blocked_by=held.HL_LOCK_EXT_ID))
                others.extend(SimpleNamespace(**row) for row in rows)
                new_rows += rows
                writes += [{"TC_TXNID": txn_id, "TC_DATABASE": row["HL_DB"], "TC_TABLE": row["HL_TABLE"],
                            "TC_PARTITION": row["HL_PARTITION"], "TC_OPERATION_TYPE": WRITE_OPERATIONS[c.operationType]}
                           for c, row in zip(request.components, rows)
                           if txn_id and c.operationType in WRITE_OPERATIONS]
            if new_rows:
                conn.execute(insert(s.HIVE_LOCKS), new_rows)
            if writes:
                conn.execute(insert(s.TXN_COMPONENTS), writes)
        return answers

    @staticmethod
    def _locks_in(conn: Connection, dbs: set[str]) -> tuple[int, list[Any]]:
        """The log's head and the locks in these databases (locks conflict only within one), in one statement."""
        result = conn.execute(_LOCKS_IN_DATABASES, {"dbs": sorted(dbs)}).all()
        head = result[0].NEXT_EVENT_ID - 1
        return head, [row for row in result if row.HL_LOCK_EXT_ID is not None]

    def check_lock(self, lock_id: int) -> LockOutcome:
        """The lock's state; a waiting lock is tried again. A lock whose state cannot have changed is answered
        by one read (`_unchanged_lock`). A lock still WAITING is held up to `check_lock_wait_s`: read again as
        soon as its blocker is released through this process and every RECHECK_S otherwise (releases through
        other instances, expiry), so the waiter learns of its grant as soon as polling could tell it, and
        clients polling in a tight loop cost a read per release instead of a read per poll. A waiter whose own
        blocker was released here is decided at once (it is next in line), heartbeated as a poll would."""
        deadline = time.monotonic() + self.check_lock_wait_s
        while True:
            since = self.lock_releases.mark()
            seen = self._unchanged_lock(lock_id)
            if isinstance(seen, _Undecided):
                return self._decide_again(lock_id, seen)
            left = deadline - time.monotonic()
            if seen.state != hms.LockState.WAITING or left <= 0:
                return seen
            if self.lock_releases.wait(since, seen.blocked_by, min(RECHECK_S, left)) and \
                    self.lock_releases.was_released(since, seen.blocked_by):
                return self._decide_again(lock_id, _Undecided(heartbeat=True, expire=False))  # its turn, surely

    def _unchanged_lock(self, lock_id: int) -> LockOutcome | _Undecided:
        """check_lock's answer without the mutex or a write, when one read shows it cannot differ from the
        full decision's: the lock is ACQUIRED (it stays so until released), or WAITING behind a recorded
        blocker that still exists and is alive (it blocks as long as it exists: an acquired lock stays
        acquired, an older waiting one stays older). Only if the lock (or its transaction) was heartbeated
        within a tenth of the timeout: a client that only polls check_lock keeps its lock alive, as in Hive,
        with one heartbeat write per tenth of the timeout instead of one per poll. Otherwise what the full
        decision must do besides deciding."""
        with self.db.transaction() as conn:
            rows = conn.execute(_LOCK_WITH_BLOCKERS, {"lock_id": lock_id}).all()
        if not rows or (rows[0].HL_TXNID and rows[0].TXN_STATE != OPEN):
            return _Undecided(heartbeat=False, expire=False)  # gone or aborted: the full path says which
        now = _now_ms()
        if not _alive(rows[0].HL_TXNID, rows[0].HL_LAST_HEARTBEAT, rows[0].MY_TXN_HEARTBEAT,
                      now - self.txn_timeout_ms // 10):
            return _Undecided(heartbeat=True, expire=True)
        if all(r.HL_LOCK_STATE == ACQUIRED for r in rows):
            return LockOutcome(lock_id, hms.LockState.ACQUIRED, _scopes(rows), rows[0].NEXT_EVENT_ID - 1)
        blockers = [r for r in rows if r.HL_LOCK_STATE != ACQUIRED and r.BLOCKER is not None]
        alive_after = now - self.txn_timeout_ms
        for r in blockers:
            if _alive(r.BLOCKER_TXNID, r.BLOCKER_HEARTBEAT, r.BLOCKER_TXN_HEARTBEAT, alive_after):
                return LockOutcome(lock_id, hms.LockState.WAITING, blocked_by=r.BLOCKER)
        return _Undecided(heartbeat=False, expire=bool(blockers))  # blockers gone, or abandoned: expire them

    def _decide_again(self, lock_id: int, undecided: _Undecided) -> LockOutcome:
        """check_lock's full path: under the mutex, what `undecided` asks for and the decision. The lock's own
        rows, the others beside them and the log's head come from one read; an expiry runs before it, after
        this lock's heartbeat, so that it cannot take the lock that asked for it."""
        journal = Journal()   # the expiry's ABORT_TXN events
        with self.db.transaction(write=True, journal=journal) as conn:
            conn.execute(_DECISION_MUTEX)  # the decision mutex (module doc)
            if undecided.expire:
                txn_id = self._lock_rows(conn, lock_id)[0].HL_TXNID
                self._refuse_aborted(conn, txn_id)
                if undecided.heartbeat:
                    self._heartbeat_lock(conn, lock_id, txn_id)
                self._expire(conn, journal)
            head, mine, others = self._lock_and_others(conn, lock_id)
            txn_id = mine[0].HL_TXNID
            if not undecided.expire:
                self._refuse_aborted(conn, txn_id)
            outcome = self._decide(conn, lock_id, head, mine, others)
            if undecided.heartbeat and not undecided.expire and (txn_id or outcome.state != hms.LockState.ACQUIRED):
                self._heartbeat_lock(conn, lock_id, txn_id)  # a grant heartbeats a plain lock
            return outcome

    def _heartbeat_lock(self, conn: Connection, lock_id: int, txn_id: int) -> None:
        """A plain lock lives by its own heartbeat, a transaction's lock by the transaction's."""
        self._heartbeat(conn, None if txn_id else lock_id, txn_id or None)

    def _refuse_aborted(self, conn: Connection, txn_id: int) -> None:
        if txn_id and self._txn_state(conn, txn_id) == ABORTED:
            raise hms.TxnAbortedException(message=f"Transaction txnid:{txn_id} already aborted")

    @staticmethod
    def _lock_and_others(conn: Connection, lock_id: int) -> tuple[int, list[Any], list[Any]]:
        """The log's head, the lock's rows and the other locks in its databases, in one statement."""
        result = conn.execute(_LOCK_AND_OTHERS, {"lock_id": lock_id}).all()
        mine = [row for row in result if row.HL_LOCK_EXT_ID == lock_id]
        if not mine:
            raise hms.NoSuchLockException(message=f"No such lock lockid:{lock_id}")
        return result[0].NEXT_EVENT_ID - 1, mine, [row for row in result if row.HL_LOCK_EXT_ID not in (None, lock_id)]

    @staticmethod
    def _decide(conn: Connection, lock_id: int, head: int, mine: Sequence[Any], others: Sequence[Any]) -> LockOutcome:
        """Acquires every component of the lock (its rows: `mine`) at once if none conflicts with a held lock
        or an older waiting one; the outcome carries what the cache needs to know of a grant."""
        if all(r.HL_LOCK_STATE == ACQUIRED for r in mine):
            return LockOutcome(lock_id, hms.LockState.ACQUIRED, _scopes(mine), head)
        blocked = _first_block(lock_id, mine, others)
        locks = s.HIVE_LOCKS
        if blocked is not None:  # as Hive: the component that conflicted is marked
            wanted, held = blocked
            conn.execute(update(locks).where(locks.c.HL_LOCK_EXT_ID == lock_id,
                                             locks.c.HL_LOCK_INT_ID == wanted.HL_LOCK_INT_ID)
                         .values(HL_BLOCKEDBY_EXT_ID=held.HL_LOCK_EXT_ID, HL_BLOCKEDBY_INT_ID=held.HL_LOCK_INT_ID))
            return LockOutcome(lock_id, hms.LockState.WAITING, blocked_by=held.HL_LOCK_EXT_ID)
        now = _now_ms()  # a transaction's locks live by its heartbeats, a plain lock by its own
        conn.execute(_ACQUIRE_TXN_LOCK if mine[0].HL_TXNID else _ACQUIRE_PLAIN_LOCK, {"lock_id": lock_id, "now": now})
        return LockOutcome(lock_id, hms.LockState.ACQUIRED, _scopes(mine), head)

    @staticmethod
    def _lock_rows(conn: Connection, lock_id: int) -> list[Any]:
        rows = conn.execute(_LOCK_ROWS, {"lock_id": lock_id}).all()
        if not rows:
            raise hms.NoSuchLockException(message=f"No such lock lockid:{lock_id}")
        return list(rows)

    def unlock(self, lock_id: int) -> None:
        """Releases a lock; a lock that is gone already is fine (Hive: idempotent). A transaction's lock may
        be given up while it waits; once acquired it lives until the transaction ends."""
        locks = s.HIVE_LOCKS
        with self._releasing(lock_id), self.db.transaction(write=True) as conn:
            if conn.execute(_RELEASE, {"lock_id": lock_id}).rowcount:
                return
            held = conn.execute(select(locks).where(locks.c.HL_LOCK_EXT_ID == lock_id)
                                .order_by(locks.c.HL_LOCK_INT_ID)).first()
            if held is not None:  # an acquired lock of a transaction
                raise hms.TxnOpenException(message=(
                    f"Unlocking locks associated with transaction not permitted.  lockid:{lock_id} "
                    f"intLockId:{held.HL_LOCK_INT_ID} txnid:{held.HL_TXNID} db:{held.HL_DB} table:{held.HL_TABLE} "
                    f"partition:{held.HL_PARTITION} state:ACQUIRED "
                    f"type:{hms.LockType._VALUES_TO_NAMES[LOCK_CODE_TYPES[held.HL_LOCK_TYPE]]}")
                .replace(":None", ":null"))

    def show_locks(self, db_name: str | None, table: str | None, partition: str | None,
                   txn_id: int | None) -> list[ShowLocksResponseElement]:
        locks = s.HIVE_LOCKS
        query = select(locks).order_by(locks.c.HL_LOCK_EXT_ID, locks.c.HL_LOCK_INT_ID)
        for column, value in ((locks.c.HL_DB, db_name and db_name.lower()), (locks.c.HL_TABLE, table and table.lower()),
                              (locks.c.HL_PARTITION, partition), (locks.c.HL_TXNID, txn_id)):
            if value:
                query = query.where(column == value)
        with self.db.transaction() as conn:
            rows = conn.execute(query).all()
        # as Hive: txnid 0 for a lock outside a transaction, heartbeatCount left at its default 0
        return [hms.ShowLocksResponseElement(
            lockid=r.HL_LOCK_EXT_ID, dbname=r.HL_DB, tablename=r.HL_TABLE, partname=r.HL_PARTITION,
            state=_LOCK_STATES[r.HL_LOCK_STATE], type=LOCK_CODE_TYPES[r.HL_LOCK_TYPE], txnid=r.HL_TXNID,
            lastheartbeat=r.HL_LAST_HEARTBEAT, acquiredat=r.HL_ACQUIRED_AT, user=r.HL_USER, hostname=r.HL_HOST,
            agentInfo=r.HL_AGENT_INFO, blockedByExtId=r.HL_BLOCKEDBY_EXT_ID, blockedByIntId=r.HL_BLOCKEDBY_INT_ID,
            lockIdInternal=r.HL_LOCK_INT_ID) for r in sorted(rows, key=hive_lock_order)]

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
        now = _now_ms()
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
                conn.execute(update(s.TXNS).where(s.TXNS.c.TXN_ID.in_(open_ids)).values(TXN_LAST_HEARTBEAT=_now_ms()))
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
        cutoff = _now_ms() - self.txn_timeout_ms
        is_stale = (s.TXNS.c.TXN_STATE == OPEN) & (s.TXNS.c.TXN_LAST_HEARTBEAT < cutoff)
        candidates = list(conn.execute(select(s.TXNS.c.TXN_ID).where(is_stale)).scalars())
        stale = list(conn.execute(select(s.TXNS.c.TXN_ID).where(  # only the candidates' rows are locked
            s.TXNS.c.TXN_ID.in_(candidates), is_stale).with_for_update()).scalars()) if candidates else []
        conn.execute(delete(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_TXNID == 0,
                                                s.HIVE_LOCKS.c.HL_LAST_HEARTBEAT < cutoff))
        return self._abort(conn, stale, journal)


def _lock_row(int_id: int, component: Any, txn_id: int | None, user: str, host: str,
              agent: str | None) -> dict[str, Any]:
    """A component's HIVE_LOCKS row, WAITING until decided, without the lock id and the heartbeat time its
    batch gives it; a malformed component fails the call."""
    c = component
    if c.type not in LOCK_TYPE_CODES or not c.dbname:
        raise hms.MetaException(message=f"invalid lock component {c}")
    table = c.tablename.lower() if c.tablename else None
    if c.level == hms.LockLevel.PARTITION and not (table and c.partitionname):
        raise hms.MetaException(message="a partition lock needs a table and a partition name")
    if c.level == hms.LockLevel.TABLE and not table:
        raise hms.MetaException(message="a table lock needs a table name")
    return {"HL_LOCK_INT_ID": int_id, "HL_TXNID": txn_id or 0, "HL_DB": c.dbname.lower(),
            "HL_TABLE": table, "HL_PARTITION": c.partitionname, "HL_LOCK_STATE": WAITING,
            "HL_LOCK_TYPE": LOCK_TYPE_CODES[c.type],
            "HL_ACQUIRED_AT": None, "HL_USER": user or "", "HL_HOST": host or "", "HL_HEARTBEAT_COUNT": 0,
            "HL_AGENT_INFO": agent, "HL_BLOCKEDBY_EXT_ID": None, "HL_BLOCKEDBY_INT_ID": None}


def hive_lock_order(row: Any) -> tuple[bool, int, int, int]:
    """Hive's order of locks (LockInfoComparator in its TxnHandler): acquired before waiting, then from the
    least restrictive type to the most, then by lock id and component id. show_locks lists them so."""
    return row.HL_LOCK_STATE != ACQUIRED, _TYPE_RANK[row.HL_LOCK_TYPE], row.HL_LOCK_EXT_ID, row.HL_LOCK_INT_ID


def _first_block(lock_id: int, mine: Sequence[Any], others: Sequence[Any]) -> tuple[Any, Any] | None:
    """(my component, the lock blocking it) for the first component that conflicts with a held lock or an
    older waiting one; None when all can be acquired. As Hive, the blocker named is the nearest one before
    the lock in Hive's order (searched backwards): in a queue each lock waits for the one before it, so a
    release wakes only the next in line (lock_waits.py)."""
    nearest_first = sorted(others, key=hive_lock_order, reverse=True)
    for wanted in mine:
        for held in nearest_first:
            if (held.HL_LOCK_STATE == ACQUIRED or held.HL_LOCK_EXT_ID < lock_id) and _conflicts(wanted, held):
                return wanted, held
    return None


def _scopes(rows: Sequence[Any]) -> tuple[tuple[str, str | None], ...]:
    return tuple(dict.fromkeys((r.HL_DB, r.HL_TABLE) for r in rows))


def _alive(txn_id: int, lock_heartbeat: int, txn_heartbeat: int | None, since_ms: int) -> bool:
    """Whether a lock was heartbeated since `since_ms`: a plain lock by its own heartbeat, a transaction's
    lock by the transaction's."""
    beat = txn_heartbeat if txn_id else lock_heartbeat
    return beat is not None and beat >= since_ms


def _lock_with_blockers() -> Any:
    """A lock's rows, each with its transaction's state, the blocker it recorded (if that still exists) with
    the blocker's heartbeats, and the log's head: all check_lock needs to see that nothing changed."""
    mine, blocker = s.HIVE_LOCKS.alias("mine"), s.HIVE_LOCKS.alias("blocker")
    my_txn, blocker_txn, seq = s.TXNS.alias("my_txn"), s.TXNS.alias("blocker_txn"), s.NOTIFICATION_SEQUENCE
    joined = (mine.join(seq, sa_true())
              .outerjoin(my_txn, my_txn.c.TXN_ID == mine.c.HL_TXNID)
              .outerjoin(blocker, (blocker.c.HL_LOCK_EXT_ID == mine.c.HL_BLOCKEDBY_EXT_ID)
                         & (blocker.c.HL_LOCK_INT_ID == mine.c.HL_BLOCKEDBY_INT_ID))
              .outerjoin(blocker_txn, blocker_txn.c.TXN_ID == blocker.c.HL_TXNID))
    return select(mine.c.HL_DB, mine.c.HL_TABLE, mine.c.HL_LOCK_STATE, mine.c.HL_TXNID, mine.c.HL_LAST_HEARTBEAT,
                  my_txn.c.TXN_STATE, my_txn.c.TXN_LAST_HEARTBEAT.label("MY_TXN_HEARTBEAT"),
                  blocker.c.HL_LOCK_EXT_ID.label("BLOCKER"), blocker.c.HL_TXNID.label("BLOCKER_TXNID"),
                  blocker.c.HL_LAST_HEARTBEAT.label("BLOCKER_HEARTBEAT"),
                  blocker_txn.c.TXN_LAST_HEARTBEAT.label("BLOCKER_TXN_HEARTBEAT"), seq.c.NEXT_EVENT_ID
                  ).select_from(joined).where(mine.c.HL_LOCK_EXT_ID == bindparam("lock_id"))


def _head_and_locks(on: Any) -> Any:
    """The log's head and the locks `on` selects: the single NOTIFICATION_SEQUENCE row outer-joined to them, so
    there is a row (the head's, without a lock) when there are none."""
    locks, seq = s.HIVE_LOCKS, s.NOTIFICATION_SEQUENCE
    return select(seq.c.NEXT_EVENT_ID, *_decision_columns(locks)).select_from(seq.outerjoin(locks, on))


def _decision_columns(locks: Any) -> list[Any]:
    """What a lock decision reads of a HIVE_LOCKS row: fewer columns, less for the driver to decode."""
    return [locks.c[name] for name in ("HL_LOCK_EXT_ID", "HL_LOCK_INT_ID", "HL_TXNID", "HL_DB", "HL_TABLE",
                                       "HL_PARTITION", "HL_LOCK_STATE", "HL_LOCK_TYPE")]


# Built once: the lock path runs them on every poll, and building aliased joins costs more than running them.
_LOCK_WITH_BLOCKERS = _lock_with_blockers()
_LOCKS_IN_DATABASES = _head_and_locks(s.HIVE_LOCKS.c.HL_DB.in_(bindparam("dbs", expanding=True)))
_ASKED = s.HIVE_LOCKS.alias("asked")
_LOCK_AND_OTHERS = _head_and_locks(  # a lock's rows and every other lock in its databases
    s.HIVE_LOCKS.c.HL_DB.in_(select(_ASKED.c.HL_DB).where(_ASKED.c.HL_LOCK_EXT_ID == bindparam("lock_id"))))
_DECISION_MUTEX = select(s.NEXT_LOCK_ID.c.NL_NEXT).with_for_update()
_TXN_STATE = select(s.TXNS.c.TXN_STATE).where(s.TXNS.c.TXN_ID == bindparam("txn_id")).with_for_update()
_RELEASE = delete(s.HIVE_LOCKS).where(  # what unlock may release: plain locks, and any lock still waiting
    s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == bindparam("lock_id"),
    or_(s.HIVE_LOCKS.c.HL_TXNID == 0, s.HIVE_LOCKS.c.HL_LOCK_STATE != ACQUIRED))
_ACQUIRE_TXN_LOCK = update(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == bindparam("lock_id")).values(
    HL_LOCK_STATE=ACQUIRED, HL_ACQUIRED_AT=bindparam("now"), HL_BLOCKEDBY_EXT_ID=None, HL_BLOCKEDBY_INT_ID=None)
_ACQUIRE_PLAIN_LOCK = _ACQUIRE_TXN_LOCK.values(HL_LAST_HEARTBEAT=bindparam("now"))
_LOCK_ROWS = select(*_decision_columns(s.HIVE_LOCKS)).where(s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == bindparam("lock_id"))


def _txn_list(high: int, rows: Sequence[Any]) -> ValidTxnList:
    open_ids = [r.TXN_ID for r in rows if r.TXN_STATE == OPEN]
    aborted = [r.TXN_ID for r in rows if r.TXN_STATE == ABORTED]
    return ValidTxnList(high_watermark=high, min_open_id=min(open_ids, default=LONG_MAX), open_ids=tuple(open_ids),
                        aborted_ids=tuple(aborted))
