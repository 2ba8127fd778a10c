"""SqlStore: the RawStore on a relational database with the Hive metastore schema."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

from sqlalchemy import select

from hmsproxy.store.rawstore import TableBundle, is_transactional
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.databases import DatabaseStore
from hmsproxy.store.sql.functions import FunctionStore
from hmsproxy.store.sql.lookups import no_such_object, table_ref
from hmsproxy.store.sql.notifications import NotificationStore
from hmsproxy.store.sql.partitions import PartitionStore
from hmsproxy.store.sql.statistics import StatisticsStore
from hmsproxy.store.sql.stats_codec import row_to_obj
from hmsproxy.store.sql.tables import TableStore
from hmsproxy.store.sql.transactions import TransactionStore


class SqlStore(DatabaseStore, TableStore, PartitionStore, FunctionStore, StatisticsStore, TransactionStore,
               NotificationStore):
    """Every method is one database transaction; objects in and out are the IDL's types."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get_table_bundle(self, cat: str, db_name: str, tbl_name: str,
                         partition_sink: Callable[[Any, list[Any]], None] | None = None) -> TableBundle:
        with self.db.transaction() as conn:
            tables = self._load_tables(conn, cat, db_name, [tbl_name])
            if not tables:
                raise no_such_object(f"{db_name}.{tbl_name} table not found")
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
            for r in conn.execute(select(s.PART_COL_STATS).join(s.PARTITIONS, s.PARTITIONS.c.PART_ID == s.PART_COL_STATS.c.PART_ID)
                                  .where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)):
                partition_stats[r.PARTITION_NAME][r.COLUMN_NAME] = row_to_obj(r._mapping)
            write_ids = self.table_write_ids(conn, db_name, tbl_name) if is_transactional(tables[0]) else None
        return TableBundle(tables[0], partitions, table_stats, dict(partition_stats), write_ids)

    def close(self) -> None:
        self.db.dispose()
