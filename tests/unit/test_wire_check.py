"""The request walk over real messages: fed byte by byte as a slow client sends them, or at once, it finds the same
end and counts the same values, and it refuses a bad string length wherever the string sits."""
from __future__ import annotations

import random
import struct

import pytest

from hmsproxy.idl import hms
from hmsproxy.rpc.wire_check import MalformedRequest, MessageCheck
from support.raw_wire import call_frame


def _partition(i: int) -> hms.Partition:
    return hms.Partition(
        values=["2024-01-01", str(i)], dbName="db", tableName="t", createTime=i, lastAccessTime=0,
        parameters={"numFiles": "1", "totalSize": str(i)},
        sd=hms.StorageDescriptor(
            cols=[hms.FieldSchema(name=f"c{c}", type="string", comment=None if c else "first") for c in range(4)],
            location=f"s3a://b/t/p{i}", inputFormat="in", outputFormat="out", compressed=False, numBuckets=-1,
            serdeInfo=hms.SerDeInfo(serializationLib="lib", parameters={"serialization.format": "1"}),
            bucketCols=["c0"], sortCols=[hms.Order(col="c1", order=1)], parameters={},
            skewedInfo=hms.SkewedInfo(skewedColNames=["c0"], skewedColValues=[["a"], ["b"]],
                                      skewedColValueLocationMaps={("a",): "s3a://b/t/a", ("b",): "s3a://b/t/b"}),
            storedAsSubDirectories=False))


def _message(count: int = 5) -> bytes:
    request = hms.AddPartitionsRequest(dbName="db", tblName="t", parts=[_partition(i) for i in range(count)],
                                       ifNotExists=False, needResult=True)
    return call_frame("add_partitions_req", hms.ThriftHiveMetastore.add_partitions_req_args(request=request))


CHECK = MessageCheck(max_bytes=1 << 20, max_depth=64, max_objects=1_000_000)


def test_fed_byte_by_byte_the_walk_waits_until_the_message_is_whole_and_counts_as_at_once():
    message = _message()
    at_once = CHECK.walk()
    assert at_once.advance(message + b"\x80next") == len(message)   # what follows belongs to the next message
    slowly = CHECK.walk()
    assert [end for i in range(1, len(message)) if (end := slowly.advance(message[:i])) is not None] == []
    assert slowly.advance(message) == len(message)
    assert slowly.values == at_once.values > 5 * 30
    assert at_once.container_keys   # the skew map's list keys


def test_the_value_budget_holds_exactly():
    message = _message()
    values = CHECK.walk()
    values.advance(message)
    assert MessageCheck(1 << 20, 64, values.values).walk().advance(message) == len(message)
    with pytest.raises(MalformedRequest, match="values in one request"):
        MessageCheck(1 << 20, 64, values.values - 1).walk().advance(message)


def test_the_byte_limit_holds_exactly():
    """A message of max_bytes passes; one byte more is refused, also where that byte is the final STOP."""
    message = _message()
    assert message[-1] == 0
    assert MessageCheck(len(message), 64, 1_000_000).walk().advance(message) == len(message)
    with pytest.raises(MalformedRequest, match="larger than"):
        MessageCheck(len(message) - 1, 64, 1_000_000).walk().advance(message)


def _with_string_size(message: bytes, text: bytes, size: int) -> bytes:
    """The message with the length of the (first) string `text` replaced by `size`."""
    at = message.index(struct.pack("!i", len(text)) + text)
    return message[:at] + struct.pack("!i", size) + message[at + 4:]


@pytest.mark.parametrize("text", [b"s3a://b/t/p3", b"2024-01-01", b"serialization.format", b"c2"],
                         ids=["struct field", "list element", "map key", "field of a struct in a list"])
@pytest.mark.parametrize("size", [-1, 1 << 21], ids=["negative", "beyond the request limit"])
def test_a_string_length_that_cannot_fit_is_refused_wherever_the_string_sits(text, size):
    bad = _with_string_size(_message(), text, size)
    with pytest.raises(MalformedRequest, match="does not fit"):
        CHECK.walk().advance(bad)
    slowly = CHECK.walk()
    with pytest.raises(MalformedRequest, match="does not fit"):
        for i in range(1, len(bad) + 1):
            slowly.advance(bad[:i])


def test_a_string_longer_than_what_follows_waits_for_the_rest():
    message = _with_string_size(_message(), b"s3a://b/t/p3", 5000)
    assert CHECK.walk().advance(message) is None


