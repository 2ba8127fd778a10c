"""Tables that this process's writes have read, so that the next add of partitions to one can plan from memory
and skip reading the table (one round trip fewer per add, on MySQL/MariaDB the write's only other one).

An add on MySQL/MariaDB holds its table's `unchanged` assumption, planned from memory or from a fresh read alike:
the query that appends its events (and with them its rows) numbers them only where the table's row still has the
remembered id, database, name and storage descriptor, that descriptor the remembered column descriptor, and the
table the remembered partition keys; otherwise the write fails with event_log.StalePlan, writes nothing, and is
planned again from what the database holds. The checks are locking reads: a drop or an alter of the table that
is under way finishes first and is seen, and none starts before the add commits (a drop locks the table's row
first), so no partition is added to a table that is gone. A table's columns need no comparison: a column
descriptor is never changed once written (an altered table gets a new one, in Hive as here), so the same CD_ID
means the same columns.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from cachetools import LRUCache
from sqlalchemy import ColumnElement, Connection, and_, func, literal, select

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.lookups import TableRef

TableKey = tuple[str, str, str]   # catalog, database, table
REMEMBERED = 10_000   # tables; a few hundred bytes each


@dataclass(frozen=True)
class Assumption:
    """A condition a write was planned on without reading it, and its SQL as the database renders it (built once:
    rendering took longer than the rest of planning the write)."""
    condition: ColumnElement[bool]
    sql: str


@dataclass(frozen=True)
class Remembered:
    ref: TableRef
    unchanged: Assumption   # that the table is still the one `ref` describes


class RememberedTables:
    """The TableRef (with columns) that a write last read, by table; bounded, least recently used out first."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self._tables: LRUCache[TableKey, Remembered] = LRUCache(size)
        self._lock = threading.Lock()   # LRUCache is not safe for concurrent updates

    def get(self, key: TableKey) -> Remembered | None:
        with self._lock:
            return self._tables.get(key)

    def remember(self, conn: Connection, key: TableKey, ref: TableRef) -> Remembered:
        """`ref` (read with its columns) as read in `conn`'s transaction, for this write and later ones."""
        condition = and_(*_unchanged(ref, key[2]))
        sql = str(condition.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        remembered = Remembered(ref, Assumption(condition, sql))
        with self._lock:
            self._tables[key] = remembered
        return remembered

    def forget(self, key: TableKey) -> None:
        with self._lock:
            self._tables.pop(key, None)


def _unchanged(ref: TableRef, tbl_name: str) -> list[ColumnElement[bool]]:
    """Conditions that hold while the table named `tbl_name` is still the one `ref` describes; each a locking read
    (shared), the table's row first, so that they see the latest committed rows and hold them until the commit."""
    tbls, sds, keys = s.TBLS.c, s.SDS.c, s.PARTITION_KEYS.c

    def present(*where: ColumnElement[bool]) -> ColumnElement[bool]:
        return select(literal(1)).where(*where).with_for_update(read=True).exists()

    key_count = select(func.count()).select_from(s.PARTITION_KEYS).where(keys.TBL_ID == ref.tbl_id)
    return [
        present(tbls.TBL_ID == ref.tbl_id, tbls.DB_ID == ref.db_id, tbls.TBL_NAME == tbl_name,
                tbls.SD_ID == ref.sd_id),
        *([present(sds.SD_ID == ref.sd_id, sds.CD_ID == ref.cd_id)] if ref.sd_id is not None else []),
        key_count.with_for_update(read=True).scalar_subquery() == len(ref.partition_keys),
        *(present(keys.TBL_ID == ref.tbl_id, keys.INTEGER_IDX == i, keys.PKEY_NAME == name,
                  keys.PKEY_TYPE == key_type)
          for i, (name, key_type) in enumerate(zip(ref.partition_keys, ref.partition_key_types))),
    ]
