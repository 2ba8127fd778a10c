"""Hive 4's lock-free commit: alter_table_with_environment_context with expected_parameter_key/value is a
compare-and-set decided by the database. Writers racing from one base through two instances: exactly one
wins each round, the others get the MetaException whose prefix Iceberg turns into a retryable
CommitFailedException."""
from __future__ import annotations

import threading
import uuid

import pytest

from hmsproxy.idl import hms
from support.builders import table
from support.instances import connect, instances_on_one_database

WRITERS = 8
ROUNDS = 10
KEY = "metadata_location"
REJECTION_PREFIX = f"The table has been modified. The parameter value for key '{KEY}' is"


def _iceberg_table(db: str, location: str) -> hms.Table:
    """External table t whose current metadata file is `location` (Iceberg's pointer kept in the metastore)."""
    return table(hms, db, "t", table_type="EXTERNAL_TABLE", params={KEY: location, "EXTERNAL": "TRUE"})


def _cas(client, db: str, expected: str, new: str) -> None:
    current = client.get_table(db, "t")
    current.parameters[KEY] = new
    context = hms.EnvironmentContext(properties={"expected_parameter_key": KEY, "expected_parameter_value": expected})
    client.alter_table_with_environment_context(db, "t", current, context)


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_exactly_one_of_racing_writers_wins_each_round(backend, tmp_path):
    with instances_on_one_database(backend, tmp_path) as (_, servers):
        db = f"cas_{uuid.uuid4().hex[:6]}"
        setup = connect(servers[0])
        setup.create_database(hms.Database(name=db, parameters={}))
        setup.create_table(_iceberg_table(db, "v0"))
        clients = [connect(servers[i % 2]) for i in range(WRITERS)]

        def write(i: int, round_: int, base: str, start: threading.Barrier, outcomes: list[str | None]) -> None:
            start.wait()
            try:
                _cas(clients[i], db, base, f"r{round_}-w{i}")
                outcomes[i] = "won"
            except hms.MetaException as exc:
                outcomes[i] = "rejected" if exc.message.startswith(REJECTION_PREFIX) else exc.message
            except Exception as exc:  # anything else is a failure the assertion below shows
                outcomes[i] = repr(exc)

        base = "v0"
        for round_ in range(ROUNDS):
            start = threading.Barrier(WRITERS)
            outcomes: list[str | None] = [None] * WRITERS
            threads = [threading.Thread(target=write, args=(i, round_, base, start, outcomes)) for i in range(WRITERS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            winners = [i for i, outcome in enumerate(outcomes) if outcome == "won"]
            assert len(winners) == 1 and outcomes.count("rejected") == WRITERS - 1, (round_, outcomes)
            base = f"r{round_}-w{winners[0]}"
            for server in servers:  # the database holds the winner's value (read uncached through the CAS)
                check = connect(server)
                with pytest.raises(hms.MetaException, match="The expected was value was 'stale'"):
                    _cas(check, db, "stale", "never")
                check.close()
        for client in clients:
            client.close()
        _cas(setup, db, base, "final")  # the last winner's value is what the database holds
        setup.close()


def test_rejections_carry_hive_texts_and_change_nothing(tmp_path):
    with instances_on_one_database("sqlite", tmp_path, 1) as (_, (server,)):
        client = connect(server)
        client.create_database(hms.Database(name="d", parameters={}))
        client.create_table(_iceberg_table("d", "v1"))
        with pytest.raises(hms.MetaException) as stale:
            _cas(client, "d", "v0", "v2")
        assert stale.value.message == (f"{REJECTION_PREFIX} 'v1'. The expected was value was 'v0'")
        without_key = client.get_table("d", "t")
        del without_key.parameters[KEY]
        context = hms.EnvironmentContext(properties={"expected_parameter_key": KEY, "expected_parameter_value": "v1"})
        with pytest.raises(hms.MetaException) as unset:
            client.alter_table_with_environment_context("d", "t", without_key, context)
        assert unset.value.message == f"New value for expected key {KEY} is not set"
        assert client.get_table("d", "t").parameters[KEY] == "v1"
        _cas(client, "d", "v1", "v2")
        assert client.get_table("d", "t").parameters[KEY] == "v2"
        client.close()
