"""SEQUENCE_TABLE: the id counters of the Java metastore's JDO model classes, one row each.

DataNucleus (the Java HMS) moves a row's NEXT_VAL past a block of ids before it uses them, and Hive's
notification listener takes NOTIFICATION_LOG's NL_ID from the MNotificationLog row; hmsproxy reserves its
ids from the same rows the same way, so that ids it hands out are never ones Hive used or will use.
"""
from __future__ import annotations

from sqlalchemy import Connection, func, insert, select, update

from hmsproxy.store.sql import schema as s

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
    mine = seq.c.SEQUENCE_NAME == name
    if conn.dialect.name == "mysql":
        bumped = conn.execute(update(seq).where(mine).values(NEXT_VAL=func.last_insert_id(seq.c.NEXT_VAL + count)))
        after = int(bumped.lastrowid) if bumped.rowcount else None
    else:
        after = conn.execute(update(seq).where(mine).values(NEXT_VAL=seq.c.NEXT_VAL + count)
                             .returning(seq.c.NEXT_VAL)).scalar()
    if after is not None:
        return int(after) - count
    first = (conn.execute(select(func.max(ID_COLUMNS[model]))).scalar() or 0) + 1
    conn.execute(insert(seq).values(SEQUENCE_NAME=name, NEXT_VAL=first + count))
    return first


def catch_up_sequences(conn: Connection) -> list[str]:
    """Moves every counter that is behind the ids in its table past them (an older hmsproxy numbered
    NOTIFICATION_LOG rows by event id and left MNotificationLog at 1); returns the models it moved."""
    moved = []
    seq = s.SEQUENCE_TABLE
    for model, id_column in ID_COLUMNS.items():
        highest = conn.execute(select(func.max(id_column))).scalar()
        mine = seq.c.SEQUENCE_NAME == MODEL_PREFIX + model
        if highest is not None and conn.execute(update(seq).where(mine, seq.c.NEXT_VAL <= highest)
                                                .values(NEXT_VAL=highest + 1)).rowcount:
            moved.append(model)
    return moved
