"""repeated_requests.py: which bytes count as a repeat of a remembered request. Only the very request, whatever its
sequence id, in a frame that holds exactly it: never a request cut short or followed by another, nor bytes that
match only because a bogus header moved the place of the id."""
from __future__ import annotations

import struct

from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport.memory import TMemoryBuffer

from hmsproxy.idl import hms
from hmsproxy.rpc.repeated_requests import (
    MAX_ANSWER_BYTES,
    MAX_ANSWERS_BYTES,
    MAX_REQUEST_BYTES,
    Repeat,
    RepeatedRequests,
)
from hmsproxy.store.ready import Held


def _request(seqid: int, table: str = "t", strict: bool = True) -> bytes:
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocol(buffer, strict_write=strict)
    protocol.write_message_begin("get_table", TMessageType.CALL, seqid)
    protocol.write_struct(hms.ThriftHiveMetastore.get_table_args(dbname="d", tbl_name=table))
    protocol.write_message_end()
    return buffer.getvalue()


def _framed(message: bytes) -> bytes:
    return struct.pack("!i", len(message)) + message


def _remembering(*tables: str, strict: bool = True, remembered: int = 16) -> RepeatedRequests:
    repeats = RepeatedRequests(remembered)
    for table in tables:
        repeats.remember(_request(1, table, strict), Repeat("get_table", None, table.encode(), Held()))
    return repeats


def test_a_repeat_is_found_whatever_its_sequence_id_in_either_header_style():
    for strict in (True, False):
        repeats = _remembering("t", strict=strict)
        for seqid in (1, 2, -5, 1 << 31 - 1):
            found = repeats.find(bytearray(_request(seqid, strict=strict)), framed=False)
            assert found is not None and found[0].answer == b"t" and found[1] == struct.pack("!i", seqid)
        assert repeats.find(bytearray(_request(1, strict=not strict)), framed=False) is None


def test_only_exactly_one_whole_request_is_a_repeat():
    repeats = _remembering("t")
    request = _request(3)
    assert repeats.find(bytearray(request[:-1]), framed=False) is None                    # cut short
    assert repeats.find(bytearray(request + _request(4)), framed=False) is None           # another behind it
    assert repeats.find(bytearray(_request(3, "u")), framed=False) is None                # other arguments
    assert repeats.find(bytearray(_framed(request)), framed=True) is not None
    assert repeats.find(bytearray(_framed(request)), framed=False) is None
    assert repeats.find(bytearray(request), framed=True) is None
    longer_frame = struct.pack("!i", len(request) + 10) + request                          # the frame goes on
    assert repeats.find(bytearray(longer_frame), framed=True) is None


def test_a_bogus_header_cannot_pass_for_a_remembered_request():
    """A name size of -4 would put the 'id' over the real name size: the rest of the bytes would then match the
    remembered request without the id, but the header is not a valid one and is no repeat."""
    repeats = _remembering("t")
    request = _request(1)
    bogus = request[:4] + struct.pack("!i", -4) + request[4:8 + 9] + request[8 + 9 + 4:]
    assert repeats.find(bytearray(bogus), framed=False) is None


def test_only_the_latest_requests_are_remembered_and_none_too_long_or_with_too_long_an_answer():
    tables = [f"t{i}" for i in range(5)]
    repeats = _remembering(*tables, remembered=4)
    assert repeats.find(bytearray(_request(2, tables[0])), framed=False) is None
    assert all(repeats.find(bytearray(_request(2, table)), framed=False) is not None for table in tables[1:])
    long_name = "x" * MAX_REQUEST_BYTES
    repeats.remember(_request(1, long_name), Repeat("get_table", None, b"", Held()))
    assert repeats.find(bytearray(_request(1, long_name)), framed=False) is None
    repeats.remember(_request(1, "wide"), Repeat("get_table", None, b"x" * (MAX_ANSWER_BYTES + 1), Held()))
    assert repeats.find(bytearray(_request(1, "wide")), framed=False) is None
    assert repeats.find(bytearray(_request(2, tables[1])), framed=False) is not None   # nothing forgotten for them


def test_the_answers_remembered_hold_at_most_their_byte_budget_the_oldest_forgotten_first():
    repeats = RepeatedRequests(1024)
    per_answer = MAX_ANSWER_BYTES
    kept = MAX_ANSWERS_BYTES // per_answer
    tables = [f"t{i}" for i in range(kept + 3)]
    for table in tables:
        repeats.remember(_request(1, table), Repeat("get_partitions_by_filter", None, b"x" * per_answer, Held()))
        assert repeats.answers_bytes() <= MAX_ANSWERS_BYTES
    assert len(repeats) == kept and repeats.answers_bytes() == kept * per_answer
    assert [repeats.find(bytearray(_request(2, t)), framed=False) is not None for t in tables[:4]] == [
        False, False, False, True]
    repeats.remember(_request(1, tables[-1]), Repeat("get_table", None, b"small", Held()))   # remembered anew
    assert repeats.answers_bytes() == (kept - 1) * per_answer + len(b"small")
