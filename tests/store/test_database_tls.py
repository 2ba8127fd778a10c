"""TLS to MySQL/MariaDB is what the URL asks for: plain without TLS options (pymysql 1.2 would otherwise try
unchecked TLS on every connection, building an SSL context for each), required with them (a database that does
not offer it refuses the connection, never a silent fall back to plain text)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text

from hmsproxy.store.sql.database import Database
from support.databases import fresh_database

SYSTEM_CAS = Path("/etc/ssl/certs/ca-certificates.crt")


@pytest.fixture
def mariadb_url(tmp_path) -> Iterator[str]:
    with fresh_database("mariadb", tmp_path) as url:
        yield url


def _offers_tls(db: Database) -> bool:
    with db.transaction() as conn:
        return conn.execute(text("SELECT @@have_ssl")).scalar_one() == "YES"


def test_a_url_without_tls_options_connects_plain(mariadb_url):
    db = Database(mariadb_url, pool_size=1)
    try:
        with db.transaction() as conn:
            driver = conn.connection.dbapi_connection
            cipher = conn.execute(text("SHOW SESSION STATUS LIKE 'Ssl_cipher'")).one()[1]
        assert driver.ssl is False
        assert cipher == ""
    finally:
        db.dispose()


def test_tls_asked_in_the_url_is_required(mariadb_url):
    if not SYSTEM_CAS.is_file():
        pytest.skip(f"no CA bundle at {SYSTEM_CAS} to name in the URL")
    plain = Database(mariadb_url, pool_size=1)
    try:
        if _offers_tls(plain):
            pytest.skip("this MariaDB offers TLS: a refused connection cannot be shown against it")
    finally:
        plain.dispose()
    db = Database(f"{mariadb_url}?ssl_ca={SYSTEM_CAS}", pool_size=1)
    try:
        with pytest.raises(sa_exc.OperationalError, match="SSL"), db.transaction():
            pass
    finally:
        db.dispose()
