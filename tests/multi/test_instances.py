"""Several hmsproxy processes on one database behave like one metastore: changes through one are visible
through the others within the poll interval, snapshot reads are never stale, renames and re-creations
are told apart by table id, and the notification log is gap-free under concurrent writers."""
from __future__ import annotations

import threading
import uuid
from functools import partial

import pytest
from sqlalchemy import create_engine, text

from hmsproxy.client import reader_snapshot
from hmsproxy.hive.write_ids import ValidWriteIdList
from hmsproxy.idl import hms
from support.builders import connect_thrift, placeholder_sd
from support.databases import fresh_database
from support.hive_schema import load_hive_script
from support.hmsproxy_server import start_hmsproxy_process
from support.instances import instances_on_one_database
from support.polling import wait_for

VISIBLE_WITHIN_S = 10.0  # generous: the poll interval is 0.2 s; this only bounds a broken test


@pytest.fixture(scope="module", params=["mariadb", "postgres", "mariadb-hive-3.1.0", "postgres-hive-2.3.0"])
def instances(request, tmp_path_factory):
    """Three instances on one database: hmsproxy's own schema, or one Hive's script of an older version laid
    out (served in place: events without a catalog column on 2.3.0, lower-case transaction tables on
    PostgreSQL)."""
    backend, _, hive_version = request.param.partition("-hive-")
    workdir = tmp_path_factory.mktemp(f"multi-{request.param}")
    with fresh_database(backend, workdir) as url:
        if hive_version:
            load_hive_script(backend, url, hive_version)
        servers = [start_hmsproxy_process(workdir / name, url) for name in ("a", "b", "c")]
        try:
            yield url, servers, hive_version
        finally:
            for server in servers:
                server.stop()


def _table(db, name, params=None):
    return hms.Table(tableName=name, dbName=db, sd=placeholder_sd(columns=[("a", "int")]), partitionKeys=[],
                     parameters=dict(params or {}),
                     tableType="EXTERNAL_TABLE")



def _param(client, db, name, key):
    try:
        return client.get_table(db, name).parameters.get(key)
    except hms.NoSuchObjectException:
        return None


@pytest.fixture
def db(instances):
    _, (a, _, _), _ = instances
    name = f"db_{uuid.uuid4().hex[:8]}"
    client = connect_thrift(a)
    client.create_database(hms.Database(name=name, parameters={}))
    client.close()
    return name


def test_a_change_through_one_instance_is_visible_through_the_others(instances, db):
    _, (a, b, c), _ = instances
    ca, cb, cc = connect_thrift(a), connect_thrift(b), connect_thrift(c)
    wait_for(lambda: db in cb.get_all_databases(), "database created through A, listed by B", VISIBLE_WITHIN_S)
    ca.create_table(_table(db, "t", {"version": "1"}))
    wait_for(lambda: _param(cb, db, "t", "version") == "1",
             "table created through A, read through B", VISIBLE_WITHIN_S)

    def read_through_c(seen: list, version: int) -> bool:
        seen.append(_param(cc, db, "t", "version"))
        return seen[-1] == str(version)

    for version in range(2, 6):
        table = ca.get_table(db, "t")
        table.parameters["version"] = str(version)
        ca.alter_table(db, "t", table)
        seen = []
        wait_for(partial(read_through_c, seen, version), f"version {version} through C", VISIBLE_WITHIN_S)
        assert [int(v) for v in seen] == sorted(int(v) for v in seen)  # never backwards
    cb.drop_table(db, "t", True)
    for client, name in ((ca, "A"), (cc, "C")):   # the table and its name: each within the bound
        wait_for(partial(_gone, client, db, "t"),
                 f"table dropped through B, gone and unlisted in {name}", VISIBLE_WITHIN_S)
    for client in (ca, cb, cc):
        client.close()


def _gone(client, db: str, name: str) -> bool:
    return _param(client, db, name, "version") is None and name not in client.get_all_tables(db)


def _snapshot(client, table: str) -> str:
    return str(reader_snapshot(client, table))


