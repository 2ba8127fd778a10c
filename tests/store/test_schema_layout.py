"""A fresh hmsproxy schema against the one Hive 4.0.0's own script creates (shared/hive-schema, applied to a
scratch database with the database's own client): table for table, column for column, type and nullability.
What still differs is listed here with its reason, so the list can only shrink: a new difference fails."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import create_engine, insert, inspect, text

from hmsproxy.events import messages
from hmsproxy.idl import hms
from hmsproxy.store.sql import event_log
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.layout import column_names
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.sequences import reserve
from hmsproxy.store.sql.store import SqlStore
from support.databases import fresh_database
from support.hive_schema import columns_layout, keys_layout, load_hive_script

STATS_KEYS = ([f"{t}.{c}" for t in ("TAB_COL_STATS", "PART_COL_STATS")
               for c in ("CAT_NAME", "DB_NAME", "TABLE_NAME", "COLUMN_NAME", "COLUMN_TYPE")]
              + ["PART_COL_STATS.PARTITION_NAME"])
T = TypeVar("T")
KNOWN = {  # column -> why it differs; (None: the column is missing in ours)
    "mariadb": {
        "COLUMNS_V2.COLUMN_NAME": "varchar(700): 767 utf8mb4 characters do not fit InnoDB's key (Hive's is latin1)",
        "DATABASE_PARAMS.PARAM_VALUE": "mediumtext: values longer than Hive's 4000 are kept",
        **{f"{t}.{c}": "double: Hive's double(53,4) rounds statistics to 4 decimals"
           for t in ("TAB_COL_STATS", "PART_COL_STATS")
           for c in ("AVG_COL_LEN", "DOUBLE_HIGH_VALUE", "DOUBLE_LOW_VALUE")},
    },
    "postgres": {
        "DATABASE_PARAMS.PARAM_VALUE": "text: values longer than Hive's 4000 are kept",
        "VERSION.VERSION_COMMENT": "NOT NULL on PostgreSQL only; one declaration serves both",
        **{key: "NOT NULL as in Hive's MySQL script; its PostgreSQL script allows null" for key in STATS_KEYS},
    },
}


def _hive_and_ours(backend: str, tmp_path: Path, layout: Callable[[str], T]) -> tuple[T, T]:
    """The layout of the schema Hive 4.0.0's script creates, and of a fresh one of ours."""
    with fresh_database(backend, tmp_path) as hive_url, fresh_database(backend, tmp_path) as our_url:
        load_hive_script(backend, hive_url, "4.0.0")
        db = Database(our_url)
        init_schema(db, f"file:{tmp_path}")
        db.dispose()
        return layout(hive_url), layout(our_url)


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])  # Hive has no SQLite script
def test_a_fresh_schema_is_hive_4s_but_for_the_listed_differences(backend, tmp_path):
    hive, ours = _hive_and_ours(backend, tmp_path, columns_layout)
    assert set(hive) - set(ours) == set()
    assert set(ours) - set(hive) == set()
    differing = {f"{table}.{column}": (hive[table].get(column), ours[table].get(column))
                 for table in set(hive) & set(ours) for column in set(hive[table]) | set(ours[table])
                 if hive[table].get(column) != ours[table].get(column)}
    assert {key: value for key, value in differing.items() if key not in KNOWN[backend]} == {}
    assert set(KNOWN[backend]) - set(differing) == set()  # a difference that went away leaves the list


FOREIGN_KEY_INDEX = re.compile(r".*_(N49|N50|FK\d*)$")  # Hive's names of indexes behind a foreign key
KNOWN_KEYS = {  # key -> why it differs; ours: only in hmsproxy's schema, hive: only in Hive's
    "ours": {
        ("TAB_COL_STATS", False, ("TBL_ID", "COLUMN_NAME")): "statistics are looked up by table id",
        ("PART_COL_STATS", False, ("PART_ID", "COLUMN_NAME")): "as TAB_COL_STATS, by partition id",
        ("NOTIFICATION_LOG", False, ("DB_NAME", "TBL_NAME", "EVENT_ID")): "the table-filtered event reads",
        ("NEXT_LOCK_ID", True, ("NL_NEXT",)): "a primary key on the single-row counter (Hive's has none)",
        ("NEXT_WRITE_ID", True, ("NWI_DATABASE", "NWI_TABLE")): "primary key; Hive's unique key of the same columns",
        ("I_SCHEMA", False, ("NAME",)): "Hive's MySQL script's plain key; its PostgreSQL script's is unique",
        ("SCHEMA_VERSION", False, ("SCHEMA_ID", "VERSION")): "as I_SCHEMA",
    },
    "hive": {
        ("NEXT_WRITE_ID", True, ("NWI_DATABASE", "NWI_TABLE")): "see ours",
        ("TXN_WRITE_NOTIFICATION_LOG", True, ("WNL_TXNID", "WNL_DATABASE", "WNL_TABLE", "WNL_PARTITION")):
            "its primary key (1151 characters) does not fit an InnoDB key in utf8mb4; hmsproxy does not write it",
        ("I_SCHEMA", True, ("NAME",)): "unique on PostgreSQL only; one declaration (MySQL's plain key) serves both",
        ("SCHEMA_VERSION", True, ("SCHEMA_ID", "VERSION")): "as I_SCHEMA",
        ("SCHEDULED_EXECUTIONS", True, ("SCHEDULED_EXECUTION_ID",)): "the primary key already",
    },
}
MARIADB_KEYS = {  # ours, on MariaDB only
    ("PARTITIONS", False, ("TBL_ID", "PART_NAME")): "UNIQUEPARTITION over utf8mb4 names is a hash there, which "
                                                    "serves no lookup by table (Hive's names are latin1)",
}


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_a_fresh_schema_has_hive_4s_keys_but_for_the_listed_differences(backend, tmp_path):
    """Unique keys exactly; of Hive's plain indexes, those behind its foreign keys (hmsproxy declares none) and
    those a key of ours already serves (the same leading columns) may be missing."""
    hive, ours = _hive_and_ours(backend, tmp_path, keys_layout)

    def behind_a_foreign_key(name: str, columns: tuple[str, ...]) -> bool:  # MySQL names its own after the column
        return bool(FOREIGN_KEY_INDEX.match(name)) or columns == (name,)

    def served_by_ours(table: str, columns: tuple[str, ...]) -> bool:
        return any(t == table and c[:len(columns)] == columns for t, _, c in ours)

    only_hive = {key for key in set(hive) - set(ours)
                 if key[1] or not (behind_a_foreign_key(hive[key], key[2]) or served_by_ours(key[0], key[2]))}
    known_ours = {**KNOWN_KEYS["ours"], **(MARIADB_KEYS if backend == "mariadb" else {})}
    assert only_hive - set(KNOWN_KEYS["hive"]) == set()
    assert set(ours) - set(hive) - set(known_ours) == set()
    assert set(known_ours) <= set(ours)


