"""`hmsproxy schema upgrade` on databases Hive's own scripts created (shared/hive-schema, run with the database's
client): Hive 2.3.0 and 3.1.0, on MariaDB and PostgreSQL, come out with the layout of a fresh Hive 4.0.0 schema of
ours, validate as it does, and a second run finds nothing to do; --dry-run changes nothing; a failure part-way
is resumed (MariaDB) or rolled back whole (PostgreSQL)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import hmsclient
import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A
from sqlalchemy import create_engine, insert, text

from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql import upgrade
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import check_servable, init_schema
from hmsproxy.store.sql.validate import own_keys_missing_on_mysql
from support.cli import run_hmsproxy as hmsproxy
from support.databases import fresh_database
from support.hive_schema import (
    columns_layout,
    keys_layout,
    load_hive_3_0,
    load_hive_script,
    tables_and_version,
    upgrade_with_hives_scripts,
)
from support.hmsproxy_server import start_hmsproxy

BACKENDS = ["mariadb", "postgres"]  # Hive has no SQLite script
# Where an upgraded database keeps Hive's own column rather than ours (it is wider: an upgrade only widens).
KEPT_WIDER = {
    "mariadb": {"COLUMNS_V2.COLUMN_NAME": "varchar(767)",
                **{f"{t}.{c}": "double(53,4)" for t in ("TAB_COL_STATS", "PART_COL_STATS")
                   for c in ("AVG_COL_LEN", "DOUBLE_HIGH_VALUE", "DOUBLE_LOW_VALUE")}},
    "postgres": {},
}


def _fresh_layout(backend: str, tmp_path: Path) -> tuple[dict, dict]:
    with fresh_database(backend, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        db.dispose()
        return columns_layout(url), keys_layout(url)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("version", ["2.3.0", "3.1.0"])
def test_a_hive_schema_upgrades_to_the_layout_of_a_fresh_one(backend, version, tmp_path):
    fresh_columns, fresh_keys = _fresh_layout(backend, tmp_path)
    with fresh_database(backend, tmp_path) as url:
        load_hive_script(backend, url, version)
        before = tables_and_version(url)
        code, lines = hmsproxy("schema", "upgrade", "--dry-run", "--db", url, cwd=tmp_path)
        assert code == 0 and lines[-1].endswith(f"would upgrade schema {version} to 4.0.0; nothing was changed")
        assert any(line.startswith("ALTER TABLE") for line in lines)
        assert tables_and_version(url) == before

        code, lines = hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path)
        assert (code, lines[-1]) == (0, f"upgraded schema {version} to 4.0.0"), lines
        assert hmsproxy("schema", "validate", "--db", url, cwd=tmp_path)[0] == 0
        assert hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path) == (0, ["schema 4.0.0: nothing to upgrade"])
        columns, keys = columns_layout(url), keys_layout(url)

    assert set(columns) == set(fresh_columns)
    differing = {f"{table}.{column}": (columns[table].get(column), fresh_columns[table].get(column))
                 for table in columns for column in set(columns[table]) | set(fresh_columns[table])
                 if columns[table].get(column) != fresh_columns[table].get(column)}
    assert {key: kept[0][0] for key, kept in differing.items()} == KEPT_WIDER[backend]
    assert set(fresh_keys) - set(keys) == set()  # Hive's older indexes may stay beside them


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_schema_hives_own_scripts_upgraded_is_served_as_it_is(backend, tmp_path):
    """Hive's upgrade chain from 2.3.0 leaves Hive 4.0.0's layout: it validates, and the upgrade only adds
    hmsproxy's own indexes (OWN_KEYS) and widens or tightens a few columns as a fresh schema of ours has them."""
    with fresh_database(backend, tmp_path) as url:
        load_hive_script(backend, url, "2.3.0")
        upgrade_with_hives_scripts(backend, url, "2.3.0")
        code, lines = hmsproxy("schema", "validate", "--db", url, cwd=tmp_path)
        assert code == 0, lines
        assert [line for line in lines if line.startswith("note:")] != []
        engine = create_engine(url)
        try:
            _, steps = upgrade.plan(engine)
        finally:
            engine.dispose()
        assert {step.why for step in steps} <= {"column types and nullability as Hive 4 declares them",
                                                "keys and indexes as Hive 4 declares them",
                                                "rows Hive's scripts insert; id counters past the ids in use"}
        dropping = re.compile(r"DROP (INDEX|TABLE|CONSTRAINT|PRIMARY|COLUMN)")
        assert [statement for step in steps for statement in step.statements if dropping.search(statement)] == []


def test_an_upgrade_that_stopped_part_way_is_resumed_on_mariadb(tmp_path):
    """MySQL commits every DDL statement by itself: an upgrade cut off after some steps is run again and plans
    only what is still missing."""
    with fresh_database("mariadb", tmp_path) as url:
        load_hive_script("mariadb", url, "2.3.0")
        engine = create_engine(url)
        try:
            _version, steps = upgrade.plan(engine)
            upgrade.run(engine, steps[:4], lambda step: None)  # up to the data, not the version
            assert tables_and_version(url)[1][0][1] == "2.3.0"
            _, remaining = upgrade.plan(engine)
        finally:
            engine.dispose()
        done = {"names as Hive 4 spells them", "tables Hive 4 has", "columns Hive 4 has"}
        assert done <= {step.why for step in steps[:4]}
        assert done & {step.why for step in remaining} == set()
        code, lines = hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path)
        assert (code, lines[-1]) == (0, "upgraded schema 2.3.0 to 4.0.0"), lines


