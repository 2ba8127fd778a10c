"""SqlStore: the RawStore on a relational database with the Hive metastore schema."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from hmsproxy.store.domain import LockOutcome, TableBundle, is_transactional
from hmsproxy.store.rawstore import STORE_PARTS
from hmsproxy.store.reader import Reader
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.combiner import Combiner
from hmsproxy.store.sql.database import Database, retried
from hmsproxy.store.sql.databases import DatabaseStore
from hmsproxy.store.sql.functions import FunctionStore
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lock_waits import LockReleases
from hmsproxy.store.sql.lookups import no_such_object, table_ref
from hmsproxy.store.sql.notifications import NotificationStore
from hmsproxy.store.sql.partitions import PartitionStore
from hmsproxy.store.sql.statistics import StatisticsStore
from hmsproxy.store.sql.stats_codec import row_to_obj
from hmsproxy.store.sql.tables import TableStore
from hmsproxy.store.sql.transactions import PendingLock, TransactionStore
from hmsproxy.store.sql.txn_ids import txn_ids_for


class SqlStore(DatabaseStore, TableStore, PartitionStore, FunctionStore, StatisticsStore, TransactionStore,
               NotificationStore):
    """Every method is one database transaction; objects in and out are the IDL's types."""

    def __init__(self, db: Database) -> None:
        self.db = db
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

    def get_table_bundle(self, cat: str, db_name: str, tbl_name: str,
                         partition_sink: Callable[[Any, list[Any]], None] | None = None) -> TableBundle:
        """The table with its partitions and statistics, for the cache.

        Its version (newest event id) and write ids are read first: under READ COMMITTED (PostgreSQL's
        default) later statements may see newer commits, so the content is never older than what the
        bundle claims, only possibly newer (which is safe to serve)."""
        with self.db.transaction() as conn:
            version = event_log.table_version(conn, db_name, tbl_name)
            transactional = conn.execute(select(s.TABLE_PARAMS.c.PARAM_VALUE).join(
                s.TBLS, s.TBLS.c.TBL_ID == s.TABLE_PARAMS.c.TBL_ID).join(s.DBS, s.DBS.c.DB_ID == s.TBLS.c.DB_ID).where(
                s.DBS.c.NAME == db_name, s.DBS.c.CTLG_NAME == cat, s.TBLS.c.TBL_NAME == tbl_name,
                s.TABLE_PARAMS.c.PARAM_KEY == "transactional")).scalar()
            write_ids = self.table_write_ids(conn, db_name, tbl_name) \
                if str(transactional).lower() == "true" else None
            tables = self._load_tables(conn, cat, db_name, [tbl_name])
            if not tables:
                raise no_such_object(f"{db_name}.{tbl_name} table not found")
            if is_transactional(tables[0]) and write_ids is None:  # became transactional in between
                write_ids = self.table_write_ids(conn, db_name, tbl_name)
            ref = table_ref(conn, cat, db_name, tbl_name)
            partitions: list[Any] = []
            if ref.partition_keys:
                for chunk in self._partition_id_ranges(conn, ref):
                    loaded = self._load_partitions(conn, cat, db_name, tbl_name, ref, chunk)
                    if partition_sink is None:
                        partitions += loaded
                    else:
                        partition_sink(tables[0], loaded)
            table_stats = {r.COLUMN_NAME: row_to_obj(r._mapping) for r in conn.execute(
                select(s.TAB_COL_STATS).where(s.TAB_COL_STATS.c.TBL_ID == ref.tbl_id))}
            partition_stats: dict[str, dict[str, object]] = defaultdict(dict)
            for r in conn.execute(select(s.PART_COL_STATS)
                                  .join(s.PARTITIONS, s.PARTITIONS.c.PART_ID == s.PART_COL_STATS.c.PART_ID)
                                  .where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)):
                partition_stats[r.PARTITION_NAME][r.COLUMN_NAME] = row_to_obj(r._mapping)
        return TableBundle(tables[0], partitions, table_stats, dict(partition_stats), write_ids, version)

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
