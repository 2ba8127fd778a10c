"""Locks in Hive's tables (HIVE_LOCKS, NEXT_LOCK_ID): requested, decided, checked, released and listed.

Lock ids come from the single-row NEXT_LOCK_ID table, read with SELECT ... FOR UPDATE inside the call's transaction,
so several metastore instances on one database hand out unique ids and see one lock table.

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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Protocol, TypedDict

from sqlalchemy import ColumnElement, Connection, Select, TableClause, bindparam, delete, insert, or_, select, update
from sqlalchemy import true as sa_true

from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.store.domain import LockOutcome, ShowLocksResponseElement
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.combiner import Combiner
from hmsproxy.store.sql.expiry import Expiry
from hmsproxy.store.sql.sequences import next_value
from hmsproxy.store.sql.txns import ABORTED, OPEN, now_ms

ACQUIRED, WAITING = "a", "w"
LOCK_TYPE_CODES = {hms.LockType.SHARED_READ: "r", hms.LockType.SHARED_WRITE: "w",
                   hms.LockType.EXCL_WRITE: "x", hms.LockType.EXCLUSIVE: "e"}
LOCK_CODE_TYPES = {code: kind for kind, code in LOCK_TYPE_CODES.items()}
_TYPE_RANK = {"r": 0, "w": 1, "x": 2, "e": 3}
# Which held lock types a requested type can live with (Hive's lock compatibility matrix).
COMPATIBLE = {"r": {"r", "w", "x"}, "w": {"r", "w"}, "x": {"r"}, "e": set()}
_LOCK_STATES = {ACQUIRED: hms.LockState.ACQUIRED, WAITING: hms.LockState.WAITING}
RECHECK_S = 0.05  # a held check_lock reads again this often, for releases through other instances
WRITE_OPERATIONS = {hms.DataOperationType.INSERT: "i", hms.DataOperationType.UPDATE: "u",
                    hms.DataOperationType.DELETE: "d"}


class LockRow(Protocol):
    """What a lock decision reads of a lock component: a HIVE_LOCKS row read, or one about to be written."""
    HL_LOCK_EXT_ID: int
    HL_LOCK_INT_ID: int
    HL_TXNID: int
    HL_DB: str
    HL_TABLE: str | None
    HL_PARTITION: str | None
    HL_LOCK_STATE: str
    HL_LOCK_TYPE: str


class LockValues(TypedDict):
    """A component's HIVE_LOCKS row before its batch decides it (`_lock_row`)."""
    HL_LOCK_INT_ID: int
    HL_TXNID: int
    HL_DB: str
    HL_TABLE: str | None
    HL_PARTITION: str | None
    HL_LOCK_STATE: str
    HL_LOCK_TYPE: str
    HL_ACQUIRED_AT: int | None
    HL_USER: str
    HL_HOST: str
    HL_HEARTBEAT_COUNT: int
    HL_AGENT_INFO: str | None
    HL_BLOCKEDBY_EXT_ID: int | None
    HL_BLOCKEDBY_INT_ID: int | None


@dataclass(frozen=True)
class PendingLock:
    """A lock request waiting for its batch: its rows, checked and filled but for the id and the times."""
    components: tuple[hms.LockComponent, ...]
    txn_id: int | None
    rows: list[LockValues]


@dataclass(frozen=True)
class _Undecided:
    """check_lock's one read could not answer: the full decision, with what it must do first."""

    heartbeat: bool  # the lock's (or its transaction's) heartbeat is due
    expire: bool     # a blocker may be abandoned: expire what was before deciding


def _scope_overlaps(a: LockRow, b: LockRow) -> bool:
    if a.HL_DB != b.HL_DB:
        return False
    if a.HL_TABLE is None or b.HL_TABLE is None:
        return True
    if a.HL_TABLE != b.HL_TABLE:
        return False
    return a.HL_PARTITION is None or b.HL_PARTITION is None or a.HL_PARTITION == b.HL_PARTITION


def _database_read_beside_table_lock(a: LockRow, b: LockRow) -> bool:
    """Hive lets a database-level SHARED_READ (a query's guard against DROP DATABASE) live beside an
    EXCLUSIVE lock on one of the database's tables, in either order (2.3 and 4 alike)."""
    return a.HL_TABLE is None and a.HL_LOCK_TYPE == "r" and b.HL_TABLE is not None and b.HL_LOCK_TYPE == "e"


def _conflicts(wanted: LockRow, held: LockRow) -> bool:
    if wanted.HL_TXNID and wanted.HL_TXNID == held.HL_TXNID:
        return False  # a transaction's own locks never block it
    if _database_read_beside_table_lock(wanted, held) or _database_read_beside_table_lock(held, wanted):
        return False
    return _scope_overlaps(wanted, held) and (
        held.HL_LOCK_TYPE not in COMPATIBLE[wanted.HL_LOCK_TYPE]
        or wanted.HL_LOCK_TYPE not in COMPATIBLE[held.HL_LOCK_TYPE])


