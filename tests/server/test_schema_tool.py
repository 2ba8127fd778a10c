"""`hmsproxy schema info` and `validate` on the databases people have: hmsproxy's own, Hive's own scripts'
(4.0.0, 3.1.0 and 2.3.0 served in place; 3.0.0 to be upgraded), and a damaged one. Exit codes and readable lines."""
from __future__ import annotations

import re

import pytest
from sqlalchemy import create_engine, text

from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from support.cli import run_hmsproxy
from support.databases import fresh_database
from support.hive_schema import load_hive_3_0, load_hive_script

HIVE_4 = ["schema version: 4.0.0 (Hive 4.0.0's layout, as Hive's schematool and hmsproxy create it; transaction "
          "ids from TXNS)",
          "serve: serves it as it is (only a default catalog whose location is 'TBD' gets the warehouse)"]


def _schema(action: str, url: str, cwd) -> tuple[int, list[str]]:
    return run_hmsproxy("schema", action, "--db", url, cwd=cwd)


def _ours(url: str, tmp_path) -> None:
    db = Database(url)
    init_schema(db, f"file:{tmp_path}")
    db.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_our_own_schema_validates_and_a_damaged_one_does_not(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        assert _schema("info", url, tmp_path)[0] == 1  # empty
        _ours(url, tmp_path)
        assert _schema("info", url, tmp_path) == (0, HIVE_4)
        code, lines = _schema("validate", url, tmp_path)
        assert (code, lines[-1]) == (0, "schema 4.0.0: everything hmsproxy reads and writes is there, no id "
                                        "counter is behind")
        engine = create_engine(url)
        quote = engine.dialect.identifier_preparer.quote
        with engine.begin() as conn:
            conn.execute(text(f"UPDATE {quote('NOTIFICATION_SEQUENCE')} SET {quote('NEXT_EVENT_ID')} = 1"))
            conn.execute(text(f"INSERT INTO {quote('NOTIFICATION_LOG')} ({quote('NL_ID')}, {quote('EVENT_ID')}, "
                              f"{quote('EVENT_TIME')}, {quote('EVENT_TYPE')}, {quote('MESSAGE')}) "
                              "VALUES (5, 5, 0, 'CREATE_DATABASE', '{}')"))
        code, lines = _schema("validate", url, tmp_path)  # counters behind would hand out ids in use again
        assert (code, lines) == (1, [
            "SEQUENCE_TABLE org.apache.hadoop.hive.metastore.model.MNotificationLog is at 1, "
            "but NOTIFICATION_LOG.NL_ID 5 is in use",
            "NOTIFICATION_SEQUENCE.NEXT_EVENT_ID is at 1, but NOTIFICATION_LOG.EVENT_ID 5 is in use",
            "2 difference(s): hmsproxy cannot serve this database as it is"])
        with engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {quote('DBS')} DROP COLUMN {quote('REMOTE_DBNAME')}"))
        engine.dispose()
        assert _schema("validate", url, tmp_path) == (1, ["column DBS.REMOTE_DBNAME is missing", "1 difference(s): "
                                                          "hmsproxy cannot serve this database as it is"])


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_hives_schemas_are_told_apart(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        load_hive_script(backend, url, "4.0.0")
        assert _schema("info", url, tmp_path) == (0, HIVE_4)
        assert _schema("validate", url, tmp_path)[0] == 0
    for version in ("3.1.0", "2.3.0"):
        with fresh_database(backend, tmp_path) as url:
            load_hive_script(backend, url, version)
            code, lines = _schema("validate", url, tmp_path)  # notes on hmsproxy's own indexes before
            assert (code, lines[-1]) == (0, f"schema {version}: everything hmsproxy reads and writes is there, no id "
                                            "counter is behind")
            code, lines = _schema("info", url, tmp_path)
            assert (code, lines[0]) == (0, f"schema version: {version} (Hive {version}'s layout, as Hive's schematool "
                                           "creates it; transaction ids from NEXT_TXN_ID)")
            assert lines[1].startswith("serve: serves it as it is")
    with fresh_database(backend, tmp_path) as url:
        load_hive_3_0(backend, url)
        code, lines = _schema("validate", url, tmp_path)
        assert code == 1
        assert lines[0] == "VERSION holds ['3.0.0']; hmsproxy serves schema 4.0.0, 3.1.0 or 2.3.0"
        assert {"table TXN_LOCK_TBL is missing", "column DBS.CREATE_TIME is missing",
                "column TBLS.WRITE_ID is missing"} <= set(lines)
        code, lines = _schema("info", url, tmp_path)
        assert code == 1
        assert lines[0] == "schema version: 3.0.0 (Hive's); hmsproxy serves 4.0.0, 3.1.0 or 2.3.0 in place"
        assert re.fullmatch(r"serve: refuses it; `hmsproxy schema upgrade` would bring it to 4.0.0 with \d+ statements "
                            r"\(`--dry-run` prints them\)", lines[1]), lines
