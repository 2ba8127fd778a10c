"""An object store that fails under the server: a rename's copy refused midway, the deletes after a commit refused,
and an endpoint that stops answering (a black hole). The server reaches moto through a TCP relay (stalled for the
black hole) in front of an HTTP relay that refuses chosen S3 operations after the Nth request of each."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as T

from support.builders import table
from support.databases import BACKENDS
from support.s3_metastore import Lake, lake_server
from support.s3_relay import S3Relay
from support.s3_server import ACCESS_KEY, SECRET_KEY
from support.tcp_proxy import TcpProxy

CONNECT_S, READ_S, ATTEMPTS = 1.0, 1.0, 2
# What one failing request may take: each attempt's connect and read timeouts and botocore's backoff (at most 1 s
# before a second attempt); a call makes a few requests before it gives up. Generous: only a hang fails it.
CALL_BOUND_S = 3 * ATTEMPTS * (CONNECT_S + READ_S + 1) + 10


@dataclass
class Failing:
    lake: Lake
    relay: S3Relay     # refuses chosen operations
    line: TcpProxy     # the server's way to the relay: stalled, it is a black hole


@pytest.fixture(scope="module", params=BACKENDS)
def failing(request, s3, tmp_path_factory) -> Iterator[Failing]:
    relay = S3Relay(s3.port)
    line = TcpProxy(relay.port)
    try:
        with lake_server(s3, request.param, tmp_path_factory.mktemp(f"failing-{request.param}"),
                         endpoint=f"http://127.0.0.1:{line.port}", object_store_connect_timeout_s=CONNECT_S,
                         object_store_read_timeout_s=READ_S, object_store_attempts=ATTEMPTS) as lake:
            yield Failing(lake, relay, line)
    finally:
        line.close()
        relay.close()


@pytest.fixture
def healed(failing: Failing) -> Iterator[Failing]:
    """The failing store, every refusal and stall lifted when the test ends."""
    try:
        yield failing
    finally:
        failing.relay.heal()
        failing.line.restore()


def _table_with_objects(lake: Lake, client, count: int) -> tuple[str, list[str]]:
    db = lake.database(client)
    keys = [f"warehouse/{db}.db/t1/part-{i}" for i in range(count)]
    lake.put(keys)
    client.create_table(table(T, db, "t1"))
    return db, keys


def _rename(client, db: str, old: str, new: str) -> None:
    renamed = client.get_table(db, old)
    renamed.tableName = new
    client.alter_table(db, old, renamed)


def _names_no_credential(message: str) -> None:
    assert ACCESS_KEY not in message and SECRET_KEY not in message, message


def _blames_the_store(message: str) -> None:
    assert "the object store holding its data could not be reached or failed" in message, message
    _names_no_credential(message)


def test_a_copy_failing_midway_deletes_the_copies_and_keeps_the_table(healed: Failing) -> None:
    lake, relay = healed.lake, healed.relay
    c = lake.client()
    db, sources = _table_with_objects(lake, c, 6)
    neighbour = [f"warehouse/{db}.db/t10/keep"]
    lake.put(neighbour)
    refused = relay.refused["copy_object"]
    relay.refuse("copy_object", after=3)
    with pytest.raises(T.MetaException) as failure:
        _rename(c, db, "t1", "t2")
    relay.heal()
    # from the fourth on every copy failed (they run side by side, so each is tried): none is left behind below
    assert relay.refused["copy_object"] == refused + 3
    _blames_the_store(failure.value.message)
    assert lake.keys(f"warehouse/{db}.db/") == sorted(sources + neighbour)   # the three copies made were deleted
    assert c.get_table(db, "t1").sd.location == f"{lake.root}/{db}.db/t1"
    with pytest.raises(T.NoSuchObjectException):
        c.get_table(db, "t2")
    _rename(c, db, "t1", "t2")   # the store answers again: the same rename goes through
    assert lake.keys(f"warehouse/{db}.db/") == sorted([k.replace("/t1/", "/t2/") for k in sources] + neighbour)


def test_sources_whose_delete_fails_after_the_commit_are_left_and_logged(healed: Failing, caplog) -> None:
    """The rename committed with its data copied: the table is never without its data, and the sources the store
    would not delete stay behind (a warning names how many and where) for an operator to remove."""
    lake, relay = healed.lake, healed.relay
    c = lake.client()
    db, sources = _table_with_objects(lake, c, 3)
    relay.refuse("delete_objects")
    with caplog.at_level(logging.WARNING, logger="hmsproxy.storage"):
        _rename(c, db, "t1", "t2")
    relay.heal()
    assert c.get_table(db, "t2").sd.location == f"{lake.root}/{db}.db/t2"
    assert lake.keys(f"warehouse/{db}.db/t2/") == [k.replace("/t1/", "/t2/") for k in sources]
    assert lake.keys(f"warehouse/{db}.db/t1/") == sources
    assert f"3 objects under s3a://{lake.bucket}/warehouse/{db}.db/t1 left behind" in caplog.text
    _names_no_credential(caplog.text)


def test_a_drop_whose_delete_fails_drops_the_table_and_leaves_its_objects_logged(healed: Failing, caplog) -> None:
    """As HMS does when it cannot delete a dropped table's directory: the drop committed, the data stays, logged."""
    lake, relay = healed.lake, healed.relay
    c = lake.client()
    db, sources = _table_with_objects(lake, c, 3)
    relay.refuse("delete_objects")
    with caplog.at_level(logging.WARNING, logger="hmsproxy.storage"):
        c.drop_table(db, "t1", True)
    relay.heal()
    with pytest.raises(T.NoSuchObjectException):
        c.get_table(db, "t1")
    assert lake.keys(f"warehouse/{db}.db/t1/") == sources
    assert f"s3a://{lake.bucket}/warehouse/{db}.db/t1" in caplog.text