class Locks(Expiry):
    """The locks of SqlStore's transaction part (transactions.py), which gives them `lock_requests` (a Combiner of
    `_lock_batch`)."""

    lock_requests: Combiner[PendingLock, LockOutcome]
    check_lock_wait_s: float = 0.0  # how long check_lock holds a WAITING answer (SqlStore takes the flag's value)

    def lock(self, components: Sequence[hms.LockComponent], txn_id: int | None, user: str, host: str,
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
            now = now_ms()
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
    def _locks_in(conn: Connection, dbs: set[str]) -> tuple[int, list[LockRow]]:
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
        now = now_ms()
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
    def _lock_and_others(conn: Connection, lock_id: int) -> tuple[int, list[LockRow], list[LockRow]]:
        """The log's head, the lock's rows and the other locks in its databases, in one statement."""
        result = conn.execute(_LOCK_AND_OTHERS, {"lock_id": lock_id}).all()
        mine: list[LockRow] = [row for row in result if row.HL_LOCK_EXT_ID == lock_id]
        if not mine:
            raise hms.NoSuchLockException(message=f"No such lock lockid:{lock_id}")
        return result[0].NEXT_EVENT_ID - 1, mine, [row for row in result if row.HL_LOCK_EXT_ID not in (None, lock_id)]

    @staticmethod
    def _decide(conn: Connection, lock_id: int, head: int, mine: Sequence[LockRow],
                others: Sequence[LockRow]) -> LockOutcome:
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
        now = now_ms()  # a transaction's locks live by its heartbeats, a plain lock by its own
        conn.execute(_ACQUIRE_TXN_LOCK if mine[0].HL_TXNID else _ACQUIRE_PLAIN_LOCK, {"lock_id": lock_id, "now": now})
        return LockOutcome(lock_id, hms.LockState.ACQUIRED, _scopes(mine), head)

    @staticmethod
    def _lock_rows(conn: Connection, lock_id: int) -> list[LockRow]:
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


def _lock_row(int_id: int, component: hms.LockComponent, txn_id: int | None, user: str, host: str,
              agent: str | None) -> LockValues:
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


def hive_lock_order(row: LockRow) -> tuple[bool, int, int, int]:
    """Hive's order of locks (LockInfoComparator in its TxnHandler): acquired before waiting, then from the
    least restrictive type to the most, then by lock id and component id. show_locks lists them so."""
    return row.HL_LOCK_STATE != ACQUIRED, _TYPE_RANK[row.HL_LOCK_TYPE], row.HL_LOCK_EXT_ID, row.HL_LOCK_INT_ID


def _first_block(lock_id: int, mine: Sequence[LockRow], others: Sequence[LockRow]) -> tuple[LockRow, LockRow] | None:
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


def _scopes(rows: Sequence[LockRow]) -> tuple[tuple[str, str | None], ...]:
    return tuple(dict.fromkeys((r.HL_DB, r.HL_TABLE) for r in rows))


def _alive(txn_id: int, lock_heartbeat: int, txn_heartbeat: int | None, since_ms: int) -> bool:
    """Whether a lock was heartbeated since `since_ms`: a plain lock by its own heartbeat, a transaction's
    lock by the transaction's."""
    beat = txn_heartbeat if txn_id else lock_heartbeat
    return beat is not None and beat >= since_ms


def _lock_with_blockers() -> Select[Any]:
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


def _head_and_locks(on: ColumnElement[bool]) -> Select[Any]:
    """The log's head and the locks `on` selects: the single NOTIFICATION_SEQUENCE row outer-joined to them, so
    there is a row (the head's, without a lock) when there are none."""
    locks, seq = s.HIVE_LOCKS, s.NOTIFICATION_SEQUENCE
    return select(seq.c.NEXT_EVENT_ID, *_decision_columns(locks)).select_from(seq.outerjoin(locks, on))


def _decision_columns(locks: TableClause) -> list[ColumnElement[Any]]:
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
_RELEASE = delete(s.HIVE_LOCKS).where(  # what unlock may release: plain locks, and any lock still waiting
    s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == bindparam("lock_id"),
    or_(s.HIVE_LOCKS.c.HL_TXNID == 0, s.HIVE_LOCKS.c.HL_LOCK_STATE != ACQUIRED))
_ACQUIRE_TXN_LOCK = update(s.HIVE_LOCKS).where(s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == bindparam("lock_id")).values(
    HL_LOCK_STATE=ACQUIRED, HL_ACQUIRED_AT=bindparam("now"), HL_BLOCKEDBY_EXT_ID=None, HL_BLOCKEDBY_INT_ID=None)
_ACQUIRE_PLAIN_LOCK = _ACQUIRE_TXN_LOCK.values(HL_LAST_HEARTBEAT=bindparam("now"))
_LOCK_ROWS = select(*_decision_columns(s.HIVE_LOCKS)).where(s.HIVE_LOCKS.c.HL_LOCK_EXT_ID == bindparam("lock_id"))
