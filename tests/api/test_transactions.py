"""Transactions, write ids and locks over the wire, on every backend."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A

from hmsproxy.hive.write_ids import ValidTxnList, ValidWriteIdList
from hmsproxy.idl import hms

L = hms.LockType
LEVEL = hms.LockLevel


def _open(client, count=1):
    return client.open_txns(hms.OpenTxnRequest(num_txns=count, user="u", hostname="h")).txn_ids


def _component(kind, db, table=None, level=None, operation=None):
    level = level or (LEVEL.TABLE if table else LEVEL.DB)
    return hms.LockComponent(type=kind, level=level, dbname=db, tablename=table,
                             operationType=operation or hms.DataOperationType.SELECT)


def _lock(client, *components, txnid=None):
    return client.lock(hms.LockRequest(component=list(components), txnid=txnid, user="u", hostname="h"))


def test_open_commit_abort_and_the_open_list(client):
    t1, t2, t3 = _open(client, 3)
    assert t2 == t1 + 1 and t3 == t1 + 2
    client.commit_txn(hms.CommitTxnRequest(txnid=t1))
    client.abort_txn(hms.AbortTxnRequest(txnid=t2))
    state = client.get_open_txns()
    assert state.txn_high_water_mark >= t3
    assert t1 not in state.open_txns and t2 in state.open_txns and t3 in state.open_txns
    aborted_bit = state.open_txns.index(t2)
    assert state.abortedBits[aborted_bit // 8] >> (aborted_bit % 8) & 1
    info = {t.id: t.state for t in client.get_open_txns_info().open_txns}
    assert info[t2] == hms.TxnState.ABORTED and info[t3] == hms.TxnState.OPEN
    with pytest.raises(hms.TxnAbortedException):
        client.commit_txn(hms.CommitTxnRequest(txnid=t2))
    with pytest.raises(hms.NoSuchTxnException):
        client.abort_txn(hms.AbortTxnRequest(txnid=t1))            # committed: gone, or kept as committed (Hive 4)
    with pytest.raises(hms.NoSuchTxnException):
        client.abort_txn(hms.AbortTxnRequest(txnid=t3 + 1000))
    client.commit_txn(hms.CommitTxnRequest(txnid=t3))


def test_hive_2_3_and_hive_4_clients_read_the_same_open_transactions(client, hclient):
    """Hive 2.3's IDL declares open_txns a set<i64>, Hive 3+'s a list<i64>: the answer carries both, so hmsclient
    (2.3) and our client (Hive 4's IDL) read the same ids."""
    t1, t2, t3 = _open(client, 3)
    client.commit_txn(hms.CommitTxnRequest(txnid=t1))
    client.abort_txn(hms.AbortTxnRequest(txnid=t2))
    ours, theirs = client.get_open_txns(), hclient.get_open_txns()
    assert isinstance(theirs.open_txns, set) and {t2, t3} <= theirs.open_txns and t1 not in theirs.open_txns
    assert theirs.open_txns == set(ours.open_txns)
    assert (theirs.txn_high_water_mark, theirs.min_open_txn) == (ours.txn_high_water_mark, ours.min_open_txn)
    client.commit_txn(hms.CommitTxnRequest(txnid=t3))


def test_write_ids_and_valid_write_id_lists(client, db, backend_server):
    table = f"{db}.acid"
    if backend_server.hive_schema == "2.3.0":  # its layout has no write ids: refused, declared
        [txn] = _open(client, 1)
        with pytest.raises(hms.MetaException, match=r"Hive's schema 2\.3\.0, which has no place for table write ids"):
            client.allocate_table_write_ids(
                hms.AllocateTableWriteIdsRequest(dbName=db, tableName="acid", txnIds=[txn]))
        with pytest.raises(hms.MetaException, match=r"Hive's schema 2\.3\.0, which has no place for table write ids"):
            client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=[table]))
        return
    t1, t2, t3 = _open(client, 3)
    first = client.allocate_table_write_ids(
        hms.AllocateTableWriteIdsRequest(dbName=db, tableName="acid", txnIds=[t1, t2]))
    assert [(x.txnId, x.writeId) for x in first.txnToWriteIds] == [(t1, 1), (t2, 2)]
    again = client.allocate_table_write_ids(
        hms.AllocateTableWriteIdsRequest(dbName=db, tableName="acid", txnIds=[t2, t3]))
    assert [(x.txnId, x.writeId) for x in again.txnToWriteIds] == [(t2, 2), (t3, 3)]
    client.commit_txn(hms.CommitTxnRequest(txnid=t1))
    client.abort_txn(hms.AbortTxnRequest(txnid=t3))
    [now] = client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=[table])).tblValidWriteIds
    assert (now.writeIdHighWaterMark, now.invalidWriteIds, now.minOpenWriteId) == (3, [2, 3], 2)
    assert now.abortedBits == bytes([0b10])                        # 3 (second invalid id) is aborted
    # as seen by a snapshot taken before t1 committed: write id 1 is not valid yet
    before = str(ValidTxnList(high_watermark=t3, open_ids=(t1, t2, t3)))
    [then] = client.get_valid_write_ids(
        hms.GetValidWriteIdsRequest(fullTableNames=[table], validTxnList=before)).tblValidWriteIds
    assert then.invalidWriteIds == [1, 2, 3]
    with pytest.raises(hms.TxnAbortedException):
        client.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(dbName=db, tableName="acid", txnIds=[t3]))
    client.commit_txn(hms.CommitTxnRequest(txnid=t2))
    [done] = client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=[table])).tblValidWriteIds
    assert str(ValidWriteIdList.of(table, 3, [], [3])) == f"{table}:3:9223372036854775807::3"
    assert (done.writeIdHighWaterMark, done.invalidWriteIds) == (3, [3])


