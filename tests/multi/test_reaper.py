"""Abandoned locks and transactions expire: a client killed with SIGKILL while holding a lock and an open
transaction blocks nobody after the timeout, and a client that heartbeats keeps its lock."""
from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from hmsproxy.idl import hms
from support.instances import connect, instances_on_one_database
from support.polling import wait_for

TIMEOUT_S = 2.0  # where the test waits for the reaper: short, so that it does not wait long
# Where a live client must keep its lock: a timeout a machine stall cannot reach between two heartbeats, watched
# for longer than the timeout so that only the heartbeats can have kept the lock.
LIVE_TIMEOUT_S = 8.0
HEARTBEAT_EVERY_S = 0.25
REAPER_INTERVAL_S = 0.25
BOUND_S = 30.0  # only bounds a broken test

HOLDER = """
import sys, time
import thriftpy2.rpc
from hmsproxy.idl import hms
client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, "127.0.0.1", int(sys.argv[1]), timeout=60000)
db = sys.argv[2]
table_lock = client.lock(hms.LockRequest(component=[hms.LockComponent(
    type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename="plain")], user="u", hostname="h"))
txn = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids[0]
txn_lock = client.lock(hms.LockRequest(component=[hms.LockComponent(
    type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename="acid")], txnid=txn,
    user="u", hostname="h"))
print(table_lock.lockid, table_lock.state, txn, txn_lock.state, flush=True)
time.sleep(3600)
"""


def _exclusive(db: str, table: str) -> hms.LockRequest:
    return hms.LockRequest(component=[hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE,
                                                         dbname=db, tablename=table)], user="u", hostname="h")


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_killed_clients_lock_and_transaction_are_reaped(backend, tmp_path):
    args = ("--txn-timeout-s", str(TIMEOUT_S), "--txn-reaper-interval-s", str(REAPER_INTERVAL_S))
    with instances_on_one_database(backend, tmp_path, 2, *args) as (_, (a, b)):
        db = f"reap_{uuid.uuid4().hex[:6]}"
        client = connect(b)
        client.create_database(hms.Database(name=db, parameters={}))
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(a.port), db], stdout=subprocess.PIPE, text=True)
        lock_id, lock_state, txn_id, txn_lock_state = map(int, holder.stdout.readline().split())
        assert (lock_state, txn_lock_state) == (hms.LockState.ACQUIRED, hms.LockState.ACQUIRED)
        holder.kill()
        holder.wait()
        killed_at = time.monotonic()
        waiting = client.lock(_exclusive(db, "plain"))
        assert waiting.state == hms.LockState.WAITING  # the dead client's lock still holds: no early release
        held = {lock.lockid for lock in client.show_locks(hms.ShowLocksRequest(dbname=db)).locks}
        assert lock_id in held

        def reaped() -> bool:  # show_locks and get_open_txns_info expire nothing themselves: the reaper did
            client.heartbeat(hms.HeartbeatRequest(lockid=waiting.lockid))  # the waiting client is alive
            locks = {lock.lockid for lock in client.show_locks(hms.ShowLocksRequest(dbname=db)).locks}
            txns = {t.id: t.state for t in client.get_open_txns_info().open_txns}
            return lock_id not in locks and txns.get(txn_id) == hms.TxnState.ABORTED

        wait_for(reaped, "the killed client's lock released and its transaction aborted", BOUND_S)
        assert time.monotonic() - killed_at >= TIMEOUT_S - 0.5
        assert client.check_lock(hms.CheckLockRequest(lockid=waiting.lockid)).state == hms.LockState.ACQUIRED
        assert client.lock(_exclusive(db, "acid")).state == hms.LockState.ACQUIRED
        with pytest.raises(hms.TxnAbortedException):
            client.commit_txn(hms.CommitTxnRequest(txnid=txn_id))
        client.close()


def test_heartbeats_keep_a_lock_past_the_timeout(tmp_path):
    args = ("--txn-timeout-s", str(LIVE_TIMEOUT_S), "--txn-reaper-interval-s", str(REAPER_INTERVAL_S))
    with instances_on_one_database("sqlite", tmp_path, 1, *args) as (_, (server,)):
        client = connect(server)
        client.create_database(hms.Database(name="d", parameters={}))
        lock = client.lock(_exclusive("d", "t"))
        [txn] = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
        until = time.monotonic() + 1.5 * LIVE_TIMEOUT_S
        while time.monotonic() < until:  # a live client: heartbeats well within the timeout
            client.heartbeat(hms.HeartbeatRequest(lockid=lock.lockid))
            client.heartbeat(hms.HeartbeatRequest(txnid=txn))
            time.sleep(HEARTBEAT_EVERY_S)
        [held] = client.show_locks(hms.ShowLocksRequest(dbname="d")).locks
        assert (held.lockid, held.state) == (lock.lockid, hms.LockState.ACQUIRED)
        assert {t.id: t.state for t in client.get_open_txns_info().open_txns}[txn] == hms.TxnState.OPEN
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))
        client.close()


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_polling_check_lock_keeps_waiting_locks_alive(backend, tmp_path):
    """A client that only polls check_lock (as Hive's and Iceberg's clients do while they wait) keeps its
    waiting lock and its transaction alive, even though polls of an unchanged lock are answered by a read
    and heartbeat only now and then; the lock is granted at the first poll after the holder lets go."""
    # a WAITING poll is held for --check-lock-wait-s: short, so one round of the loop stays well within the timeout
    args = ("--txn-timeout-s", str(LIVE_TIMEOUT_S), "--txn-reaper-interval-s", str(REAPER_INTERVAL_S),
            "--check-lock-wait-s", "0.1")
    with instances_on_one_database(backend, tmp_path, 2, *args) as (_, (a, b)):
        holder, waiter = connect(a), connect(b)
        db = f"poll_{uuid.uuid4().hex[:6]}"
        holder.create_database(hms.Database(name=db, parameters={}))
        held = [holder.lock(_exclusive(db, table)) for table in ("plain", "acid")]
        assert [lock.state for lock in held] == [hms.LockState.ACQUIRED] * 2
        plain = waiter.lock(_exclusive(db, "plain"))
        [txn] = waiter.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
        in_txn = waiter.lock(hms.LockRequest(component=_exclusive(db, "acid").component, txnid=txn,
                                             user="u", hostname="h"))
        until = time.monotonic() + 1.5 * LIVE_TIMEOUT_S
        while time.monotonic() < until:
            for lock in (plain, in_txn):
                for mine in held:  # the holder stays alive throughout
                    holder.heartbeat(hms.HeartbeatRequest(lockid=mine.lockid))
                assert waiter.check_lock(hms.CheckLockRequest(lockid=lock.lockid)).state == hms.LockState.WAITING
            time.sleep(HEARTBEAT_EVERY_S)  # the clients' polling interval
        assert {t.id: t.state for t in waiter.get_open_txns_info().open_txns}[txn] == hms.TxnState.OPEN
        for lock in held:
            holder.unlock(hms.UnlockRequest(lockid=lock.lockid))
        for lock in (plain, in_txn):
            assert waiter.check_lock(hms.CheckLockRequest(lockid=lock.lockid)).state == hms.LockState.ACQUIRED
        waiter.commit_txn(hms.CommitTxnRequest(txnid=txn))
        waiter.unlock(hms.UnlockRequest(lockid=plain.lockid))
        holder.close()
        waiter.close()
