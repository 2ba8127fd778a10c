"""The ready tier answers exactly as the ordinary one (rpc/tiers.py): for random tables, partitions, filters (valid
and not), max_parts, partition request limits, table names and snapshots, a call the ready tier answers gets the
very bytes the ordinary handler call sends, counted as the same cache hits; a repeat of it gets them again (with
its own sequence id) until the table changes; and every call the ready tier declines is answered by the ordinary
one. The real handler, processor and CachedStore over SQLite; one store for the module."""
from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TMemoryBuffer

from hmsproxy.handler import Handler, HandlerContext
from hmsproxy.hive.write_ids import ValidWriteIdList
from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.rpc import tiers
from hmsproxy.rpc.connection import Request
from hmsproxy.rpc.dispatch import MetastoreProcessor
from hmsproxy.rpc.repeated_requests import RepeatedRequests
from hmsproxy.storage.warehouse import Warehouse
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.reader import Reader
from hmsproxy.store.ready import Held, Ready, ReadyAnswers
from hmsproxy.store.sql.stats_codec import stats_as_stored
from support.builders import placeholder_sd
from support.sql_stores import sqlite_store

DB = "d"
KEY_TYPES = ("string", "int", "bigint")
LIMITS = (-1, 0, 2, 5, 1000)   # --partition-request-limit
MAX_PARTS = (-1, 0, 1, 2, 3, 7, 1000, 32767)
COVERAGE_ROUNDS = 6   # rounds of examples at most, until every kind of call was seen often enough


@dataclass(frozen=True)
class TableSpec:
    keys: tuple[tuple[str, str], ...]          # partition keys: (name, type)
    columns: tuple[tuple[str, str], ...]
    partitions: frozenset[tuple[str, ...]]
    transactional: bool


class World:
    """One CachedStore over SQLite, the tables examples asked for (made once per spec), and a handler per limit."""

    def __init__(self, directory: Any) -> None:
        self.sql = sqlite_store(directory, DB)
        self.metrics = Metrics()
        self.store = CachedStore(self.sql, SharedCache(max_bytes=1 << 30), CachePolicy.from_patterns(), self.metrics,
                                 stats_as_stored)
        self.store.load_catalog("hive")
        context = HandlerContext(store=self.store, warehouse=Warehouse(directory), server_conf={}, started_at=0)
        self.handlers = {limit: Handler(HandlerContext(**{**vars(context), "partition_request_limit": limit}))
                         for limit in LIMITS}
        self.tables: dict[TableSpec, str] = {}
        self.names = count()
        self.written = count()

    def table(self, spec: TableSpec) -> str:
        name = self.tables.get(spec)
        if name is None:
            name = self.tables[spec] = f"t{next(self.names)}"
            parameters = {"transactional": "true", "transactional_properties": "insert_only"} \
                if spec.transactional else {}
            self.store.create_table(hms.Table(
                tableName=name, dbName=DB, catName="hive", sd=placeholder_sd(f"file:/w/{DB}.db/{name}", spec.columns),
                partitionKeys=[hms.FieldSchema(name=k, type=t) for k, t in spec.keys], parameters=parameters,
                tableType="MANAGED_TABLE" if spec.transactional else "EXTERNAL_TABLE"))
            for values in sorted(spec.partitions):
                self.add_partition(name, spec, values)
        return name

    def add_partition(self, name: str, spec: TableSpec, values: tuple[str, ...]) -> None:
        location = f"file:/w/{DB}.db/{name}/" + "/".join(f"{k}={v}" for (k, _), v in zip(spec.keys, values))
        self.store.add_partitions("hive", DB, name, [hms.Partition(
            values=list(values), sd=placeholder_sd(location, spec.columns), parameters={"at": location})])

    def lookups(self, api: str) -> Counter[tuple[str, str]]:
        """The cache lookups counted for `api` so far, by kind and result."""
        found: Counter[tuple[str, str]] = Counter()
        for metric in self.metrics.registry.collect():
            for sample in metric.samples:
                labels = sample.labels
                if sample.name == "hmsproxy_cache_lookups_total" and labels.get("method") == api:
                    found[labels["kind"], labels["result"]] += int(sample.value)
        return found


