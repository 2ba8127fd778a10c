"""Which cached objects a write forwarded to the upstream names (upstream/effects.py): every table the arguments
name, by name pairs or by structs anywhere inside them, is read again; a table DDL settles the name index too."""
from __future__ import annotations

from hmsproxy.idl import hms
from hmsproxy.upstream.effects import CacheEffects, cache_effects
from support.builders import database, partition, table

T = table(hms, "Sales", "Orders", part_keys=[("ds", "string")])


def test_partition_writes_name_their_table_from_structs_and_name_pairs():
    add = cache_effects("add_partitions", {"new_parts": [partition(hms, T, ["a"]), partition(hms, T, ["b"])]})
    assert add == CacheEffects(changed=frozenset({("hive", "sales", "orders")}))
    drop = cache_effects("drop_partition", {"db_name": "sales", "tbl_name": "orders", "part_vals": ["a"],
                                            "deleteData": False})
    assert drop.changed == {("hive", "sales", "orders")} and not drop.settle


def test_statistics_name_their_table_through_the_descriptor_inside_a_request():
    desc = hms.ColumnStatisticsDesc(isTblLevel=False, dbName="sales", tableName="orders", partName="ds=a")
    request = hms.SetPartitionsStatsRequest(colStats=[hms.ColumnStatistics(statsDesc=desc, statsObj=[])])
    assert cache_effects("set_aggr_stats_for", {"request": request}).changed == {("hive", "sales", "orders")}


def test_a_rename_settles_the_old_and_the_new_name():
    renamed = table(hms, "archive", "orders_2025")
    effects = cache_effects("alter_table_with_environment_context",
                            {"dbname": "sales", "tbl_name": "orders", "new_tbl": renamed, "environment_context": None})
    assert effects.settle == {("hive", "sales", "orders"), ("hive", "archive", "orders_2025")}
    assert not effects.changed


def test_an_exchange_names_both_tables_and_a_catalog_prefix_is_read():
    effects = cache_effects("exchange_partitions", {"partitionSpecs": {"ds": "a"}, "source_db": "@hive#sales",
                                                    "source_table_name": "orders", "dest_db": "sales",
                                                    "dest_table_name": "orders_old"})
    assert effects.changed == {("hive", "sales", "orders"), ("hive", "sales", "orders_old")}


def test_databases_and_functions():
    assert cache_effects("create_database", {"database": database(hms, "New")}).databases == {("hive", "new")}
    assert cache_effects("drop_database", {"name": "Old", "deleteData": True, "cascade": True}).databases == \
        {("hive", "old")}
    function = hms.Function(functionName="Upper2", dbName="sales", className="x.Upper", functionType=1)
    assert cache_effects("alter_function", {"dbName": "sales", "funcName": "upper", "newFunc": function}).functions \
        == {("hive", "sales", "upper"), ("hive", "sales", "upper2")}


def test_locks_and_transactions_name_nothing():
    component = hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname="sales",
                                  tablename="orders")
    assert cache_effects("lock", {"rqst": hms.LockRequest(component=[component])}) == CacheEffects()
    assert cache_effects("commit_txn", {"rqst": hms.CommitTxnRequest(txnid=7)}) == CacheEffects()