def _make_legacy(db: Database) -> None:
    """What marks a schema an older hmsproxy created: its transaction id counter, NEXT_TXN_ID."""
    s.NEXT_TXN_ID.create(db.engine)
    with db.engine.begin() as conn:
        conn.execute(insert(s.NEXT_TXN_ID).values(NTXN_NEXT=1))


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_schema_an_older_hmsproxy_created_gets_the_new_columns(backend, tmp_path):
    """init_schema (run at every start) adds the columns this version declares to an existing schema, and
    what the schema held is served as before."""
    with fresh_database(backend, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")
        store = SqlStore(db)
        store.create_database(hms.Database(name="kept", locationUri=f"file:{tmp_path}/kept.db", parameters={"p": "v"},
                                           catalogName="hive"))
        quote = db.engine.dialect.identifier_preparer.quote
        _make_legacy(db)
        with db.engine.begin() as conn:  # as an older hmsproxy left it
            for column in ("DATACONNECTOR_NAME", "REMOTE_DBNAME"):
                conn.execute(text(f"ALTER TABLE {quote('DBS')} DROP COLUMN {quote(column)}"))
        assert init_schema(db, f"file:{tmp_path}") is False
        present = {c["name"] for c in inspect(db.engine).get_columns("DBS")}
        assert {"DATACONNECTOR_NAME", "REMOTE_DBNAME"} <= present
        assert store.get_database("hive", "kept").parameters == {"p": "v"}
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_a_log_an_older_hmsproxy_numbered_by_event_id_goes_on_without_a_clash(backend, tmp_path):
    """NL_ID now comes from SEQUENCE_TABLE, as Hive's listener takes it; an older hmsproxy left that counter at 1
    while numbering rows 1, 2, ...: at start it is moved past them, so the next event's row id is new."""
    with fresh_database(backend, tmp_path) as url:
        db = Database(url)
        init_schema(db, f"file:{tmp_path}")

        def log_one(name: str) -> None:
            with db.engine.begin() as conn:
                event = messages.create_database(hms.Database(name=name, parameters={}))
                event_log.append(conn, [event], reserve(conn, "MNotificationLog", 1))

        log_one("one")
        log_one("two")
        quote = db.engine.dialect.identifier_preparer.quote
        _make_legacy(db)
        with db.engine.begin() as conn:  # as an older hmsproxy left it
            conn.execute(text(f"UPDATE {quote('SEQUENCE_TABLE')} SET {quote('NEXT_VAL')} = 1 WHERE "
                              f"{quote('SEQUENCE_NAME')} = 'org.apache.hadoop.hive.metastore.model.MNotificationLog'"))
        init_schema(db, f"file:{tmp_path}")
        log_one("three")
        with db.engine.connect() as conn:
            rows = conn.execute(text(f"SELECT {quote('NL_ID')} FROM {quote('NOTIFICATION_LOG')}")).scalars().all()
        assert sorted(rows) == [1, 2, 3]
        db.dispose()


@pytest.mark.parametrize("version", ["2.3.0", "4.0.0"])
def test_column_names_read_in_one_query_match_sqlalchemys_reflection_on_mysql(version, tmp_path):
    """The layout's one-query read on MySQL/MariaDB (layout.column_names) against SQLAlchemy's reflection of every
    table, on Hive's own schemas: the same tables, the same columns, and a view left out as reflection leaves it."""
    with fresh_database("mariadb", tmp_path) as url:
        load_hive_script("mariadb", url, version)
        engine = create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(text("CREATE VIEW TBLS_VIEW AS SELECT TBL_ID, TBL_NAME FROM TBLS"))
            reflected = {name: {column["name"] for column in columns}
                         for (_, name), columns in inspect(engine).get_multi_columns().items()}
            with engine.connect() as conn:
                read = column_names(conn)
        finally:
            engine.dispose()
    assert ("NEXT_TXN_ID" if version == "2.3.0" else "TXN_LOCK_TBL") in read
    assert "TBLS_VIEW" not in read
    assert read == reflected