def _outcome(message: bytes, chunks: list[int]) -> object:
    """What walking `message` gives, fed in prefixes ending at `chunks` and then whole: its end, None, or the
    refusal's text."""
    walk = CHECK.walk()
    try:
        for end in [*chunks, len(message)]:
            found = walk.advance(message[:end])
            if found is not None:
                return found, walk.values
        return None
    except MalformedRequest as refusal:
        return str(refusal)


def test_mutated_messages_walk_to_the_same_outcome_however_they_arrive():
    """Bytes overwritten anywhere (types, sizes, counts): fed at once (whole structs and containers stepped over in
    one go), in random pieces, or byte by byte (each value walked the careful way), the walk ends at the same place
    with the same count, waits, or refuses with the same reason."""
    rng = random.Random(15)
    message = _message(3)
    for turn in range(400):
        mutated = bytearray(message)
        for _ in range(rng.randint(1, 3)):
            byte = rng.choice([0, 1, 2, 8, 11, 12, 13, 15, 0x7F, 0xFF, rng.randrange(256)])   # types, sizes
            mutated[rng.randrange(len(mutated))] = byte
        mutated = bytes(mutated)
        pieces = sorted(rng.sample(range(1, len(mutated)), 20))
        assert _outcome(mutated, pieces) == _outcome(mutated, [])
        if turn % 4 == 0:
            assert _outcome(mutated, list(range(1, len(mutated)))) == _outcome(mutated, [])


def _reference_count(message: bytes) -> int:
    """The values the walk must count, by a plain recursive reading of the binary protocol: every field of every
    struct below the arguments, every list or set element and every map entry."""
    sizes = {2: 1, 3: 1, 4: 8, 6: 2, 8: 4, 10: 8}

    def value(pos: int, kind: int) -> tuple[int, int]:
        if kind in sizes:
            return pos + sizes[kind], 0
        if kind == 11:
            return pos + 4 + struct.unpack_from("!i", message, pos)[0], 0
        if kind == 12:
            return fields(pos)
        if kind == 13:
            key, item, count = struct.unpack_from("!bbi", message, pos)
            pos, counted = pos + 6, count
            for _ in range(count):
                pos, inner_key = value(pos, key)
                pos, inner_value = value(pos, item)
                counted += inner_key + inner_value
            return pos, counted
        element, count = struct.unpack_from("!bi", message, pos)
        pos, counted = pos + 5, count
        for _ in range(count):
            pos, inner = value(pos, element)
            counted += inner
        return pos, counted

    def fields(pos: int) -> tuple[int, int]:
        counted = 0
        while message[pos] != 0:
            pos, inner = value(pos + 3, message[pos])
            counted += 1 + inner
        return pos + 1, counted

    name_size = struct.unpack_from("!i", message, 4)[0]
    end, counted = fields(8 + name_size + 4)
    assert end == len(message)
    return counted


@pytest.mark.parametrize("count", [1, 5])
def test_the_walk_counts_every_field_element_and_entry(count):
    """Lists of structs whose fields are all plain (the columns, the sort orders) are stepped over in one go; they
    count as much as any other way of walking them."""
    message = _message(count)
    at_once, slowly = CHECK.walk(), CHECK.walk()
    assert at_once.advance(message) == len(message)
    for i in range(1, len(message) + 1):
        slowly.advance(message[:i])
    assert at_once.values == slowly.values == _reference_count(message)


def _nested_lists(depth: int) -> bytes:
    """A get_database call with an extra field 99 holding `depth` lists, each the single element of the one around
    it, around an empty list of i32."""
    frame = call_frame("get_database", hms.ThriftHiveMetastore.get_database_args(name="db"))
    lists = struct.pack("!bhbi", 15, 99, 15, 1) + struct.pack("!bi", 15, 1) * (depth - 2) + struct.pack("!bi", 8, 0)
    return frame[:-1] + lists + b"\x00"


def test_the_depth_limit_holds_exactly_however_the_message_arrives():
    check = MessageCheck(max_bytes=1 << 20, max_depth=8, max_objects=1_000_000)
    outcomes = {}
    for depth in range(2, 12):
        message = _nested_lists(depth)
        at_once, slowly = check.walk(), check.walk()
        try:
            outcomes[depth] = at_once.advance(message) == len(message)
        except MalformedRequest as refusal:
            outcomes[depth] = str(refusal)
        try:
            for i in range(1, len(message) + 1):
                found = slowly.advance(message[:i])
            assert outcomes[depth] is (found == len(message))
        except MalformedRequest as refusal:
            assert outcomes[depth] == str(refusal)
    assert [depth for depth, passed in outcomes.items() if passed is True] == list(range(2, 8))
    assert set(outcomes[depth] for depth in range(8, 12)) == {"values nested deeper than 8"}
