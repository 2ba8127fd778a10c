"""The metrics an operator's dashboard and alerts need beyond the calls themselves: readiness as a number, the
database pool (connections in use, waits for one) and the time of the last successful read of the notification
log. Read from a real server's /metrics while real clients call it."""
from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

import pytest

from hmsproxy.idl import hms
from support.builders import connect_thrift
from support.hmsproxy_server import start_hmsproxy
from support.polling import wait_for
from support.ports import free_port
from support.scrape import metric


@pytest.mark.parametrize("cache", [True, False])
def test_ready_is_one_once_the_server_answers_readyz(tmp_path, cache):
    with start_hmsproxy(tmp_path, metrics_port=free_port(), cache=cache) as server:
        wait_for(lambda: metric(server, "hmsproxy_ready") == 1, "hmsproxy_ready == 1")


def test_every_transaction_waits_for_a_connection_and_gives_it_back(tmp_path):
    with start_hmsproxy(tmp_path, metrics_port=free_port(), cache=False) as server:
        before = metric(server, "hmsproxy_db_pool_wait_seconds_count")
        client = connect_thrift(server)
        for n in range(20):
            client.create_database(hms.Database(name=f"d{n}", parameters={}))
        client.close()
        assert metric(server, "hmsproxy_db_pool_wait_seconds_count") >= before + 20
        assert metric(server, "hmsproxy_db_pool_connections_in_use") == 0


def test_connections_held_by_calls_in_flight_are_counted(tmp_path):
    """Clients pulling listings at once hold connections: the gauge sees some of them in use, then none."""
    with start_hmsproxy(tmp_path, metrics_port=free_port(), cache=False) as server:
        seen: list[float] = []
        stop = threading.Event()

        def pull() -> None:
            client = connect_thrift(server)
            while not stop.is_set():
                client.get_all_databases()
            client.close()

        pullers = [threading.Thread(target=pull) for _ in range(4)]
        for puller in pullers:
            puller.start()
        deadline = time.monotonic() + 30
        while not any(seen) and time.monotonic() < deadline:
            seen.append(metric(server, "hmsproxy_db_pool_connections_in_use"))
        stop.set()
        for puller in pullers:
            puller.join()
        assert any(seen), "no connection was ever seen in use"
        assert metric(server, "hmsproxy_db_pool_connections_in_use") == 0


def test_the_last_successful_poll_of_the_notification_log_is_recent(tmp_path):
    with start_hmsproxy(tmp_path, metrics_port=free_port(), poll_interval_s=0.05) as server:
        started = time.time()
        wait_for(lambda: metric(server, "hmsproxy_notification_last_poll_timestamp_seconds") >= started,
                 "a poll after the test started")


def test_the_process_reports_its_memory_cpu_and_open_files(tmp_path):
    """The process collector: RSS (what deploy/'s memory sizing rests on), CPU and open files, as the kernel counts
    them for this process (the server runs in the test's own process here)."""
    with start_hmsproxy(tmp_path, metrics_port=free_port()) as server:
        rss = metric(server, "process_resident_memory_bytes")
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        assert 0.5 < rss / (pages * os.sysconf("SC_PAGE_SIZE")) < 2
        assert metric(server, "process_cpu_seconds_total") > 0
        assert metric(server, "process_open_fds") > 0   # the scrape's own sockets among them: no exact count
        assert metric(server, "process_max_fds") == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
