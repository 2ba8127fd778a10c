"""A server whose cached partitions rest packed (own_bytes.py), with a hot budget that holds about one table:
every read path answers what the database holds, through Hive's own client, while tables are packed and expanded
in turn, and the expanded bytes stay within the budget."""
from __future__ import annotations

from hmsclient.genthrift.hive_metastore import ttypes

from hmsproxy.idl import hms
from support.builders import connect_hive, connect_thrift, partition, table
from support.hmsproxy_server import start_hmsproxy, start_hmsproxy_process
from support.polling import wait_for
from support.scrape import metric

TABLES = ("t0", "t1", "t2", "t3")
PARTITIONS = 300
BUDGET = 100_000   # bytes: one table's 300 partitions expanded (~70 KB), not two


def _populate(server) -> None:
    client = connect_thrift(server)
    client.create_database(hms.Database(name="d", parameters={}))
    for name in TABLES:
        tbl = table(hms, "d", name, part_keys=[("ds", "string"), ("n", "int")])
        client.create_table(tbl)
        client.add_partitions([partition(hms, tbl, [f"2024-01-{i % 28 + 1:02d}", str(i)],
                                         params={"numFiles": str(i % 7), "totalSize": str(1000 + i)})
                               for i in range(PARTITIONS)])
    client.close()


def _reads(client, name: str) -> list:
    """What the read paths answer for one table."""
    names = client.get_partition_names("d", name, -1)
    return [client.get_partitions("d", name, -1),
            client.get_partition_by_name("d", name, names[17]),
            client.get_partitions_by_names("d", name, names[5:9] + names[250:252]),
            client.get_partitions_by_filter("d", name, "n < 40 and ds = '2024-01-03'", -1),
            client.get_partitions("d", name, 12)]


def test_packed_partitions_answer_as_the_database_does_within_the_hot_budget(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'metastore.db'}"
    with start_hmsproxy(tmp_path / "plain", db_url, cache=False) as plain:
        _populate(plain)
        expected_client = connect_hive(plain)
        expected = {name: _reads(expected_client, name) for name in TABLES}
        server = start_hmsproxy_process(tmp_path / "packed", db_url, "--cache-hot-bytes", str(BUDGET))
        try:
            wait_for(lambda: metric(server, "hmsproxy_ready") == 1, "prewarm")
            assert metric(server, "hmsproxy_cache_hot_bytes") == 0, "prewarmed tables rest packed"
            client = connect_hive(server)
            for _ in range(3):
                for name in TABLES:
                    assert _reads(client, name) == expected[name]
                    hot = metric(server, "hmsproxy_cache_hot_bytes")
                    assert 0 < hot <= BUDGET
            tbl = client.get_table("d", "t1")
            client.add_partitions([ttypes.Partition(values=["2025-01-01", str(1000 + i)], dbName="d", tableName="t1",
                                                    sd=tbl.sd, parameters={"written": "yes"}) for i in range(5)])
            for name in ("t0", "t2", "t1"):   # the written set leaves the hot ones, packed, and is read back
                expected_client.get_partitions("d", name, -1)
                assert _reads(client, name) == _reads(expected_client, name)
                assert metric(server, "hmsproxy_cache_hot_bytes") <= BUDGET
            assert metric(server, "hmsproxy_cache_lookups_total", kind="partition", result="miss") == 0
            client.close()
        finally:
            server.stop()
        expected_client.close()
