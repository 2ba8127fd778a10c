"""A SerDe's parameters read from the database come in the order the Java metastore sends them
(java_map_order.py), whatever order they were written in."""
from hmsproxy.idl import hms
from hmsproxy.idl.java_map_order import in_java_hashmap_order
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.store import SqlStore


def test_serde_parameters_read_back_in_java_hashmap_order(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    init_schema(db, f"file:{tmp_path}")
    store = SqlStore(db)
    try:
        store.create_database(hms.Database(name="d", locationUri=f"file:{tmp_path}/d.db", parameters={},
                                           catalogName="hive"))
        params = {key: "v" for key in ("zeta", "field.delim", "serialization.format", "a", "line.delim", "mid")}
        assert list(in_java_hashmap_order(params)) not in (list(params), sorted(params))  # a case that tells
        sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], location=f"file:{tmp_path}/d.db/t",
                                   inputFormat="i", outputFormat="o", compressed=False, numBuckets=-1,
                                   serdeInfo=hms.SerDeInfo(name="s", serializationLib="l", parameters=params),
                                   bucketCols=[], sortCols=[], parameters={})
        store.create_table(hms.Table(tableName="t", dbName="d", catName="hive", sd=sd, partitionKeys=[],
                                     parameters={}, tableType="MANAGED_TABLE"))
        got = store.get_table("hive", "d", "t").sd.serdeInfo.parameters
        assert list(got) == list(in_java_hashmap_order(params))
    finally:
        store.close()
