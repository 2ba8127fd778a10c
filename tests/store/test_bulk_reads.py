"""Reading many partitions costs a fixed number of queries, not one per partition."""
import pytest

from hmsproxy.idl import hms
from hmsproxy.idl.codec import EncodedList
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.store import SqlStore
from support.sql_stores import add_table_t, fresh_store
from support.statements import count_statements


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



def _add(store: SqlStore, start: int, count: int, tmp_location: str) -> None:
    parts = [hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=_sd(f"{tmp_location}/k={i}"),
                           parameters={"n": str(i)}, createTime=1, lastAccessTime=0)
             for i in range(start, start + count)]
    store.add_partitions("hive", "d", "t", parts)


def test_listing_cost_does_not_grow_with_the_partition_count(store, tmp_path):
    _add(store, 0, 20, f"file:{tmp_path}")
    few, parts = count_statements(store, lambda: store.get_partitions("hive", "d", "t"))
    assert len(parts) == 20
    _add(store, 20, 480, f"file:{tmp_path}")
    many, parts = count_statements(store, lambda: store.get_partitions("hive", "d", "t"))
    assert len(parts) == 500
    assert many == few <= 20
    by_names, found = count_statements(
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


def _tables(store: SqlStore, count: int, partitions: int, tmp_location: str) -> list[tuple[str, str]]:
    names = []
    for i in range(count):
        name = f"many{i}"
        store.create_table(hms.Table(tableName=name, dbName="d", catName="hive", sd=_sd(f"{tmp_location}/{name}"),
                                     partitionKeys=[hms.FieldSchema(name="k", type="int")], parameters={"i": str(i)},
                                     tableType="MANAGED_TABLE", createTime=1, lastAccessTime=0, retention=0))
        store.add_partitions("hive", "d", name, [
            hms.Partition(values=[str(j)], dbName="d", tableName=name, sd=_sd(f"{tmp_location}/{name}/k={j}"),
                          parameters={"n": str(j)}, createTime=1, lastAccessTime=0) for j in range(partitions)])
        names.append(("d", name))
    return names


def test_reading_many_tables_together_costs_the_same_queries_as_reading_a_few(store, tmp_path):
    """Prewarm's bulk read: a remote database costs a few round trips per group of tables, not per table."""
    names = _tables(store, 40, 5, f"file:{tmp_path}")
    few, bundles = count_statements(store, lambda: store.get_table_bundles("hive", names[:2]))
    assert [len(b.partitions) for b in bundles] == [5, 5]
    many, bundles = count_statements(store, lambda: store.get_table_bundles("hive", names))
    assert len(bundles) == 40 and sum(len(b.partitions) for b in bundles) == 200
    assert many == few <= 30
    one_by_one, _ = count_statements(store, lambda: [store.get_table_bundle("hive", *key) for key in names])
    assert one_by_one > 10 * many


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_partition_with_megabytes_of_parameters_reads_back_whole(backend, tmp_path):
    """A partition's parameters travel aggregated into one value (store/sql/json_rows.py); MariaDB would cut
    that value at group_concat_max_len (1 MB by default) if the session did not lift it."""
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(f"file:{tmp_path}/t"))
        params = {f"spark.sql.part.{i}": f"{i:04d}" + "x\"ü\\" * 1000 for i in range(400)}   # 1.6 MB
        store.add_partitions("hive", "d", "t", [hms.Partition(
            values=["1"], dbName="d", tableName="t", sd=_sd(f"file:{tmp_path}/t/k=1"), parameters=params,
            createTime=1, lastAccessTime=0)])
        [part] = store.get_partitions("hive", "d", "t")
        assert part.parameters == params
        [bundle] = store.get_table_bundles("hive", [("d", "t")])
        assert bundle.partitions[0].parameters == params


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_partitions_too_large_to_pack_together_read_back_whole(backend, tmp_path):
    """Prewarm's reads take partitions packed, many to a value (store/sql/partitions.py); MariaDB cuts a pack larger
    than max_allowed_packet (16 MB by default), and those partitions are read again one row each."""
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(f"file:{tmp_path}/t"))
        params = {str(k): {"big": f"{k}" * 6_000_000, "n": str(k)} for k in range(3)}   # 18 MB together
        for k, parameters in params.items():
            store.add_partitions("hive", "d", "t", [hms.Partition(
                values=[k], dbName="d", tableName="t", sd=_sd(f"file:{tmp_path}/t/k={k}"), parameters=parameters,
                createTime=1, lastAccessTime=0)])
        assert {p.values[0]: p.parameters for p in store.get_partitions("hive", "d", "t")} == params
        [bundle] = store.get_table_bundles("hive", [("d", "t")])
        assert {p.values[0]: p.parameters for p in bundle.partitions} == params


def _varied(i: int, root: str) -> object:
    """Partitions whose descriptors differ in a few ways: most share one but for the location."""
    sd = _sd(f"{root}/k={i}")
    if i % 4 != 0:                       # no skew: these share a descriptor but for the location
        sd.skewedInfo = hms.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={})
    if i % 5 == 1:
        sd.parameters = {"sd": "other", "b": "2"}
    if i % 7 == 2:
        sd.serdeInfo.parameters = {"p": "2", "q": "3"}
    if i % 9 == 3:
        sd.cols = sd.cols[:1]
    return hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=sd, parameters={"n": str(i), "x": "y"},
                         createTime=i, lastAccessTime=0)


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_the_cache_reads_partitions_encoded_to_the_bytes_of_the_objects_the_store_returns(backend, tmp_path):
    """Prewarm's reads build a descriptor once per kind (partition_bytes.py): the set they make is the set the
    store's own objects make, byte for byte, skew with list-keyed maps and partitions without descriptor included."""
    from hmsproxy.store.cache.partitions import PartitionSet, PartitionSetBuilder

    with fresh_store(backend, tmp_path) as sql:
        add_table_t(sql, f"file:{tmp_path}", _sd(f"file:{tmp_path}/d.db/t"))
        sql.add_partitions("hive", "d", "t", [_varied(i, f"file:{tmp_path}") for i in range(40)])
        bundle = sql.get_table_bundle("hive", "d", "t")
        [grouped] = sql.get_table_bundles("hive", [("d", "t")])
        objects = sql.get_partitions("hive", "d", "t")
        assert type(objects) is EncodedList   # sent as the bytes it holds (dispatch.py), not decoded and encoded again
        ids = {p.values[0]: i for p, i in zip(bundle.partitions, bundle.partition_ids or [])}
        decoded = sorted(bundle.partitions, key=lambda p: p.values[0])   # encoded ones decode to the store's objects
        assert len(ids) == 40 and decoded == sorted(objects, key=lambda p: p.values[0])

    def built(parts: object, part_ids: object) -> PartitionSet:
        builder = PartitionSetBuilder(PartitionSet(keys=("k",)))
        builder.add(parts, part_ids)   # type: ignore[arg-type]
        return builder.build()

    from_objects = built(objects, [ids[p.values[0]] for p in objects])
    assert built(bundle.partitions, bundle.partition_ids) == from_objects
    assert built(grouped.partitions, grouped.partition_ids) == from_objects
    kinds = {tail for block in from_objects.blocks for tail in block.tails}
    assert len(kinds) > 4 and from_objects.tolerant_tails     # several kinds, skew maps among them
