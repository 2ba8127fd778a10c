"""Locks are linearizable: two conflicting locks are never held at once, whatever instance granted them.

Several client processes take exclusive and shared-read locks on one table through two hmsproxy instances
on one database, plain and inside transactions; and through hmsproxy and the Java HMS 2.3.10 on a database
Hive's 2.3.0 script laid out, which both serve: each allocates lock ids under NEXT_LOCK_ID in the transaction
that queues the lock, and a lock defers to every conflicting one with a lower id, so neither needs the other's
decision mutex (Hive 2.3 decides under AUX_TABLE's 'CheckLock' row, hmsproxy under NEXT_LOCK_ID). Beside the
Java HMS the locks are exclusive ones only: Java 2.3.10 alone, on this workload with shared reads, lets a
shared read and an exclusive lock be held at once (seen with two Java clients and no hmsproxy). A shared checker
(one multiprocessing lock guarding counters of current holders) records every moment two conflicting holders
overlap, and a read-modify-write counter updated only under exclusive locks detects a lost update."""
from __future__ import annotations

import multiprocessing
import random
import time
import uuid

import pytest

from hmsproxy.idl import hms
from support.databases import fresh_database
from support.hive_schema import load_hive_script
from support.hmsproxy_server import start_hmsproxy_process
from support.instances import connect, instances_on_one_database
from support.reference_hms import ON_HIVES_2_3_SCHEMA, start_reference_hms_on_mariadb
from support.running import RunningServer

WORKERS = 6
ROUNDS = 25
LOCK_WAIT_S = 60.0


def _lock_until_acquired(client, request) -> int:
    """Takes the lock, polling check_lock while it is WAITING (as Hive's clients do); returns its id."""
    response = client.lock(request)
    deadline = time.monotonic() + LOCK_WAIT_S
    while response.state == hms.LockState.WAITING:
        if time.monotonic() > deadline:
            raise TimeoutError(f"lock {response.lockid} still waiting after {LOCK_WAIT_S} s")
        time.sleep(0.002)  # polling the server for another client's release
        response = client.check_lock(hms.CheckLockRequest(lockid=response.lockid))
    assert response.state == hms.LockState.ACQUIRED, response
    return response.lockid


def _worker(address: tuple[str, int], db: str, table: str, seed: int, mix: tuple[bool, bool], state, guard,
            results) -> None:
    """One client process: ROUNDS random lock rounds with a checked critical section each: exclusive locks inside
    transactions, and as `mix` says also plain ones and shared-read ones."""
    plain_locks, shared_locks = mix
    rng = random.Random(seed)
    client = connect(RunningServer(host=address[0], port=address[1], warehouse=None))
    held = {"violations": 0, "exclusive": 0, "shared": 0}
    for _ in range(ROUNDS):
        exclusive = rng.random() < 0.6 or not shared_locks
        in_txn = rng.random() < 0.5 or not plain_locks
        txn_id = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="stress", hostname="h")).txn_ids[0] \
            if in_txn else None
        component = hms.LockComponent(type=hms.LockType.EXCLUSIVE if exclusive else hms.LockType.SHARED_READ,
                                      level=hms.LockLevel.TABLE, dbname=db, tablename=table,
                                      operationType=hms.DataOperationType.INSERT if exclusive
                                      else hms.DataOperationType.SELECT)  # inserts never conflict at commit
        lock_id = _lock_until_acquired(client, hms.LockRequest(component=[component], txnid=txn_id,
                                                                user="stress", hostname="h"))
        with guard:
            if state["writers"] or (exclusive and state["readers"]):
                held["violations"] += 1
            state["writers" if exclusive else "readers"] += 1
        if exclusive:
            value = state["counter"]          # a read-modify-write that only an exclusive holder may do
            time.sleep(rng.uniform(0, 0.004))  # the critical section's work
            state["counter"] = value + 1
        else:
            time.sleep(rng.uniform(0, 0.004))
        with guard:
            state["writers" if exclusive else "readers"] -= 1
        held["exclusive" if exclusive else "shared"] += 1
        if txn_id is None:
            client.unlock(hms.UnlockRequest(lockid=lock_id))
        else:
            client.commit_txn(hms.CommitTxnRequest(txnid=txn_id))
    client.close()
    results.put(held)


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_conflicting_locks_are_never_held_at_once(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path) as (_, servers):
        _stress(servers)