def test_exclusive_and_shared_locks(client, db):
    exclusive = _lock(client, _component(L.EXCLUSIVE, db, "t"))
    assert exclusive.state == hms.LockState.ACQUIRED
    reader = _lock(client, _component(L.SHARED_READ, db, "t"))
    assert reader.state == hms.LockState.WAITING
    other_table = _lock(client, _component(L.SHARED_WRITE, db, "u"))
    assert other_table.state == hms.LockState.ACQUIRED
    assert client.check_lock(hms.CheckLockRequest(lockid=reader.lockid)).state == hms.LockState.WAITING
    shown = {x.lockid: x.state for x in client.show_locks(hms.ShowLocksRequest(dbname=db)).locks}
    assert shown == {exclusive.lockid: hms.LockState.ACQUIRED, reader.lockid: hms.LockState.WAITING,
                     other_table.lockid: hms.LockState.ACQUIRED}
    client.unlock(hms.UnlockRequest(lockid=exclusive.lockid))
    assert client.check_lock(hms.CheckLockRequest(lockid=reader.lockid)).state == hms.LockState.ACQUIRED
    second_reader = _lock(client, _component(L.SHARED_READ, db, "t"))
    assert second_reader.state == hms.LockState.ACQUIRED            # shared reads live together
    database_lock = _lock(client, _component(L.EXCLUSIVE, db))
    assert database_lock.state == hms.LockState.WAITING             # a database lock covers its tables
    for lock in (reader, second_reader, other_table, database_lock):
        client.unlock(hms.UnlockRequest(lockid=lock.lockid))
    with pytest.raises(hms.NoSuchLockException):
        client.check_lock(hms.CheckLockRequest(lockid=reader.lockid))


def test_transaction_locks_go_with_commit_and_cannot_be_unlocked(client, db):
    [txn] = _open(client)
    lock = _lock(client, _component(L.SHARED_WRITE, db, "t", operation=hms.DataOperationType.INSERT), txnid=txn)
    assert lock.state == hms.LockState.ACQUIRED
    with pytest.raises(hms.TxnOpenException):
        client.unlock(hms.UnlockRequest(lockid=lock.lockid))
    client.heartbeat(hms.HeartbeatRequest(txnid=txn, lockid=lock.lockid))
    blocked = _lock(client, _component(L.EXCLUSIVE, db, "t"))
    assert blocked.state == hms.LockState.WAITING
    client.commit_txn(hms.CommitTxnRequest(txnid=txn))
    assert client.check_lock(hms.CheckLockRequest(lockid=blocked.lockid)).state == hms.LockState.ACQUIRED
    client.unlock(hms.UnlockRequest(lockid=blocked.lockid))
    result = client.heartbeat_txn_range(hms.HeartbeatTxnRangeRequest(min=txn, max=txn + 1))
    assert txn in result.nosuch


