"""Adding many partitions costs a fixed number of statements, whatever the batch's size, and the ids the rows
take come from blocks each process reserves ahead: no statement on SEQUENCE_TABLE in most writes, never one id
handed out twice (several processes reserving at once), never one id Hive's counter would hand out again."""
import multiprocessing

import pytest
from sqlalchemy import select

from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.id_blocks import ID_BLOCK
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.sequences import MODEL_PREFIX
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS, fresh_database
from support.processes import run_at_once
from support.sql_stores import add_table_t, fresh_store
from support.statements import statements_sent


def _sd(location: str) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="id", type="int")], location=location, inputFormat="in", outputFormat="out",
        serdeInfo=hms.SerDeInfo(serializationLib="lib", parameters={"p": "1"}), parameters={})


def _add(store: SqlStore, start: int, count: int, root: str, own_columns: bool = False) -> None:
    """Partitions `start`.. with the table's columns, or each with columns of its own (an added one)."""
    parts = [hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=_sd(f"{root}/k={i}"),
                           parameters={"n": str(i)}, createTime=1, lastAccessTime=0)
             for i in range(start, start + count)]
    for part in parts if own_columns else ():
        part.sd.cols = [*part.sd.cols, hms.FieldSchema(name=f"added_{part.values[0]}", type="string")]
    store.add_partitions("hive", "d", "t", parts)


@pytest.mark.parametrize("backend", BACKENDS)
def test_adding_a_batch_costs_the_same_statements_for_ten_partitions_as_for_five_hundred(backend, tmp_path):
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(f"file:{tmp_path}/d/t"))
        _add(store, 0, 10, f"file:{tmp_path}/d/t")   # reserves the first blocks
        few, _ = statements_sent(store, lambda: _add(store, 10, 10, f"file:{tmp_path}/d/t"))
        many, _ = statements_sent(store, lambda: _add(store, 20, 500, f"file:{tmp_path}/d/t"))
        assert len(few) == len(many) <= 16
        if backend != "sqlite":   # there the single writer reserves its ids in its own transaction
            assert not [statement for statement in few + many if "SEQUENCE_TABLE" in statement]
        assert sorted(int(p.values[0]) for p in store.get_partitions("hive", "d", "t")) == list(range(520))


@pytest.mark.parametrize("backend", BACKENDS)
def test_partitions_with_columns_of_their_own_cost_no_statement_more_each(backend, tmp_path):
    """A partition whose columns are not the table's gets a column descriptor of its own, as in Hive: those of a
    batch are written with its other rows, not in statements of their own."""
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(f"file:{tmp_path}/d/t"))
        _add(store, 0, 10, f"file:{tmp_path}/d/t", own_columns=True)   # reserves the first blocks
        shared, _ = statements_sent(store, lambda: _add(store, 10, 10, f"file:{tmp_path}/d/t"))
        few, _ = statements_sent(store, lambda: _add(store, 20, 10, f"file:{tmp_path}/d/t", own_columns=True))
        many, _ = statements_sent(store, lambda: _add(store, 30, 500, f"file:{tmp_path}/d/t", own_columns=True))
        # SQLite sends each table's rows on their own (CDS, COLUMNS_V2) and reserves ids in the transaction.
        assert len(few) == len(many) == len(shared) + (3 if backend == "sqlite" else 0)
        columns = {p.values[0]: [c.name for c in p.sd.cols] for p in store.get_partitions("hive", "d", "t")}
        assert columns == {str(i): ["id"] if 10 <= i < 20 else ["id", f"added_{i}"] for i in range(530)}


def _reserve_many(url: str, counts: list[int], start: "multiprocessing.synchronize.Barrier",
                  results: "multiprocessing.Queue[list[tuple[int, int]]]") -> None:
    """One process's reservations: (first id, count) of each."""
    db = Database(url)
    start.wait()
    taken = []
    for count in counts:
        with db.transaction(write=True) as conn:
            taken.append((db.allocate_ids(conn, "MPartition", count), count))
    db.dispose()
    results.put(taken)


@pytest.mark.parametrize("backend", BACKENDS)
def test_processes_reserving_ids_at_once_never_share_one(backend, tmp_path):
    """Three processes take ids of one model at once, in counts around the block size (so that blocks run out
    and are reserved again mid-run): every id is handed out once, and the counter stands past all of them, so
    the Java metastore on the same database would not hand one out again."""
    with fresh_database(backend, tmp_path) as url:
        init_schema(Database(url), f"file:{tmp_path}")
        plans = [[1 + (i * 397 + p * 131) % (ID_BLOCK + ID_BLOCK // 2) for i in range(25)] for p in range(3)]
        taken = run_at_once(_reserve_many, [(url, plan) for plan in plans], timeout_s=120)
        ids = [first + i for ranges in taken for first, count in ranges for i in range(count)]
        assert sorted(len(ranges) for ranges in taken) == [25, 25, 25]
        assert len(ids) == len(set(ids)) == sum(map(sum, plans))
        db = Database(url)
        with db.transaction() as conn:
            next_val = conn.execute(select(s.SEQUENCE_TABLE.c.NEXT_VAL).where(
                s.SEQUENCE_TABLE.c.SEQUENCE_NAME == MODEL_PREFIX + "MPartition")).scalar_one()
        db.dispose()
        assert next_val > max(ids)
