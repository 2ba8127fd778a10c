"""Transactions through two instances on a database Hive's own script created: Hive 4.0.0's, where transaction ids
come from TXNS itself (auto-increment) and TXN_LOCK_TBL is the commit mutex, and Hive 3.1.0's, where they come
from the NEXT_TXN_ID counter (on PostgreSQL in Hive's lower-case tables): no id is given twice, every write id of
a table is given once and in commit order's reach, and every commit is kept."""
from __future__ import annotations

import threading

import pytest

from hmsproxy.idl import hms
from support.instances import connect, instances_on_one_database

THREADS = 6
TXNS_PER_THREAD = 12


def _commit_one(client, db: str, table: str) -> tuple[int, int]:
    """A writer as Hive's: open, a shared-write lock on the table, a write id, commit; (txn id, write id)."""
    [txn] = client.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
    component = hms.LockComponent(type=hms.LockType.SHARED_WRITE, level=hms.LockLevel.TABLE, dbname=db,
                                  tablename=table, operationType=hms.DataOperationType.INSERT)
    lock = client.lock(hms.LockRequest(component=[component], txnid=txn, user="u", hostname="h"))
    assert lock.state == hms.LockState.ACQUIRED
    [written] = client.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(
        dbName=db, tableName=table, txnIds=[txn])).txnToWriteIds
    client.commit_txn(hms.CommitTxnRequest(txnid=txn))
    return txn, written.writeId


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
@pytest.mark.parametrize("version", ["4.0.0", "3.1.0"])
def test_concurrent_writers_on_hives_schema_get_unique_ids_and_keep_every_commit(backend, version, tmp_path):
    with instances_on_one_database(backend, tmp_path, hive_schema=version) as (_, servers):
        committed: list[tuple[int, int]] = []
        errors: list[str] = []
        guard = threading.Lock()

        def write(thread: int) -> None:
            client = connect(servers[thread % 2])
            for _ in range(TXNS_PER_THREAD):
                try:
                    done = _commit_one(client, "default", "t")
                except Exception as exc:  # recorded: every writer must commit
                    with guard:
                        errors.append(repr(exc))
                    continue
                with guard:
                    committed.append(done)
            client.close()

        threads = [threading.Thread(target=write, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        total = THREADS * TXNS_PER_THREAD
        txn_ids, write_ids = [t for t, _ in committed], [w for _, w in committed]
        assert len(set(txn_ids)) == total
        assert sorted(write_ids) == list(range(1, total + 1))  # none lost, none doubled
        client = connect(servers[1])
        [valid] = client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=["default.t"])).tblValidWriteIds
        assert (valid.writeIdHighWaterMark, valid.invalidWriteIds) == (total, [])
        state = client.get_open_txns()
        assert state.txn_high_water_mark == max(txn_ids) and state.open_txns == []
        client.close()