class AtSnapshot:
    """The handler's calls as a request carrying `snapshot` reaches them (the processor gives old-style calls none):
    the same handler, each call's reader at that snapshot."""

    def __init__(self, handler: Handler, snapshot: tuple[str | None, int | None]) -> None:
        self._handler = handler
        self._snapshot = snapshot
        self.ready_calls = handler.ready_calls

    def _at(self, reader: Reader) -> Reader:
        return reader.at(*self._snapshot)

    def method_for(self, api: str, reader: Reader) -> Any:
        return self._handler.method_for(api, self._at(reader))

    def ready_answer(self, api: str, reader: Reader, arguments: Any) -> Ready | None:
        return self._handler.ready_answer(api, self._at(reader), arguments)

    def ready_again(self, reader: Reader, held: Held) -> bool:
        return self._handler.ready_again(self._at(reader), held)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("ready"))
    yield made
    made.sql.close()


def _values(key_type: str) -> st.SearchStrategy[str]:
    if key_type == "string":
        return st.sampled_from(["a", "b", "ab", "B", "2024-01-01", "x y", "7"])
    return st.integers(-3, 12).map(str)


@st.composite
def table_specs(draw: Any) -> TableSpec:
    keys = tuple((f"k{i}", draw(st.sampled_from(KEY_TYPES))) for i in range(draw(st.integers(1, 3))))
    column_types = st.sampled_from(("int", "string", "double"))
    columns = tuple((f"c{i}", draw(column_types)) for i in range(draw(st.integers(1, 3))))
    rows = st.tuples(*(_values(key_type) for _, key_type in keys))
    transactional = draw(st.sampled_from([False] * 4 + [True]))
    partitions = draw(st.lists(rows, min_size=1, max_size=12)) if draw(st.integers(0, 9)) else []
    return TableSpec(keys, columns, frozenset(partitions), transactional)


@st.composite
def filters(draw: Any, spec: TableSpec) -> str:
    """A filter on the table's keys: comparisons joined by and/or, some with a literal of the other type (a type
    mismatch); or text that is no filter at all."""
    def comparison() -> str:
        name, key_type = draw(st.sampled_from(spec.keys))
        literal_type = key_type if draw(st.integers(0, 5)) else draw(st.sampled_from(KEY_TYPES))
        literal = draw(_values(literal_type))
        literal = f'"{literal}"' if literal_type == "string" else literal
        return f"{name} {draw(st.sampled_from(['='] * 4 + ['!=', '<', '<=', '>', '>=', '<>']))} {literal}"

    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["", "k0 =", "nokey = 1", "(k0 = 1", "k0 = 1 and", "k0 like", "!!"]))
    joined = comparison()
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        joined = f"{joined} {draw(st.sampled_from(['and', 'and', 'or']))} {comparison()}"
    return joined


@st.composite
def snapshots(draw: Any, name: str, table_id: int) -> tuple[str | None, int | None]:
    """(validWriteIdList, table id) as a request may carry them: none, the entry's, newer, another table's, bad."""
    full = f"{DB}.{name}"
    write_ids = draw(st.sampled_from([None, ValidWriteIdList.of(full, 0).format(),
                                      ValidWriteIdList.of(full, 5).format(), ValidWriteIdList.of("d.other", 0).format(),
                                      "not a write id list"]))
    return write_ids, draw(st.sampled_from([None] * 6 + [-1, table_id, table_id + 1000]))


def _message(api: str, seqid: int, arguments: dict[str, Any]) -> bytes:
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocolFactory().get_protocol(buffer)
    protocol.write_message_begin(api, TMessageType.CALL, seqid)
    protocol.write_struct(getattr(hms.ThriftHiveMetastore, api + "_args")(**arguments))
    protocol.write_message_end()
    return buffer.getvalue()


def _answered(api: str, reply: bytes) -> Any:
    """The result a reply carries: a REPLY, never an application error; the result's success or one declared
    exception set."""
    protocol = TBinaryProtocolFactory().get_protocol(TMemoryBuffer(reply))
    name, message_type, _ = protocol.read_message_begin()
    assert (name, message_type) == (api, TMessageType.REPLY)
    result = getattr(hms.ThriftHiveMetastore, api + "_result")()
    protocol.read_struct(result)
    assert sum(value is not None for value in vars(result).values()) == 1
    return result


