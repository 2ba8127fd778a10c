"""Rows deleted by id from several tables in one query where the database allows, as row_inserts does for inserts.

Replacing or dropping a storage descriptor deletes its rows from up to eleven tables, a partition's from three
more: one round trip each, unless they go together. On MySQL, MariaDB and PostgreSQL they do (the same multi-
statement queries row_inserts sends); the ids are integers, written as literals with nothing to escape. SQLite,
in process, takes one statement each.
"""
from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Column, Connection, delete

from hmsproxy.store.sql.row_inserts import MULTI_STATEMENT, joined_queries

Deletions = Sequence[tuple[Column[int], Sequence[int]]]   # (id column, ids whose rows go), in the order to delete

IDS_PER_STATEMENT = 500


def delete_rows(conn: Connection, deletions: Deletions) -> None:
    """Deletes, in order, the rows whose id column holds one of the ids, inside the caller's transaction."""
    chunks = [(column, ids[start:start + IDS_PER_STATEMENT]) for column, ids in deletions
              for start in range(0, len(ids), IDS_PER_STATEMENT)]
    if not chunks:
        return
    if conn.dialect.name not in ("mysql", "postgresql"):
        for column, ids in chunks:
            conn.execute(delete(column.table).where(column.in_(ids)))
        return
    quote = conn.dialect.identifier_preparer.quote
    statements = [f"DELETE FROM {quote(column.table.name)} WHERE {quote(column.name)} IN ({','.join(map(_id, ids))})"
                  for column, ids in chunks]
    for query in joined_queries([(statement, []) for statement in statements]):
        conn.exec_driver_sql(query, execution_options=MULTI_STATEMENT)


def _id(value: object) -> str:
    if value.__class__ is not int:
        raise TypeError(f"row ids are integers, not {value!r}")
    return str(value)