def test_an_upgrade_that_fails_on_postgres_changes_nothing(tmp_path):
    """PostgreSQL's DDL is transactional: the whole upgrade is one transaction."""
    with fresh_database("postgres", tmp_path) as url:
        load_hive_script("postgres", url, "2.3.0")
        before = tables_and_version(url)
        engine = create_engine(url)
        try:
            _, steps = upgrade.plan(engine)
            failing = upgrade.Step("a step that fails", ['SELECT 1 FROM "NO_SUCH_TABLE"'])
            with pytest.raises(Exception, match="NO_SUCH_TABLE"):
                upgrade.run(engine, [*steps[:-1], failing, steps[-1]], lambda step: None)
        finally:
            engine.dispose()
        assert tables_and_version(url) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_serve_refuses_an_older_schema_naming_the_command_that_upgrades_it(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        load_hive_3_0(backend, url)
        code, lines = hmsproxy("serve", "--port", "0", "--metrics-port", "0", "--db", url, cwd=tmp_path)
        refusal = lines[-1]
        assert code == 2 and "holds Hive metastore schema 3.0.0; hmsproxy serves Hive 4.0.0's, 3.1.0's and 2.3.0's" \
            in refusal
        command = shlex.split(refusal.split("upgrade it with: ", 1)[1].split(" (--dry-run", 1)[0])
        assert command[:3] == ["hmsproxy", "schema", "upgrade"]
        code, lines = hmsproxy(*command[1:], cwd=tmp_path)
        assert (code, lines[-1]) == (0, "upgraded schema 3.0.0 to 4.0.0"), lines
        with start_hmsproxy(tmp_path / "served", url) as server:
            client = hmsclient.HMSClient(host=server.host, port=server.port)
            client.open()
            try:
                assert client.get_all_databases() == ["default"]
            finally:
                client.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_schema_an_older_hmsproxy_created_moves_to_hive_4s_transaction_ids(backend, tmp_path):
    """The layout an older hmsproxy created (transaction ids from NEXT_TXN_ID) becomes Hive 4.0.0's: ids then come
    from TXNS, above every id the counter handed out."""
    with fresh_database(backend, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        s.NEXT_TXN_ID.create(db.engine)
        with db.engine.begin() as conn:
            conn.execute(insert(s.NEXT_TXN_ID).values(NTXN_NEXT=1000))
        assert check_servable(db) == "legacy"
        code, lines = hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path)
        assert (code, lines[-1]) == (0, "upgraded schema 4.0.0 to 4.0.0"), lines
        assert check_servable(db) == "hive-4"
        db.dispose()
        with start_hmsproxy(tmp_path / "served", url) as server:
            client = hmsclient.HMSClient(host=server.host, port=server.port)
            client.open()
            try:
                assert client.open_txns(A.OpenTxnRequest(num_txns=2, user="u", hostname="h")).txn_ids == [1000, 1001]
            finally:
                client.close()


def test_sqlite_is_not_upgraded_by_the_command(tmp_path):
    code, lines = hmsproxy("schema", "upgrade", "--db", f"sqlite:///{tmp_path / 'm.db'}", cwd=tmp_path)
    assert code == 2 and "brought up to date by `hmsproxy serve` itself" in lines[-1]


def test_the_partitions_of_one_table_are_read_through_an_index_on_mariadb(tmp_path):
    """UNIQUEPARTITION over utf8mb4 names is too long for an InnoDB key: MariaDB keeps it as a hash, which serves no
    lookup by table, so a schema without hmsproxy's own index (an older hmsproxy made it) reads every partition of
    every table to find one table's. `schema validate` notes the index missing (and `serve` warns of it), `schema
    upgrade` adds it, and the query then goes through it."""
    with fresh_database("mariadb", tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        explain = text("EXPLAIN SELECT PART_NAME FROM PARTITIONS WHERE TBL_ID = 7")
        with db.engine.begin() as conn:
            first = db.allocate_ids(conn, "MPartition", 5000)   # ids the counter knows: validate checks it
            conn.execute(insert(s.PARTITIONS), [
                {"PART_ID": first + i, "CREATE_TIME": 0, "LAST_ACCESS_TIME": 0, "PART_NAME": f"p={i}", "TBL_ID": i % 50}
                for i in range(5000)])
            conn.execute(text("ANALYZE TABLE PARTITIONS"))
            assert conn.execute(explain).mappings().one()["key"] == "PARTITIONS_TBL_NAME_IDX"
            conn.execute(text("DROP INDEX PARTITIONS_TBL_NAME_IDX ON PARTITIONS"))
            assert conn.execute(explain).mappings().one()["type"] == "ALL"
        assert [line for line in own_keys_missing_on_mysql(db.engine) if "PARTITIONS_TBL_NAME_IDX" in line] != []
        code, lines = hmsproxy("schema", "validate", "--db", url, cwd=tmp_path)
        assert code == 0 and next(line for line in lines if "PARTITIONS_TBL_NAME_IDX" in line).startswith("note:")
        code, lines = hmsproxy("schema", "upgrade", "--db", url, cwd=tmp_path)
        assert code == 0, lines
        with db.engine.begin() as conn:
            assert conn.execute(explain).mappings().one()["key"] == "PARTITIONS_TBL_NAME_IDX"
        assert own_keys_missing_on_mysql(db.engine) == []   # what `serve` warns of at start
        db.dispose()
