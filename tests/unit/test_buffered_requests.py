"""A request whose bytes arrive in pieces: the connection loop walks each piece as it comes, and a worker that takes
the connection over goes on from where the loop stopped, over the same real socket."""
from __future__ import annotations

import socket

import pytest

from hmsproxy.idl import hms
from hmsproxy.rpc.connection import Connection, Incomplete, SocketReader, SocketWriter
from hmsproxy.rpc.wire_check import MalformedRequest, MessageCheck
from support.raw_wire import call_frame

CHECK = MessageCheck(max_bytes=1 << 20, max_depth=64, max_objects=1_000_000)


def _request(table: str) -> bytes:
    parts = [hms.Partition(values=[str(i)], dbName="db", tableName=table, parameters={"k": "v"},
                           sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name=f"c{c}", type="int") for c in range(3)],
                                                    location=f"s3a://b/{table}/{i}"))
             for i in range(40)]
    return call_frame("add_partitions_req", hms.ThriftHiveMetastore.add_partitions_req_args(
        request=hms.AddPartitionsRequest(dbName="db", tblName=table, parts=parts, ifNotExists=False)))


@pytest.fixture
def sockets():
    ours, peer = socket.socketpair()
    yield ours, peer
    ours.close()
    peer.close()


def _connection(sock: socket.socket) -> Connection:
    return Connection(sock, ("127.0.0.1", 0), None, SocketReader(sock, 5, 5), SocketWriter(sock, 5))


def test_a_request_arriving_in_pieces_is_found_once_whole_and_the_next_one_after_it(sockets):
    first, second = _request("t1"), _request("second_table")
    connection = _connection(sockets[0])
    for end in range(0, len(first), 700):
        connection.pending += first[end:end + 700]
        if end + 700 < len(first):
            with pytest.raises(Incomplete):
                connection.buffered_request(framed=False, check=CHECK)
    connection.pending += second[:100]
    request, length = connection.buffered_request(framed=False, check=CHECK)
    assert (request.message, length) == (first, len(first))
    connection.answered(length)
    connection.pending += second[100:]
    request, length = connection.buffered_request(framed=False, check=CHECK)
    assert (request.message, length) == (second, len(second))


def _handed_over(sockets, message: bytes) -> SocketReader:
    """The reader of a worker the loop handed the connection to after 1,500 bytes of `message`; the rest on the
    way."""
    ours, peer = sockets
    connection = _connection(ours)
    connection.pending += message[:1500]
    with pytest.raises(Incomplete):
        connection.buffered_request(framed=False, check=CHECK)
    peer.sendall(message[1500:])
    connection.reader.new_message(connection.pending, None, connection.walk)
    return connection.reader


def test_a_worker_finishes_the_walk_the_loop_began(sockets):
    message = _request("t1")
    assert _handed_over(sockets, message).read_request(framed=False, check=CHECK).message == message


def test_a_bad_type_after_the_loop_handed_the_request_over_is_refused(sockets):
    message = bytearray(_request("t1"))
    late_field = message.index(b"s3a://b/t1/30") - 4 - 3   # the location field's type byte, late in the request
    message[late_field] = 0x7F
    reader = _handed_over(sockets, bytes(message))
    with pytest.raises(MalformedRequest, match="type id 127"):
        reader.read_request(framed=False, check=CHECK)
