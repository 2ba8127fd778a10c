"""An add of partitions to a table this process has written to before plans from the table as it remembers it,
without reading it (on MariaDB the whole add is then one query), and holds that the table is unchanged: where
another instance changed it meanwhile (new columns, dropped and created again with other keys), the add writes
nothing on the stale plan and is planned again from the database. Checked on every backend with two stores on
one database, each event and partition counted once."""
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from hmsproxy.events.journal import Journal
from hmsproxy.events.messages import Event
from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS, fresh_database
from support.lock_waits import run_while_locked
from support.processes import run_at_once
from support.statements import driver_queries

COLUMNS = [hms.FieldSchema(name="id", type="int")]
WIDER = [*COLUMNS, hms.FieldSchema(name="extra", type="string")]


@contextmanager
def _two_stores(backend: str, workdir: Path) -> Iterator[tuple[SqlStore, SqlStore]]:
    """Two stores (as two server instances) on one new database holding table d.t, partitioned by k int."""
    with fresh_database(backend, workdir) as url:
        first = Database(url)
        init_schema(first, f"file:{workdir}")
        stores = SqlStore(first), SqlStore(Database(url))
        try:
            stores[0].create_database(hms.Database(name="d", locationUri=f"file:{workdir}/d.db", parameters={},
                                                   catalogName="hive"))
            stores[0].create_table(_table(COLUMNS, "k"))
            yield stores
        finally:
            for store in stores:
                store.close()


def _table(columns: list[hms.FieldSchema], key: str) -> hms.Table:
    return hms.Table(tableName="t", dbName="d", catName="hive", sd=_sd(columns, "t"), parameters={},
                     partitionKeys=[hms.FieldSchema(name=key, type="int")], tableType="MANAGED_TABLE",
                     createTime=1, lastAccessTime=0, retention=0)


def _sd(columns: list[hms.FieldSchema], where: str) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(cols=list(columns), location=f"file:/w/d.db/{where}", inputFormat="in",
                                 outputFormat="out", serdeInfo=hms.SerDeInfo(serializationLib="lib", parameters={}),
                                 parameters={})


def _add(store: SqlStore, value: int, columns: list[hms.FieldSchema] = COLUMNS) -> Journal:
    """Adds partition `value` with one event, as the handler does; the journal the write filled in."""
    part = hms.Partition(values=[str(value)], dbName="d", tableName="t", sd=_sd(columns, f"t/{value}"),
                         parameters={}, createTime=1, lastAccessTime=0)
    journal = Journal.of(Event("ADD_PARTITION", "hive", "d", "t", f"{{\"added\": {value}}}"))
    store.add_partitions("hive", "d", "t", [part], journal=journal)
    return journal


def _partitions(store: SqlStore) -> list[tuple[str, int, int | None, int | None]]:
    """(name, table id, the partition's column descriptor, the table's) of every partition of the database."""
    parts, tbls, part_sds, tbl_sds = s.PARTITIONS, s.TBLS, s.SDS.alias("part_sd"), s.SDS.alias("tbl_sd")
    with store.db.transaction() as conn:
        return [tuple(row) for row in conn.execute(
            select(parts.c.PART_NAME, parts.c.TBL_ID, part_sds.c.CD_ID, tbl_sds.c.CD_ID)
            .join(part_sds, part_sds.c.SD_ID == parts.c.SD_ID).join(tbls, tbls.c.TBL_ID == parts.c.TBL_ID)
            .join(tbl_sds, tbl_sds.c.SD_ID == tbls.c.SD_ID).order_by(parts.c.PART_ID))]


def _logged(store: SqlStore) -> list[str]:
    log = s.NOTIFICATION_LOG.c
    with store.db.transaction() as conn:
        messages = list(conn.execute(select(log.MESSAGE).order_by(log.EVENT_ID)).scalars())
        assert conn.execute(select(s.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID)).scalar_one() == \
            (conn.execute(select(func.max(log.EVENT_ID))).scalar_one() or 0) + 1   # no number taken, left unused
    return [m for m in messages if m.startswith('{"added"')]


def _table_id(store: SqlStore) -> int:
    with store.db.transaction() as conn:
        return conn.execute(select(s.TBLS.c.TBL_ID).where(s.TBLS.c.TBL_NAME == "t")).scalar_one()


