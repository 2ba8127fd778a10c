"""SqlStore: the RawStore on a relational database with the Hive metastore schema."""
from __future__ import annotations

from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.databases import DatabaseStore
from hmsproxy.store.sql.functions import FunctionStore
from hmsproxy.store.sql.partitions import PartitionStore
from hmsproxy.store.sql.statistics import StatisticsStore
from hmsproxy.store.sql.tables import TableStore


class SqlStore(DatabaseStore, TableStore, PartitionStore, FunctionStore, StatisticsStore):
    """Every method is one database transaction; objects in and out are the IDL's types."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def close(self) -> None:
        self.db.dispose()