def test_pyiceberg_commit_flow_with_hive_client(hclient, db):
    """lock EXCLUSIVE on the table, check_lock while waiting, alter, unlock: what every pyiceberg commit does."""
    request = A.LockRequest(component=[A.LockComponent(type=A.LockType.EXCLUSIVE, level=A.LockLevel.TABLE,
                                                       dbname=db, tablename="ice")], user="u", hostname="h")
    first = hclient.lock(request)
    second = hclient.lock(request)
    assert (first.state, second.state) == (A.LockState.ACQUIRED, A.LockState.WAITING)
    assert hclient.check_lock(A.CheckLockRequest(lockid=second.lockid)).state == A.LockState.WAITING
    hclient.unlock(A.UnlockRequest(lockid=first.lockid))
    assert hclient.check_lock(A.CheckLockRequest(lockid=second.lockid)).state == A.LockState.ACQUIRED
    hclient.unlock(A.UnlockRequest(lockid=second.lockid))
    hclient.unlock(A.UnlockRequest(lockid=second.lockid))  # idempotent, as Hive: a retried unlock succeeds
    assert not hclient.show_locks(A.ShowLocksRequest(dbname=db)).locks


def test_bad_lock_requests_are_refused_and_leave_nothing(client, db):
    from thriftpy2.thrift import TApplicationException
    with pytest.raises(TApplicationException, match="table lock needs a table name"):
        _lock(client, _component(L.EXCLUSIVE, db, None, level=LEVEL.TABLE))
    assert not client.show_locks(hms.ShowLocksRequest(dbname=db)).locks


def _writer(client, db, table, operation, write_ids=True):
    """A transaction holding a SHARED_WRITE lock for an update or delete of the table, with a write id (a writer
    of Hive 2.3, whose layout has none, takes none)."""
    [txn] = _open(client)
    lock = _lock(client, _component(L.SHARED_WRITE, db, table, operation=operation), txnid=txn)
    assert lock.state == hms.LockState.ACQUIRED  # shared writes live together: conflicts are found at commit
    if write_ids:
        client.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=[txn]))
    return txn


def test_concurrent_updates_of_one_table_cannot_both_commit(client, db, backend_server):
    update, delete = hms.DataOperationType.UPDATE, hms.DataOperationType.DELETE
    write_ids = backend_server.hive_schema != "2.3.0"
    first, second = _writer(client, db, "w", update, write_ids), _writer(client, db, "w", update, write_ids)
    client.commit_txn(hms.CommitTxnRequest(txnid=first))
    with pytest.raises(hms.TxnAbortedException) as lost:
        client.commit_txn(hms.CommitTxnRequest(txnid=second))
    assert lost.value.message.startswith(f"Aborting [txnid:{second},")
    assert lost.value.message.endswith(f"due to a write conflict on {db}/w committed by [txnid:{first},"
                                       f"{lost.value.message.split(',')[1].split(']')[0]}] u/u")
    assert {t.id: t.state for t in client.get_open_txns_info().open_txns}[second] == hms.TxnState.ABORTED
    if write_ids:
        [ids] = client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=[f"{db}.w"])).tblValidWriteIds
        assert ids.invalidWriteIds == [2]  # the second writer's data stays invisible
    assert not client.show_locks(hms.ShowLocksRequest(dbname=db, tablename="w")).locks
    # deletes beside deletes, and a writer that began after the other committed, do not conflict
    d1, d2 = _writer(client, db, "w", delete, write_ids), _writer(client, db, "w", delete, write_ids)
    client.commit_txn(hms.CommitTxnRequest(txnid=d1))
    client.commit_txn(hms.CommitTxnRequest(txnid=d2))
    later = _writer(client, db, "w", update, write_ids)
    client.commit_txn(hms.CommitTxnRequest(txnid=later))
    other_table = [_writer(client, db, "w", update, write_ids), _writer(client, db, "v", update, write_ids)]
    for txn in other_table:
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))
