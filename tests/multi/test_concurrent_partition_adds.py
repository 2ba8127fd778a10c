"""The same partitions added at once with ifNotExists by writers on two instances of one database, as Spark jobs
writing the same day's partition do: every call succeeds, each partition is added by exactly one of them (the one
it is returned to), announced by exactly one ADD_PARTITION event, and both instances' caches hold that writer's
partition."""
from __future__ import annotations

import json
import threading

import pytest

from hmsproxy.idl import hms
from support.builders import partition, table
from support.instances import connect, instances_on_one_database
from support.polling import wait_for

WRITERS = 6
ROUNDS = 5
PER_ROUND = 8
SYNC_BOUND_S = 30.0  # the poll interval is 0.2 s; this only bounds a broken test


def _writer_partitions(tbl: hms.Table, round_: int, writer: int) -> list[hms.Partition]:
    return [partition(hms, tbl, [str(round_ * PER_ROUND + i)], params={"writer": str(writer)})
            for i in range(PER_ROUND)]


def _cached_writers(client, db: str) -> dict[str, str]:
    return {p.values[0]: p.parameters.get("writer", "") for p in client.get_partitions(db, "t", -1)}


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_same_partitions_added_at_once_with_if_not_exists_are_added_once(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path) as (_, servers):
        db = "adds"
        tbl = table(hms, db, "t", part_keys=[("k", "int")])
        first = connect(servers[0])
        first.create_database(hms.Database(name=db, parameters={}))
        first.create_table(tbl)
        start = threading.Barrier(WRITERS, timeout=120)  # a writer that died breaks it rather than hanging the run
        added_by: dict[str, list[str]] = {}   # partition value -> the writers it was returned to
        errors: list[str] = []
        guard = threading.Lock()

        def add(writer: int) -> None:
            client = connect(servers[writer % 2])
            for round_ in range(ROUNDS):
                start.wait()
                try:
                    result = client.add_partitions_req(hms.AddPartitionsRequest(
                        dbName=db, tblName="t", parts=_writer_partitions(tbl, round_, writer), ifNotExists=True,
                        needResult=True))
                except Exception as exc:  # recorded: every add must succeed
                    with guard:
                        errors.append(f"writer {writer}, round {round_}: {exc!r}")
                    continue
                with guard:
                    for part in result.partitions or []:
                        added_by.setdefault(part.values[0], []).append(str(writer))
            client.close()

        threads = [threading.Thread(target=add, args=(w,)) for w in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        expected_values = sorted(str(v) for v in range(ROUNDS * PER_ROUND))
        assert sorted(added_by) == expected_values
        assert {value: len(writers) for value, writers in added_by.items() if len(writers) != 1} == {}
        writer_of = {value: writers[0] for value, writers in added_by.items()}

        events = first.get_next_notification(hms.NotificationEventRequest(
            lastEvent=0, dbName=db, eventTypeSkipList=["CREATE_DATABASE", "CREATE_TABLE"])).events
        announced = [kv["k"] for e in events for kv in json.loads(e.message)["partitions"]]
        assert {e.eventType for e in events} == {"ADD_PARTITION"}
        assert sorted(announced) == expected_values

        for server in servers:
            client = connect(server)
            wait_for(lambda: _cached_writers(client, db) == writer_of,  # noqa: B023 (polled within the iteration)
                     "every partition's writer cached by the instance", SYNC_BOUND_S, interval=0.1)
            client.close()
        first.close()
