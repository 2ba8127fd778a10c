"""SqlStore: the RawStore on a relational database with the Hive metastore schema."""
from __future__ import annotations

from typing import Any

from hmsproxy.store.domain import LockOutcome
from hmsproxy.store.rawstore import STORE_PARTS
from hmsproxy.store.reader import Reader
from hmsproxy.store.sql.bundles import BundleStore
from hmsproxy.store.sql.combiner import Combiner
from hmsproxy.store.sql.database import Database, retried
from hmsproxy.store.sql.databases import DatabaseStore
from hmsproxy.store.sql.functions import FunctionStore
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lock_waits import LockReleases
from hmsproxy.store.sql.locks import PendingLock
from hmsproxy.store.sql.notifications import NotificationStore
from hmsproxy.store.sql.partitions import PartitionStore
from hmsproxy.store.sql.remembered_tables import RememberedTables
from hmsproxy.store.sql.statistics import StatisticsStore
from hmsproxy.store.sql.tables import TableStore
from hmsproxy.store.sql.transactions import TransactionStore
from hmsproxy.store.sql.txn_ids import txn_ids_for


class SqlStore(BundleStore, DatabaseStore, TableStore, PartitionStore, FunctionStore, StatisticsStore,
               TransactionStore, NotificationStore):
    """Every method is one database transaction; objects in and out are the IDL's types."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.remembered_tables = RememberedTables()
        db.adopt(Layout.read(db.engine))
        self.layout = db.layout
        self.txn_ids = txn_ids_for(self.layout)
        self.lock_releases = LockReleases()
        self.lock_requests: Combiner[PendingLock, LockOutcome] = Combiner(self._lock_batch)

    @property
    def keeps_write_ids(self) -> bool:
        return self.layout.write_ids

    def kept(self, obj: Any) -> Any:
        return self.layout.forget(obj)

    def serving(self, reader: Reader) -> SqlStore:
        return self

    def close(self) -> None:
        self.db.dispose()


# Every store call is repeated whole when the database fails it with a conflict (database.py). Not the
# bundle read: its partitions stream into the caller's sink, which a repeat would fill twice. Not lock: its
# batches (several callers' requests in one transaction) are repeated whole instead.
NOT_RETRIED = frozenset({"get_table_bundle", "close", "lock"})
for _name in [n for part in STORE_PARTS for n, v in vars(part).items() if callable(v) and not n.startswith("_")]:
    if _name not in NOT_RETRIED:
        setattr(SqlStore, _name, retried(getattr(SqlStore, _name)))