def test_snapshot_reads_through_another_instance_are_never_stale(instances, db):
    _, (a, b, _), hive_version = instances
    ca, cb = connect_thrift(a), connect_thrift(b)
    ca.create_table(_table(db, "acid", {"transactional": "true", "version": "0"}))
    if hive_version == "2.3.0":  # its layout has no write ids, so no snapshot of them: refused, declared
        with pytest.raises(hms.MetaException, match=r"Hive's schema 2\.3\.0, which has no place for table write ids"):
            cb.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=[f"{db}.acid"]))
        ca.close()
        cb.close()
        return
    wait_for(lambda: _param(cb, db, "acid", "version") == "0", "transactional table through B", VISIBLE_WITHIN_S)
    cb.get_table_req(hms.GetTableRequest(dbName=db, tblName="acid", validWriteIdList=_snapshot(cb, f"{db}.acid")))
    for round_ in range(5):
        [txn] = ca.open_txns(hms.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
        [alloc] = ca.allocate_table_write_ids(hms.AllocateTableWriteIdsRequest(
            dbName=db, tableName="acid", txnIds=[txn])).txnToWriteIds
        table = ca.get_table(db, "acid")
        table.parameters["version"] = str(alloc.writeId)
        ca.alter_table_req(hms.AlterTableRequest(dbName=db, tableName="acid", table=table, writeId=alloc.writeId))
        if round_ == 3:
            ca.abort_txn(hms.AbortTxnRequest(txnid=txn))
            snapshot = _snapshot(cb, f"{db}.acid")
            assert ValidWriteIdList.parse(snapshot).is_aborted(alloc.writeId)  # readers skip its data
            continue
        ca.commit_txn(hms.CommitTxnRequest(txnid=txn))
        # immediately, with no waiting: B must not answer from an entry older than this snapshot
        snapshot = _snapshot(cb, f"{db}.acid")
        assert ValidWriteIdList.parse(snapshot).is_valid(alloc.writeId)
        read = cb.get_table_req(hms.GetTableRequest(dbName=db, tblName="acid", validWriteIdList=snapshot)).table
        assert read.parameters["version"] == str(alloc.writeId)
    ca.close()
    cb.close()


def test_rename_and_recreate_under_the_same_name(instances, db):
    _, (a, b, _), _ = instances
    ca, cb = connect_thrift(a), connect_thrift(b)
    ca.create_table(_table(db, "t", {"generation": "first"}))
    first = wait_for(lambda: _param(cb, db, "t", "generation") == "first" and cb.get_table(db, "t"),
                     "first t", VISIBLE_WITHIN_S)
    renamed = ca.get_table(db, "t")
    renamed.tableName = "t_old"
    ca.alter_table(db, "t", renamed)
    ca.create_table(_table(db, "t", {"generation": "second"}))
    second = wait_for(lambda: _param(cb, db, "t", "generation") == "second" and cb.get_table(db, "t"),
                      "new t", VISIBLE_WITHIN_S)
    assert second.id != first.id
    moved = wait_for(lambda: _param(cb, db, "t_old", "generation") == "first" and cb.get_table(db, "t_old"),
                     "renamed t_old through B", VISIBLE_WITHIN_S)
    assert moved.id == first.id
    # a request that names the old table id is never answered with the new table from the cache
    answer = cb.get_table_req(hms.GetTableRequest(dbName=db, tblName="t", id=first.id)).table
    assert answer.id == second.id and answer.parameters["generation"] == "second"
    ca.close()
    cb.close()


def test_event_ids_are_gap_free_and_unique_under_concurrent_writers(instances, db):
    url, servers, _ = instances
    per_thread, threads = 8, []
    errors: list[BaseException] = []

    def write(server, prefix):
        client = connect_thrift(server)
        try:
            for i in range(per_thread):
                client.create_table(_table(db, f"{prefix}_{i}"))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            client.close()

    for n, server in enumerate(servers):
        for k in range(2):
            threads.append(threading.Thread(target=write, args=(server, f"w{n}{k}")))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    engine = create_engine(url)
    with engine.connect() as conn:
        ids = [r[0] for r in conn.execute(text('SELECT "EVENT_ID" FROM "NOTIFICATION_LOG" ORDER BY "EVENT_ID"'
                                               if url.startswith("postgres") else
                                               "SELECT EVENT_ID FROM NOTIFICATION_LOG ORDER BY EVENT_ID"))]
        created = conn.execute(text(
            "SELECT COUNT(*) FROM " + ('"NOTIFICATION_LOG" WHERE "EVENT_TYPE" = \'CREATE_TABLE\' AND "DB_NAME" = :db'
                                       if url.startswith("postgres") else
                                       "NOTIFICATION_LOG WHERE EVENT_TYPE = 'CREATE_TABLE' AND DB_NAME = :db")),
            {"db": db}).scalar()
    engine.dispose()
    assert ids == list(range(ids[0], ids[0] + len(ids)))
    assert created == per_thread * len(threads)
    client = connect_thrift(servers[0])
    events = client.get_next_notification(hms.NotificationEventRequest(lastEvent=0, dbName=db,
                                                                       eventTypeSkipList=["CREATE_DATABASE"])).events
    assert [e.eventType for e in events] == ["CREATE_TABLE"] * created
    assert client.get_current_notificationEventId().eventId == ids[-1]
    client.close()


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_rename_onto_a_name_dropped_elsewhere_is_read_back_at_once(backend, tmp_path):
    """A still holds t (dropped through B, event not yet applied) when it renames u to t: reading t
    back through A must answer the renamed table, not the stale entry (found by test_coherence)."""
    slow_poll = ("--poll-interval-s", "3600")  # A never applies B's drop before the rename
    with instances_on_one_database(backend, tmp_path, 2, *slow_poll) as (_, (a, b)):
        ca, cb = connect_thrift(a), connect_thrift(b)
        ca.create_database(hms.Database(name="d", parameters={}))
        ca.create_table(_table("d", "t", {"generation": "dropped"}))
        assert ca.get_table("d", "t").parameters["generation"] == "dropped"  # cached in A
        cb.drop_table("d", "t", True)
        ca.create_table(_table("d", "u", {"generation": "renamed"}))
        renamed = ca.get_table("d", "u")
        renamed.tableName = "t"
        ca.alter_table("d", "u", renamed)
        read_back = ca.get_table("d", "t")
        assert (read_back.id, read_back.parameters["generation"]) == (renamed.id, "renamed")
        ca.close()
        cb.close()