def test_a_black_holed_store_fails_calls_within_the_bound_and_the_server_recovers(healed: Failing) -> None:
    lake, line = healed.lake, healed.line
    c = lake.client()
    db = lake.database(c)
    c.create_table(table(T, db, "cached"))
    c.get_table(db, "cached")
    timeouts = lake.requests("list_objects_v2", "timeout")
    line.stall()
    outcome: dict[str, object] = {}

    def create() -> None:
        started = time.monotonic()
        try:
            lake.client().create_table(table(T, db, "t1"))
        except Exception as exc:   # what the client got, asserted below
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    creating = threading.Thread(target=create)
    creating.start()
    assert lake.client().get_table(db, "cached").tableName == "cached"   # reads go on meanwhile
    creating.join(timeout=CALL_BOUND_S + 30)
    assert not creating.is_alive()
    assert isinstance(outcome.get("error"), T.MetaException), outcome
    assert outcome["seconds"] < CALL_BOUND_S
    _blames_the_store(outcome["error"].message)   # type: ignore[union-attr]
    assert lake.requests("list_objects_v2", "timeout") > timeouts
    with pytest.raises(T.NoSuchObjectException):
        c.get_table(db, "t1")
    line.restore()
    oks = lake.requests("list_objects_v2")
    c.create_table(table(T, db, "t1"))   # no restart: the same call succeeds
    assert c.get_table(db, "t1").sd.location == f"{lake.root}/{db}.db/t1"
    assert lake.requests("list_objects_v2") > oks


def test_a_store_that_drops_connections_fails_calls_and_the_server_recovers(healed: Failing) -> None:
    lake, line = healed.lake, healed.line
    c = lake.client()
    db = lake.database(c)
    errors = lake.requests("list_objects_v2", "error")
    line.cut()   # every connection closed at once, new ones too
    started = time.monotonic()
    with pytest.raises(T.MetaException) as failure:
        c.create_table(table(T, db, "t1"))
    assert time.monotonic() - started < CALL_BOUND_S
    _blames_the_store(failure.value.message)
    assert lake.requests("list_objects_v2", "error") > errors
    line.restore()
    c.create_table(table(T, db, "t1"))
    assert c.get_table(db, "t1").sd.location == f"{lake.root}/{db}.db/t1"
