"""Id counters: SEQUENCE_TABLE's rows for the Java metastore's JDO model classes, and the single-row counter
tables (NEXT_TXN_ID, NEXT_LOCK_ID, NOTIFICATION_SEQUENCE).

DataNucleus (the Java HMS) moves a row's NEXT_VAL past a block of ids before it uses them, and Hive's
notification listener takes NOTIFICATION_LOG's NL_ID from the MNotificationLog row; hmsproxy reserves its
ids from the same rows the same way, so that ids it hands out are never ones Hive used or will use.
"""
from __future__ import annotations

from sqlalchemy import Column, ColumnElement, Connection, Insert, Table, Update, func, insert, literal, select, update

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.hive_only_tables import NEXT_COMPACTION_QUEUE_ID

MODEL_PREFIX = "org.apache.hadoop.hive.metastore.model."
ID_COLUMNS = {
    "MCatalog": s.CTLGS.c.CTLG_ID,
    "MDatabase": s.DBS.c.DB_ID,
    "MTable": s.TBLS.c.TBL_ID,
    "MPartition": s.PARTITIONS.c.PART_ID,
    "MStorageDescriptor": s.SDS.c.SD_ID,
    "MSerDeInfo": s.SERDES.c.SERDE_ID,
    "MColumnDescriptor": s.CDS.c.CD_ID,
    "MStringList": s.SKEWED_STRING_LIST.c.STRING_LIST_ID,
    "MFunction": s.FUNCS.c.FUNC_ID,
    "MTableColumnStatistics": s.TAB_COL_STATS.c.CS_ID,
    "MPartitionColumnStatistics": s.PART_COL_STATS.c.CS_ID,
    "MNotificationLog": s.NOTIFICATION_LOG.c.NL_ID,
}


def reserve(conn: Connection, model: str, count: int) -> int:
    """Reserves `count` consecutive ids of a model; returns the first. One statement where the row exists
    (it stays locked until the transaction ends); a missing row (older schemas, Hive's scripts create few)
    starts after the highest id in use."""
    seq = s.SEQUENCE_TABLE
    name = MODEL_PREFIX + model
    after = _bump(conn, seq.c.NEXT_VAL, count, seq.c.SEQUENCE_NAME == name)
    if after is not None:
        return after - count
    first = (conn.execute(select(func.max(ID_COLUMNS[model]))).scalar() or 0) + 1
    conn.execute(insert(seq).values(SEQUENCE_NAME=name, NEXT_VAL=first + count))
    return first


def next_value(conn: Connection, column: Column[int], count: int = 1) -> int:
    """Reserves `count` ids from a single-row counter table; returns the first. The row stays locked until
    the transaction ends (for NEXT_LOCK_ID that is the lock mutex)."""
    after = _bump(conn, column, count)
    if after is None:
        raise LookupError(f"{column.table.name} has no row")
    return after - count


def _bump(conn: Connection, column: Column[int], count: int, *where: ColumnElement[bool]) -> int | None:
    """Adds `count` to a counter column in one round trip, where the database can say what it wrote: MySQL's
    LAST_INSERT_ID(expr), RETURNING elsewhere. The new value, or None when no row matched."""
    bump = update(column.table).where(*where)
    if conn.dialect.name == "mysql":
        bumped = conn.execute(bump.values({column.name: func.last_insert_id(column + count)}))
        return int(bumped.lastrowid) if bumped.rowcount else None
    after = conn.execute(bump.values({column.name: column + count}).returning(column)).scalar()
    return None if after is None else int(after)


def sequences_behind(conn: Connection) -> list[tuple[str, int, int]]:
    """(model, NEXT_VAL, highest id in use) of every SEQUENCE_TABLE row that would hand out an id in use."""
    seq = s.SEQUENCE_TABLE
    next_values: dict[str, int] = dict(conn.execute(select(seq.c.SEQUENCE_NAME, seq.c.NEXT_VAL)).all())
    behind = []
    for model, id_column in ID_COLUMNS.items():
        next_val = next_values.get(MODEL_PREFIX + model)
        if next_val is None:
            continue
        highest = conn.execute(select(func.max(id_column))).scalar()
        if highest is not None and next_val <= highest:
            behind.append((model, next_val, highest))
    return behind


def catch_up_statements() -> dict[str, Update]:
    """Model -> the statement that moves its SEQUENCE_TABLE row past the ids in its table when it is behind them
    (and leaves it alone otherwise): repeatable, and printable for `schema upgrade --dry-run`."""
    seq = s.SEQUENCE_TABLE
    statements = {}
    for model, ids in ID_COLUMNS.items():
        highest = select(func.max(ids)).scalar_subquery()
        statements[model] = update(seq).where(seq.c.SEQUENCE_NAME == MODEL_PREFIX + model,
                                              seq.c.NEXT_VAL <= highest).values(NEXT_VAL=highest + 1)
    return statements


def catch_up_sequences(conn: Connection) -> list[str]:
    """Moves every counter that is behind the ids in its table past them (an older hmsproxy numbered
    NOTIFICATION_LOG rows by event id and left MNotificationLog at 1); returns the models it moved."""
    return [model for model, statement in catch_up_statements().items() if conn.execute(statement).rowcount]


# The single rows Hive's scripts insert into its counter and mutex tables.
SINGLE_ROWS = ((s.NOTIFICATION_SEQUENCE, {"NNI_ID": 1, "NEXT_EVENT_ID": 1}), (s.NEXT_LOCK_ID, {"NL_NEXT": 1}),
               (NEXT_COMPACTION_QUEUE_ID, {"NCQ_NEXT": 1}), (s.TXN_LOCK_TBL, {"TXN_LOCK": 1}))


def single_row_statements() -> list[Insert]:
    """Inserts each of SINGLE_ROWS where its table is empty: repeatable, and printable for `--dry-run`."""
    return [single_row_statement(table) for table, _ in SINGLE_ROWS]


def single_row_statement(table: Table) -> Insert:
    row = dict(SINGLE_ROWS)[table]
    return insert(table).from_select(list(row), select(*(literal(value) for value in row.values()))
                                     .where(~select(literal(1)).select_from(table).exists()))
