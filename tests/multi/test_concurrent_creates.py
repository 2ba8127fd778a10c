"""Tables created concurrently through two instances right after their database was created through one
of them: every acknowledged table is listed by both instances (also by the one that created it before it
had learnt of the database), with ids unique across the instances."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

from hmsproxy.idl import hms
from support.builders import table
from support.instances import connect, instances_on_one_database

THREADS = 16
TABLES_PER_THREAD = 8
SYNC_BOUND_S = 15.0  # the poll interval is 0.2 s; this only bounds a broken test


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_every_acknowledged_table_is_listed_by_every_instance(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path) as (_, servers):
        db = f"burst_{uuid.uuid4().hex[:6]}"
        first = connect(servers[0])
        first.create_database(hms.Database(name=db, parameters={}))
        acknowledged: list[str] = []
        errors: list[str] = []
        guard = threading.Lock()

        def create(thread: int) -> None:
            client = connect(servers[thread % 2])
            for i in range(TABLES_PER_THREAD):
                name = f"t_{thread}_{i}"
                try:
                    client.create_table(table(hms, db, name))
                except Exception as exc:  # recorded: every create must succeed
                    with guard:
                        errors.append(f"{name}: {exc!r}")
                    continue
                with guard:
                    acknowledged.append(name)
            client.close()

        threads = [threading.Thread(target=create, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        expected = sorted(acknowledged)
        assert len(expected) == THREADS * TABLES_PER_THREAD
        for server in servers:
            client = connect(server)
            deadline = time.monotonic() + SYNC_BOUND_S
            while sorted(client.get_all_tables(db)) != expected and time.monotonic() < deadline:
                time.sleep(0.05)  # waiting for the other instance's events to be applied
            assert sorted(client.get_all_tables(db)) == expected, sorted(set(expected) - set(client.get_all_tables(db)))
            ids = [t.id for t in client.get_table_objects_by_name(db, expected)]
            assert len(set(ids)) == len(expected)
            client.close()
        first.close()