def test_on_mariadb_a_second_add_to_a_table_is_one_query(tmp_path):
    with _two_stores("mariadb", tmp_path) as (store, _):
        _add(store, 1)   # reads the table, and reserves blocks of ids (transactions of their own)
        sent, journal = driver_queries(lambda: _add(store, 2))
        assert len(sent) == 1, sent
        assert sent[0].startswith("UPDATE `NOTIFICATION_SEQUENCE`") and sent[0].endswith(";COMMIT")
        assert [name for name, *_ in _partitions(store)] == ["k=1", "k=2"]
        assert _logged(store) == ['{"added": 1}', '{"added": 2}'] and len(journal.event_ids) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_add_after_another_instance_changed_the_columns_shares_the_new_ones(backend, tmp_path):
    """As Hive: a partition with its table's columns shares the table's column descriptor, the one the table
    has now (a plan from the remembered table would give the partition a descriptor of its own)."""
    with _two_stores(backend, tmp_path) as (store, other):
        _add(store, 1)
        other.alter_table("hive", "d", "t", _table(WIDER, "k"))
        _add(store, 2, WIDER)
        first, second = _partitions(store)
        assert first[2] != first[3] and second[2] == second[3]   # the first kept the old columns: now its own
        assert _logged(store) == ['{"added": 1}', '{"added": 2}']


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_add_after_another_instance_created_the_table_again_goes_to_the_new_one(backend, tmp_path):
    """The table dropped and created again under its name, partitioned by another key: the add names the
    partition by the new key and writes it to the new table; the stale plan left no event and no row."""
    with _two_stores(backend, tmp_path) as (store, other):
        _add(store, 1)
        other.drop_table("hive", "d", "t")
        other.create_table(_table(COLUMNS, "day"))
        _add(store, 2)
        assert _partitions(store) == [("day=2", _table_id(store), *[_partitions(store)[0][3]] * 2)]
        assert _logged(store) == ['{"added": 1}', '{"added": 2}']


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_add_to_a_table_another_instance_dropped_fails_and_writes_nothing(backend, tmp_path):
    with _two_stores(backend, tmp_path) as (store, other):
        _add(store, 1)
        other.drop_table("hive", "d", "t")
        with pytest.raises(hms.NoSuchObjectException):
            _add(store, 2)
        assert _partitions(store) == [] and _logged(store) == ['{"added": 1}']


def _adding_or_recreating(url: str, role: str, first: int, count: int, start: Any, results: Any) -> None:
    """role "add": adds partitions first.. one at a time, each again while the table is missing, and puts (values
    added, refusals as missing); role "recreate": drops table d.t and creates it again `count` times, partitioned
    by `day` and `k` in turn, the last time by `k`, each with an event as the handler's."""
    store = SqlStore(Database(url))
    added, refusals = [], 0
    start.wait()
    for i in range(count):
        if role == "recreate":
            store.drop_table("hive", "d", "t", Journal.of(Event("DROP_TABLE", "hive", "d", "t", "{}")))
            store.create_table(_table(COLUMNS, "day" if (count - i) % 2 == 0 else "k"),
                               Journal.of(Event("CREATE_TABLE", "hive", "d", "t", "{}")))
            continue
        while first + i not in added:
            try:
                _add(store, first + i)
                added.append(first + i)
            except hms.NoSuchObjectException:
                refusals += 1
    store.close()
    results.put((role, added, refusals))


@pytest.mark.parametrize("backend", BACKENDS)
def test_adds_from_two_processes_while_a_third_creates_the_table_again_and_again(backend, tmp_path):
    """An add lands in the table as it then is, named by that table's key, or is refused because the table is
    missing at that moment (and is made again): nothing else fails. Each add that landed has its one event, a
    refused or replanned one none; no partition is left pointing at a table that is gone."""
    with _two_stores(backend, tmp_path) as (store, _):
        outcomes = run_at_once(_adding_or_recreating, [(store.db.url, "add", 1, 60), (store.db.url, "add", 1001, 60),
                                                       (store.db.url, "recreate", 0, 20)], timeout_s=240)
        landed = sorted(v for role, added, _ in outcomes if role == "add" for v in added)
        assert landed == [*range(1, 61), *range(1001, 1061)]
        assert sorted(int(m.split(": ")[1].rstrip("}")) for m in _logged(store)) == landed
        parts, tbls, keys = s.PARTITIONS.c, s.TBLS.c, s.PARTITION_KEYS.c
        with store.db.transaction() as conn:
            rows = conn.execute(select(parts.PART_NAME, keys.PKEY_NAME).select_from(s.PARTITIONS)
                                .join(s.TBLS, tbls.TBL_ID == parts.TBL_ID, isouter=True)
                                .join(s.PARTITION_KEYS, keys.TBL_ID == tbls.TBL_ID, isouter=True)).all()
        assert all(key == "k" and name.startswith("k=") for name, key in rows), rows   # the last table's


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_an_add_waits_for_a_change_of_its_table_under_way_and_then_sees_it(backend, tmp_path):
    """Another instance has changed the table's row (renamed it) and not yet committed: an add to the table by its
    old name, planned from memory on MariaDB, waits for that transaction, then finds the table gone. (Read
    without waiting, it would add to the table under a name it no longer has.)"""
    with _two_stores(backend, tmp_path) as (store, other):
        _add(store, 1)
        with other.db.engine.connect() as renaming:
            renaming.execute(update(s.TBLS).where(s.TBLS.c.TBL_NAME == "t").values(TBL_NAME="renamed"))
            outcome = run_while_locked(backend, renaming, lambda: _add(store, 2))
        assert isinstance(outcome, hms.NoSuchObjectException), outcome
        assert [name for name, *_ in _partitions(store)] == ["k=1"] and _logged(store) == ['{"added": 1}']
