"""The Thrift server itself: connection cap, framed transport, metrics endpoint, one-way shutdown."""
import urllib.error
import urllib.request

import pytest
from thriftpy2.transport import TCyFramedTransportFactory, TTransportException

from hmsproxy.idl import hms
from support.builders import connect_thrift
from support.hmsproxy_server import start_hmsproxy
from support.polling import wait_for
from support.ports import free_port


@pytest.fixture
def capped_server(tmp_path):
    server = start_hmsproxy(tmp_path, max_connections=2)
    yield server
    server.stop()

def _client(server, **options):
    return connect_thrift(server, timeout_ms=10000, **options)

def test_connections_beyond_the_cap_are_closed_cleanly_and_served_again_later(capped_server):
    first, second = _client(capped_server), _client(capped_server)
    assert first.get_all_databases() == ["default"]
    assert second.get_all_databases() == ["default"]
    third = _client(capped_server)
    with pytest.raises((TTransportException, ConnectionError)):
        third.get_all_databases()
    third.close()
    first.close()
    # the slot is released when the server sees the close; retry until it does (bounded)
    for _ in range(200):
        fourth = _client(capped_server)
        try:
            assert fourth.get_all_databases() == ["default"]
            break
        except (TTransportException, ConnectionError):
            fourth.close()
    else:
        pytest.fail("a freed connection slot was never reused")
    assert second.get_database("default").name == "default"
    fourth.close()
    second.close()

def test_framed_transport(tmp_path):
    server = start_hmsproxy(tmp_path, framed=True)
    try:
        client = _client(server, trans_factory=TCyFramedTransportFactory())
        assert client.get_database("default").name == "default"
        client.close()
    finally:
        server.stop()

def test_metrics_health_and_readiness(tmp_path):
    port = free_port()
    server = start_hmsproxy(tmp_path, metrics_port=port)
    try:
        client = _client(server)
        client.get_database("default")
        with pytest.raises(hms.NoSuchObjectException):
            client.get_database("missing")
        client.close()
        base = f"http://127.0.0.1:{port}"
        assert urllib.request.urlopen(base + "/healthz").read() == b"ok\n"
        # ready once prewarm is done, which may come after the first answers (they pass through to the database)
        wait_for(lambda: _status(base + "/readyz") == 200, "/readyz answering 200")
        text = urllib.request.urlopen(base + "/metrics").read().decode()
        assert 'hmsproxy_requests_total{method="get_database",outcome="ok"} 1.0' in text
        assert 'hmsproxy_requests_total{method="get_database",outcome="NoSuchObjectException"} 1.0' in text
        assert 'hmsproxy_request_seconds_bucket{le="0.1",method="get_database"}' in text
    finally:
        server.stop()

def _status(url: str) -> int:
    try:
        return urllib.request.urlopen(url).status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_stop_closes_open_client_connections(tmp_path):
    server = start_hmsproxy(tmp_path)
    client = _client(server)
    assert client.get_all_databases() == ["default"]
    server.stop()
    with pytest.raises(TTransportException):
        client.get_all_databases()
    client.close()
