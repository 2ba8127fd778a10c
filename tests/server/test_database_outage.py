"""A database that stops answering (a network black hole) makes calls fail within the statement timeout
with a declared MetaException, cached reads answer meanwhile, and the server recovers by itself when
the database answers again (issue 11). MariaDB and PostgreSQL through a TCP proxy that stalls: it takes the
bytes and never answers, the case TCP's own timeouts cannot see."""
from __future__ import annotations

import time

import pytest

from hmsproxy.idl import hms
from support.builders import connect_thrift, table
from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy_process
from support.scrape import metric
from support.tcp_proxy import TcpProxy

STATEMENT_TIMEOUT_S = 3


@pytest.mark.parametrize("backend, port", [("mariadb", 3306), ("postgres", 5432)])
def test_a_black_holed_database_fails_calls_in_bounded_time_and_the_server_recovers(backend, port, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        proxy = TcpProxy(port)
        server = start_hmsproxy_process(tmp_path / "server", url.replace(f":{port}/", f":{proxy.port}/"),
                                        "--db-statement-timeout-s", str(STATEMENT_TIMEOUT_S),
                                        "--db-connect-timeout-s", "2")
        try:
            client = connect_thrift(server)
            client.create_database(hms.Database(name="d", parameters={}))
            client.create_table(table(hms, "d", "t"))
            assert client.get_table("d", "t").tableName == "t"
            proxy.stall()
            started = time.monotonic()
            with pytest.raises(hms.MetaException) as failure:
                client.create_database(hms.Database(name="d2", parameters={}))   # a write: always the database
            failed_after = time.monotonic() - started
            assert failed_after < 4 * STATEMENT_TIMEOUT_S, failed_after
            assert "metastore database" in failure.value.message and str(port) not in failure.value.message
            assert metric(server, "hmsproxy_db_errors_total", kind="unreachable") >= 1
            started = time.monotonic()
            assert client.get_table("d", "t").tableName == "t"                    # the cache answers meanwhile
            assert time.monotonic() - started < 1.0
            proxy.restore()
            deadline = time.monotonic() + 30
            while True:   # the server recovers without a restart
                try:
                    client.create_database(hms.Database(name="d2", parameters={}))
                    break
                except hms.MetaException:
                    assert time.monotonic() < deadline, "the server did not recover"
                    time.sleep(0.2)  # polling the recovered server, bounded by the deadline
            assert "d2" in client.get_all_databases()
            client.close()
        finally:
            server.stop()
            proxy.close()
