"""The HMS table lock a REST commit holds, the same exclusive lock Iceberg's HiveCatalog writers take: a HiveCatalog
writer under that lock alters the table without a compare-and-set, so a REST commit that skipped the lock could be
overwritten by one that read the table before it."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hmsproxy.handler import Handler
from hmsproxy.iceberg.errors import CommitFailed
from hmsproxy.iceberg.names import TableName
from hmsproxy.idl import hms

LOCK_USER = "hmsproxy-iceberg-rest"


@contextmanager
def table_lock(handler: Handler, name: TableName, wait_s: float) -> Iterator[None]:
    """Holds the table's exclusive lock; a lock not granted within `wait_s` fails the commit (409: the client
    retries)."""
    component = hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=name.database,
                                  tablename=name.table, isTransactional=True)
    response = handler.lock(hms.LockRequest(component=[component], user=LOCK_USER, hostname=socket.gethostname()))
    lock_id = response.lockid
    try:
        deadline = time.monotonic() + wait_s
        while response.state == hms.LockState.WAITING and time.monotonic() < deadline:
            response = handler.check_lock(hms.CheckLockRequest(lockid=lock_id))   # waits on the server side
        if response.state != hms.LockState.ACQUIRED:
            raise CommitFailed(f"Table {name} is locked by another writer (waited {wait_s:g} s)")
        yield
    finally:
        try:
            handler.unlock(hms.UnlockRequest(lockid=lock_id))
        except hms.NoSuchLockException:
            pass   # expired meanwhile: nothing to release
