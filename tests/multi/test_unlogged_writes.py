"""A writer that logs no notification events (a Java HMS without Hive's DbNotificationListener) is noticed from
the rows it creates, and the cache then stops answering, so that no read is served stale; writers that log their
events (hmsproxy instances, however busy, whatever fails) never raise that alarm. Every backend."""
from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import create_engine, insert, select, update

from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from support.databases import BACKENDS
from support.instances import connect, instances_on_one_database
from support.polling import wait_for
from support.scrape import metric

MDATABASE = "org.apache.hadoop.hive.metastore.model.MDatabase"


def _write_as_a_java_hms_without_listener(url: str) -> None:
    """What a Java HMS does without the listener: a new database (its id from SEQUENCE_TABLE, as DataNucleus
    takes it) and an altered parameter of an existing one, and no event."""
    engine = create_engine(url)
    seq = s.SEQUENCE_TABLE
    with engine.begin() as conn:
        db_id = conn.execute(select(seq.c.NEXT_VAL).where(seq.c.SEQUENCE_NAME == MDATABASE)).scalar_one()
        conn.execute(update(seq).where(seq.c.SEQUENCE_NAME == MDATABASE).values(NEXT_VAL=seq.c.NEXT_VAL + 10))
        conn.execute(insert(s.DBS).values(DB_ID=db_id, NAME="unlogged", DB_LOCATION_URI="file:/tmp/unlogged",
                                          OWNER_NAME="java", OWNER_TYPE="USER", CTLG_NAME="hive"))
        kept = conn.execute(select(s.DBS.c.DB_ID).where(s.DBS.c.NAME == "kept")).scalar_one()
        conn.execute(update(s.DATABASE_PARAMS).where(s.DATABASE_PARAMS.c.DB_ID == kept,
                                                     s.DATABASE_PARAMS.c.PARAM_KEY == "v").values(PARAM_VALUE="2"))
    engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_that_log_no_event_turn_the_cache_off(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path, 1, "--unlogged-check-s", "0.1") as (url, [server]):
        client = connect(server)
        client.create_database(hms.Database(name="kept", parameters={"v": "1"}))
        assert client.get_database("kept").parameters == {"v": "1"}
        hits = metric(server, "hmsproxy_cache_lookups_total", kind="database", result="hit")
        assert client.get_database("kept").parameters == {"v": "1"}
        assert metric(server, "hmsproxy_cache_lookups_total", kind="database", result="hit") == hits + 1
        assert metric(server, "hmsproxy_cache_passing_through") == 0
        # The first look only marks where counting starts: the unlogged rows must come after it.
        wait_for(lambda: metric(server, "hmsproxy_unlogged_write_checks_total") >= 1, "the first look")

        _write_as_a_java_hms_without_listener(url)
        wait_for(lambda: metric(server, "hmsproxy_cache_passing_through") == 1, "the cache turned off")
        assert metric(server, "hmsproxy_unlogged_writes_total", kind="database") == 1
        assert client.get_database("kept").parameters == {"v": "2"}  # the cache would still say 1
        assert "unlogged" in client.get_all_databases()
        client.close()
        assert "another writer created 1 database(s) in this metastore database without a notification event" in \
            (server.workdir / f"hmsproxy-{server.port}.log").read_text()


@pytest.mark.parametrize("backend", BACKENDS)
def test_instances_that_log_their_writes_never_raise_the_alarm(backend, tmp_path):
    """Two instances create, fail to create, add partitions to and drop objects at once while both look for
    unlogged writes many times; neither finds any."""
    with instances_on_one_database(backend, tmp_path, 2, "--unlogged-check-s", "0.05") as (_, servers):
        sd = hms.StorageDescriptor(cols=[hms.FieldSchema(name="a", type="int")], inputFormat="i", outputFormat="o",
                                   serdeInfo=hms.SerDeInfo(serializationLib="s", parameters={}), parameters={},
                                   bucketCols=[], sortCols=[], compressed=False, numBuckets=-1)
        errors: list[BaseException] = []

        def work(server, tag: str) -> None:
            client = connect(server)
            try:
                for round_ in range(6):
                    db = f"{tag}{round_}_{uuid.uuid4().hex[:4]}"
                    client.create_database(hms.Database(name=db, parameters={}))
                    with pytest.raises(hms.AlreadyExistsException):
                        client.create_database(hms.Database(name=db, parameters={}))
                    client.create_table(hms.Table(tableName="t", dbName=db, sd=sd, parameters={},
                                                  tableType="MANAGED_TABLE",
                                                  partitionKeys=[hms.FieldSchema(name="k", type="string")]))
                    client.add_partitions([hms.Partition(dbName=db, tableName="t", values=[str(i)], sd=sd,
                                                         parameters={}) for i in range(5)])
                    client.create_function(hms.Function(functionName="f", dbName=db, className="x.Y", ownerType=1,
                                                        functionType=1, resourceUris=[]))
                    if round_ % 2:
                        client.drop_database(db, True, True)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            finally:
                client.close()

        threads = [threading.Thread(target=work, args=(server, f"w{i}")) for i, server in enumerate(servers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        checks = [metric(server, "hmsproxy_unlogged_write_checks_total") for server in servers]
        for server, done in zip(servers, checks):  # each looks twice more, after every write
            wait_for(lambda server=server, done=done:
                     metric(server, "hmsproxy_unlogged_write_checks_total") >= done + 2,
                     "two more checks")
        assert [metric(server, "hmsproxy_cache_passing_through") for server in servers] == [0, 0]
        assert [metric(server, "hmsproxy_unlogged_writes_total") for server in servers] == [0, 0]
