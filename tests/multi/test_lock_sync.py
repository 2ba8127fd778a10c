"""A granted lock is a synchronisation point for the cache: after a commit through one instance (lock,
alter, unlock), a lock granted by another instance is followed by a read that sees the commit, even
though that instance polls the notification log only every 30 s and had the table cached."""
from __future__ import annotations

import uuid

import pytest

from hmsproxy.idl import hms
from support.builders import table
from support.instances import connect, instances_on_one_database

ROUNDS = 6


def _exclusive(db: str) -> hms.LockRequest:
    return hms.LockRequest(component=[hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE,
                                                         dbname=db, tablename="t")], user="u", hostname="h")


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_read_under_a_granted_lock_sees_every_earlier_commit(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path, 2, "--poll-interval-s", "30") as (_, servers):
        db = f"sync_{uuid.uuid4().hex[:6]}"
        clients = [connect(server) for server in servers]
        clients[0].create_database(hms.Database(name=db, parameters={}))
        clients[0].create_table(table(hms, db, "t", table_type="EXTERNAL_TABLE",
                                      params={"EXTERNAL": "TRUE", "metadata_location": "v0"}))
        for client in clients:  # both instances read (and so cache) the table
            assert client.get_table(db, "t").parameters["metadata_location"] == "v0"
        for round_ in range(1, ROUNDS + 1):
            writer = clients[round_ % 2]  # the commit alternates between the instances
            lock = writer.lock(_exclusive(db))
            assert lock.state == hms.LockState.ACQUIRED
            current = writer.get_table(db, "t")
            assert current.parameters["metadata_location"] == f"v{round_ - 1}", "a read under the lock was stale"
            current.parameters["metadata_location"] = f"v{round_}"
            writer.alter_table(db, "t", current)
            writer.unlock(hms.UnlockRequest(lockid=lock.lockid))
        for client in clients:
            client.close()