@st.composite
def calls(draw: Any, world: World) -> tuple[str, dict[str, Any], TableSpec, str]:
    spec = draw(table_specs())
    name = world.table(spec)
    asked = draw(st.sampled_from([name] * 8 + [name.upper(), "missing", ""]))
    db_name = draw(st.sampled_from([DB] * 8 + [DB.upper(), f"@hive#{DB}", "@hive", "nodb"]))
    if draw(st.integers(0, 2)) == 0:
        return "get_table", {"dbname": db_name, "tbl_name": asked}, spec, name
    arguments = {"db_name": db_name, "tbl_name": asked, "filter": draw(filters(spec))}   # max_parts: per limit
    return "get_partitions_by_filter", arguments, spec, name


def _both_tiers(world: World, processor: MetastoreProcessor, api: str, arguments: dict[str, Any],
                sequence: Iterator[int], framed: bool) -> bool:
    """Asks one call of both tiers and checks them against each other; whether the ready tier answered."""
    request = _message(api, next(sequence), arguments)
    first_try = processor.ready_reply(request)   # before the ordinary call: a key's values may not be sorted yet
    before = world.lookups(api)
    ordinary = b"".join(processor.reply(request)[0])
    ordinary_hits = world.lookups(api) - before
    _answered(api, ordinary)
    before = world.lookups(api)
    ready = processor.ready_reply(request)
    ready_hits = world.lookups(api) - before
    for answer in (first_try, ready):
        assert answer is None or answer == ordinary
    if ready is None:
        assert not ready_hits
        return False
    assert ready_hits == ordinary_hits and all(result == "hit" for _, result in ready_hits)
    again = _message(api, next(sequence), arguments)   # another sequence id: the repeated tier
    ordinary_again = b"".join(processor.reply(again)[0])
    assert processor.repeated_reply(again, False) == ordinary_again
    pieces, _ = tiers.answer(processor, Request(again, 8, False), framed, threading.BoundedSemaphore(1))
    assert b"".join(pieces) == b"".join(tiers.with_frame([ordinary_again], len(ordinary_again), framed)[0])
    return True


def test_a_ready_answer_is_the_ordinary_answer_byte_for_byte_and_declined_calls_are_answered(world):
    assert isinstance(world.store, ReadyAnswers) and not isinstance(world.sql, ReadyAnswers)
    seen: Counter[str] = Counter()
    sequence = count(1)

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: Any) -> None:
        api, arguments, spec, name = data.draw(calls(world))
        snapshot = data.draw(snapshots(name, world.sql.get_table("hive", DB, name).id))
        framed = data.draw(st.booleans())
        answered = []
        for limit in LIMITS:   # each call under every partition request limit, a filter with a max_parts each
            if api == "get_partitions_by_filter":
                arguments = {**arguments, "max_parts": data.draw(st.sampled_from(MAX_PARTS))}
            processor = MetastoreProcessor(AtSnapshot(world.handlers[limit], snapshot), world.metrics,
                                           repeats=RepeatedRequests(16))
            if _both_tiers(world, processor, api, arguments, sequence, framed):
                answered.append((processor, arguments))
                assert not spec.transactional and snapshot[1] in (None, -1)
        seen["declined" if not answered else api] += 1
        if answered and data.draw(st.booleans()):   # the table changes: the kept replies are no longer given
            world.add_partition(name, spec, tuple(str(next(world.written) + 100) for _ in spec.keys))
            world.tables.pop(spec)   # the spec no longer says what the table holds
            for processor, asked in answered:
                assert processor.repeated_reply(_message(api, next(sequence), asked), False) is None

    def covered() -> bool:   # the examples tried both tiers of both calls, and the ordinary one alone
        return min(seen["get_table"], seen["get_partitions_by_filter"]) >= 10 and seen["declined"] >= 25

    for _ in range(COVERAGE_ROUNDS):   # a round may draw few filters the ready tier answers (5 of 200 seen)
        check()
        if covered():
            break
    assert covered(), seen
