"""Reading many partitions costs a fixed number of queries, not one per partition."""
import pytest
from sqlalchemy import event

from hmsproxy.idl import hms
from hmsproxy.store.sql.database import Database, init_schema
from hmsproxy.store.sql.store import SqlStore


def _sd(location: str) -> object:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="id", type="int"), hms.FieldSchema(name="v", type="string")], location=location,
        inputFormat="in", outputFormat="out", compressed=False, numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name="s", serializationLib="lib", parameters={"p": "1"}), bucketCols=["id"],
        sortCols=[hms.Order(col="id", order=1)], parameters={"sd": "x"},
        skewedInfo=hms.SkewedInfo(skewedColNames=["v"], skewedColValues=[["a"]],
                                  skewedColValueLocationMaps={("a",): f"{location}/v=a"}),
        storedAsSubDirectories=False)


@pytest.fixture
def store(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    init_schema(db, f"file:{tmp_path}")
    store = SqlStore(db)
    store.create_database(hms.Database(name="d", locationUri=f"file:{tmp_path}/d.db", parameters={},
                                       catalogName="hive"))
    store.create_table(hms.Table(tableName="t", dbName="d", catName="hive", sd=_sd(f"file:{tmp_path}/d.db/t"),
                                 partitionKeys=[hms.FieldSchema(name="k", type="int")], parameters={},
                                 tableType="MANAGED_TABLE", createTime=1, lastAccessTime=0, retention=0))
    yield store
    store.close()


def _count_statements(store: SqlStore, call) -> tuple[int, object]:
    statements = []
    listener = lambda conn, cursor, statement, *args: statements.append(statement)  # noqa: E731
    event.listen(store.db.engine, "before_cursor_execute", listener)
    try:
        result = call()
    finally:
        event.remove(store.db.engine, "before_cursor_execute", listener)
    return len(statements), result


def _add(store: SqlStore, start: int, count: int, tmp_location: str) -> None:
    parts = [hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=_sd(f"{tmp_location}/k={i}"),
                           parameters={"n": str(i)}, createTime=1, lastAccessTime=0)
             for i in range(start, start + count)]
    store.add_partitions("hive", "d", "t", parts)


def test_listing_cost_does_not_grow_with_the_partition_count(store, tmp_path):
    _add(store, 0, 20, f"file:{tmp_path}")
    few, parts = _count_statements(store, lambda: store.get_partitions("hive", "d", "t"))
    assert len(parts) == 20
    _add(store, 20, 480, f"file:{tmp_path}")
    many, parts = _count_statements(store, lambda: store.get_partitions("hive", "d", "t"))
    assert len(parts) == 500
    assert many == few <= 20
    by_names, found = _count_statements(
        store, lambda: store.get_partitions_by_names("hive", "d", "t", [f"k={i}" for i in range(0, 500, 2)]))
    assert len(found) == 250 and by_names <= 20


def test_partitions_round_trip_every_field(store, tmp_path):
    _add(store, 7, 1, f"file:{tmp_path}")
    [part] = store.get_partitions("hive", "d", "t")
    expected = _sd(f"file:{tmp_path}/k=7")
    assert part.values == ["7"] and part.parameters == {"n": "7"}
    assert part.sd.cols == expected.cols
    assert part.sd.serdeInfo.parameters == {"p": "1"} and part.sd.bucketCols == ["id"]
    assert part.sd.sortCols == expected.sortCols and part.sd.parameters == {"sd": "x"}
    assert part.sd.skewedInfo.skewedColValues == [["a"]]
    assert part.sd.skewedInfo.skewedColValueLocationMaps == {("a",): f"file:{tmp_path}/k=7/v=a"}