def test_conflicting_locks_are_never_held_at_once_beside_the_java_hms(tmp_path):
    with fresh_database("mariadb", tmp_path) as url:
        load_hive_script("mariadb", url, "2.3.0")
        ours = start_hmsproxy_process(tmp_path / "hmsproxy", url)
        try:
            with start_reference_hms_on_mariadb(tmp_path / "java", url, ON_HIVES_2_3_SCHEMA) as java:
                _stress([ours, java], shared_locks=False)
        finally:
            ours.stop()


def _stress(servers: list[RunningServer], plain_locks: bool = True, shared_locks: bool = True) -> None:
    """WORKERS client processes, alternately through each server, ROUNDS checked lock rounds each."""
    db, table = f"locks_{uuid.uuid4().hex[:6]}", "t"
    client = connect(servers[0])
    client.create_database(hms.Database(name=db, parameters={}))
    client.close()
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        state = manager.dict(writers=0, readers=0, counter=0)
        guard, results = manager.Lock(), manager.Queue()
        workers = [context.Process(target=_worker, args=((servers[i % 2].host, servers[i % 2].port), db, table,
                                                         1000 + i, (plain_locks, shared_locks), state, guard, results))
                   for i in range(WORKERS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=300)
        assert all(w.exitcode == 0 for w in workers), [w.exitcode for w in workers]
        reports = [results.get(timeout=5) for _ in workers]
        exclusive_rounds = sum(r["exclusive"] for r in reports)
        assert sum(r["violations"] for r in reports) == 0, reports
        assert state["counter"] == exclusive_rounds, (state["counter"], exclusive_rounds)
        assert sum(r["exclusive"] + r["shared"] for r in reports) == WORKERS * ROUNDS
    check = connect(servers[1])
    assert check.show_locks(hms.ShowLocksRequest(dbname=db)).locks == []  # every lock was released
    check.close()


def _table_lock(db: str, kind: int) -> hms.LockRequest:
    return hms.LockRequest(component=[hms.LockComponent(type=kind, level=hms.LockLevel.TABLE, dbname=db,
                                                         tablename="t")], user="u", hostname="h")


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_an_exclusive_lock_is_not_starved_by_later_shared_ones(backend, tmp_path):
    """A shared lock requested after a waiting exclusive one queues behind it, through either instance."""
    with instances_on_one_database(backend, tmp_path) as (_, (a, b)):
        ca, cb = connect(a), connect(b)
        db = f"fair_{uuid.uuid4().hex[:6]}"
        ca.create_database(hms.Database(name=db, parameters={}))
        first_reader = ca.lock(_table_lock(db, hms.LockType.SHARED_READ))
        writer = cb.lock(_table_lock(db, hms.LockType.EXCLUSIVE))
        late_reader = ca.lock(_table_lock(db, hms.LockType.SHARED_READ))
        assert (first_reader.state, writer.state, late_reader.state) == (
            hms.LockState.ACQUIRED, hms.LockState.WAITING, hms.LockState.WAITING)
        ca.unlock(hms.UnlockRequest(lockid=first_reader.lockid))
        assert cb.check_lock(hms.CheckLockRequest(lockid=late_reader.lockid)).state == hms.LockState.WAITING
        assert ca.check_lock(hms.CheckLockRequest(lockid=writer.lockid)).state == hms.LockState.ACQUIRED
        cb.unlock(hms.UnlockRequest(lockid=writer.lockid))
        assert cb.check_lock(hms.CheckLockRequest(lockid=late_reader.lockid)).state == hms.LockState.ACQUIRED
        ca.unlock(hms.UnlockRequest(lockid=late_reader.lockid))
        ca.close()
        cb.close()
