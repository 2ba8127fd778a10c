"""UpstreamPool against the real Java Hive Metastore 2.3.10, directly and through a TcpProxy that cuts and stalls it."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from thriftpy2.thrift import TApplicationException, TDecodeException

from hmsproxy.idl import hms
from hmsproxy.upstream import pool as pool_module
from hmsproxy.upstream.pool import UpstreamPool, UpstreamUnavailable
from support.polling import wait_for
from support.ports import free_port
from support.reference_hms import reference_hms_fixture
from support.running import RunningServer
from support.tcp_proxy import TcpProxy

SLACK_S = 1.5   # scheduling and a connect or two on loopback, on top of a time bound


hive = reference_hms_fixture("upstream-hive")


@pytest.fixture
def proxy(hive) -> Iterator[TcpProxy]:
    proxy = TcpProxy(hive.port)
    yield proxy
    proxy.close()


def via(proxy: TcpProxy) -> str:
    return f"thrift://127.0.0.1:{proxy.port}"


class Observations(list[tuple[str, str]]):
    """The observe hook's calls as (method, outcome); the durations are checked to be times."""

    def __call__(self, method_name: str, seconds: float, outcome: str) -> None:
        assert 0 <= seconds < 60
        self.append((method_name, outcome))


def sockets_to(port: int) -> int:
    """Established TCP connections of this process to `port`, read from /proc: a count the pool cannot fake."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


def audit_lines(hive: RunningServer, text: str) -> int:
    assert hive.workdir is not None
    return sum(text in line for line in (hive.workdir / "hms-audit.log").read_text().splitlines())


def exists(pool: UpstreamPool, database: str) -> bool:
    try:
        pool.call("get_database", database)
    except hms.NoSuchObjectException:
        return False
    return True



# ---- configuration ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("uri", ["http://h:9083", "thrift://h", "thrift://:9083", "thrift://h:99999", "thrift://h:0",
                                 "thrift://h:9083/db", "thrift://h:9083?x=1", "thrift://u@h:9083", "h:9083", ""])
def test_a_bad_uri_is_refused_by_name(uri):
    with pytest.raises(ValueError, match="URI"):
        UpstreamPool([uri])


def test_uris_come_as_a_list_or_as_hive_metastore_uris_does():
    pool = UpstreamPool("thrift://a:9083, thrift://[::1]:9084")
    assert pool.uris == ("thrift://a:9083", "thrift://[::1]:9084")
    assert pool.connections_opened == 0    # nothing is opened before the first call
    with pytest.raises(ValueError, match="max_connections"):
        UpstreamPool(["thrift://a:9083"], max_connections=0)
    with pytest.raises(ValueError, match="timeout_s"):
        UpstreamPool(["thrift://a:9083"], timeout_s=0)


# ---- against Hive 2.3.10 ------------------------------------------------------------------------------------------

def test_a_call_reaches_the_upstream(hive):
    seen = Observations()
    with UpstreamPool([hive.uri], observe=seen) as pool:
        assert not pool.healthy
        assert "default" in pool.call("get_all_databases")
        assert pool.call("get_database", "default").name == "default"
        assert pool.healthy
        assert pool.connections_opened == 1
    assert seen == [("get_all_databases", "ok"), ("get_database", "ok")]


def test_a_declared_exception_comes_through_unchanged_and_the_connection_stays(hive):
    seen = Observations()
    with UpstreamPool([hive.uri], max_connections=1, observe=seen) as pool:
        with pytest.raises(hms.NoSuchObjectException) as info:
            pool.call("get_database", "nope")
        assert type(info.value) is hms.NoSuchObjectException
        assert info.value.message == "nope"
        with pytest.raises(hms.MetaException, match="Invalid configuration key"):
            pool.call("getMetaConf", "no.such.key")
        # a Hive 4 call Hive 2.3 does not know: TApplicationException, also an answer
        with pytest.raises(TApplicationException, match="get_database_req"):
            pool.call("get_database_req", hms.GetDatabaseRequest(name="default"))
        assert "default" in pool.call("get_all_databases")
        assert pool.connections_opened == 1
        assert pool.healthy
    assert [outcome for _, outcome in seen] == ["declared_error", "declared_error", "declared_error", "ok"]


def test_arguments_that_cannot_be_sent_fail_the_call_only(hive):
    seen = Observations()
    with UpstreamPool([hive.uri], max_connections=1, observe=seen) as pool:
        with pytest.raises(TDecodeException, match="name"):
            pool.call("get_database", 123)
        with pytest.raises(ValueError, match="not a method"):
            pool.call("no_such_call")
        assert "default" in pool.call("get_all_databases")   # the slot was given back
        assert pool.healthy
    assert seen == [("get_all_databases", "ok")]   # nothing was exchanged with the upstream before


def test_a_connection_that_carried_a_big_reply_is_not_kept(hive, monkeypatch):
    monkeypatch.setattr(pool_module, "KEEP_AFTER_REPLY_BYTES", 64)
    with UpstreamPool([hive.uri]) as pool:
        assert pool.call("get_database", "default").name == "default"   # a few hundred bytes: closed after
        for _ in range(2):
            assert pool.call("getMetaConf", "hive.metastore.client.socket.timeout") == "600s"   # small: kept
        assert pool.connections_opened == 2
        assert sockets_to(hive.port) == 1


def test_the_probe_says_whether_the_upstream_answers(hive):
    with UpstreamPool([hive.uri]) as pool:
        assert pool.probe()
    with UpstreamPool([f"thrift://127.0.0.1:{free_port()}"]) as pool:
        assert not pool.probe()
        assert not pool.healthy


def test_many_threads_share_a_bounded_pool(hive):
    threads, calls, bound = 8, 50, 3
    errors: list[BaseException] = []
    pool = UpstreamPool([hive.uri], max_connections=bound)

    def work(worker: int) -> None:
        try:
            for i in range(calls):
                if i % 2:
                    name = f"missing_{worker}_{i}"
                    try:
                        pool.call("get_database", name)
                    except hms.NoSuchObjectException as exc:
                        assert exc.message == name   # each answer belongs to its own request
                    else:
                        raise AssertionError(f"{name} exists")
                else:
                    assert "default" in pool.call("get_all_databases")
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    try:
        assert not errors, errors[:3]
        assert not any(worker.is_alive() for worker in workers)
        assert 1 <= pool.connections_opened <= bound
        assert sockets_to(hive.port) == pool.connections_opened   # all pooled, none leaked
    finally:
        pool.close()
    assert sockets_to(hive.port) == 0
    with pytest.raises(RuntimeError, match="closed"):
        pool.call("get_all_databases")


# ---- failover, outages ------------------------------------------------------------------------------------------

def test_a_dead_first_upstream_fails_over_to_the_next(hive):
    seen = Observations()
    dead = f"thrift://127.0.0.1:{free_port()}"
    with UpstreamPool([dead, hive.uri], observe=seen) as pool:
        assert "default" in pool.call("get_all_databases")
        assert seen == [("get_all_databases", "transport_error"), ("get_all_databases", "ok")]
        for _ in range(3):   # then it stays on the one that answers
            assert pool.call("get_database", "default").name == "default"
        assert seen[2:] == [("get_database", "ok")] * 3
        assert pool.connections_opened == 1


def test_a_cut_upstream_fails_within_the_bound_and_works_again_when_back(hive, proxy):
    bound = 4.0
    with UpstreamPool([via(proxy)], timeout_s=2.0, connect_timeout_s=1.0, call_timeout_s=bound) as pool:
        assert "default" in pool.call("get_all_databases")
        proxy.cut()
        started = time.monotonic()
        with pytest.raises(UpstreamUnavailable) as info:
            pool.call("get_all_databases")
        assert time.monotonic() - started < bound + SLACK_S
        assert via(proxy) in str(info.value)
        assert info.value.uris == (via(proxy),)
        assert not pool.healthy
        proxy.restore()
        assert "default" in pool.call("get_all_databases")   # the same pool, no waiting for a backoff
        assert pool.healthy


def test_a_connection_closed_while_idle_is_not_used_even_for_a_write(hive, proxy):
    with UpstreamPool([via(proxy)], call_timeout_s=10.0) as pool:
        assert "default" in pool.call("get_all_databases")
        proxy.cut()       # the pooled connection is closed by the other end
        proxy.restore()
        pool.call("create_database", hms.Database(name="after_idle_close", parameters={}), idempotent=False)
        assert pool.call("get_database", "after_idle_close").name == "after_idle_close"
        assert pool.connections_opened == 2


def test_a_stalled_upstream_fails_within_the_timeout(hive, proxy):
    with UpstreamPool([via(proxy)], timeout_s=1.5, call_timeout_s=3.0) as pool:
        assert "default" in pool.call("get_all_databases")
        proxy.stall()
        started = time.monotonic()
        with pytest.raises(UpstreamUnavailable, match=r"no answer within 1\.5 s"):
            pool.call("get_all_databases")
        assert time.monotonic() - started < 3.0 + SLACK_S
        proxy.restore()
        assert "default" in pool.call("get_all_databases")


def test_the_bound_holds_across_failover_attempts(hive, proxy):
    other = TcpProxy(hive.port)
    try:
        # each upstream alone would take 5 s of silence, both 10 s; the call's bound leaves the second 1 s
        with UpstreamPool([via(proxy), via(other)], timeout_s=5.0, call_timeout_s=6.0) as pool:
            proxy.stall()
            other.stall()
            started = time.monotonic()
            with pytest.raises(UpstreamUnavailable) as info:
                pool.call("get_all_databases")
            assert time.monotonic() - started < 6.0 + SLACK_S    # not 2 x 5 s
            assert via(proxy) in str(info.value) and via(other) in str(info.value)
    finally:
        other.close()


def test_a_read_fails_over_after_its_request_went_unanswered(hive, proxy):
    seen = Observations()
    with UpstreamPool([via(proxy), hive.uri], timeout_s=1.5, call_timeout_s=10.0, observe=seen) as pool:
        assert "default" in pool.call("get_all_databases")
        proxy.stall()
        assert pool.call("get_database", "default").name == "default"
        assert seen[1:] == [("get_database", "transport_error"), ("get_database", "ok")]


def test_a_write_is_not_sent_again_after_its_request_went_unanswered(hive, proxy):
    name = "sent_once"
    with UpstreamPool([via(proxy), hive.uri], timeout_s=1.5, call_timeout_s=10.0) as pool:
        assert "default" in pool.call("get_all_databases")
        proxy.stall()
        with pytest.raises(UpstreamUnavailable, match="not idempotent") as info:
            pool.call("create_database", hms.Database(name=name, parameters={}), idempotent=False)
        assert info.value.maybe_applied
        # had it been sent again, the second upstream (the same Hive, directly) would have created it by now
        with pytest.raises(hms.NoSuchObjectException):
            pool.call("get_database", name)
        proxy.restore()   # the request held in the proxy reaches Hive now
        wait_for(lambda: exists(pool, name), f"{name} exists upstream", timeout=30.0)
        assert audit_lines(hive, f"create_database: Database(name:{name},") == 1
