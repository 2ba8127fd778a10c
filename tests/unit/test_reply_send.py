"""A reply's pieces reach the client whole and in order, however the kernel splits the sends: small pieces are
joined in groups, large ones go by scatter-gather, and a send buffer far smaller than the reply makes every send
partial."""
from __future__ import annotations

import random
import socket
import threading

from hmsproxy.rpc.connection import GROUP_PIECES, JOINED_BYTES_MAX, SMALL_PIECE_BYTES, SocketWriter


def _received_whole(pieces: list[bytes]) -> bytes:
    sender, receiver = socket.socketpair()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)   # every send partial
    received = bytearray()
    expected = sum(map(len, pieces))

    def read() -> None:
        while len(received) < expected:
            chunk = receiver.recv(1000)
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        SocketWriter(sender, idle_timeout_s=30).write(pieces, expected)
        reader.join(timeout=60)
    finally:
        sender.close()
        receiver.close()
    assert not reader.is_alive()
    return bytes(received)


def test_a_listing_of_small_pieces_arrives_whole_and_in_order() -> None:
    rng = random.Random(7)
    pieces = [bytes([i % 251]) * rng.randrange(0, 700) for i in range(3 * GROUP_PIECES + 17)]
    assert _received_whole(pieces) == b"".join(pieces)


def test_large_pieces_between_small_ones_arrive_whole_and_in_order() -> None:
    """A group holding more than JOINED_BYTES_MAX goes by sendmsg, its partial sends resumed mid-piece."""
    rng = random.Random(11)
    small = [bytes([i % 251]) * rng.randrange(1, 400) for i in range(GROUP_PIECES + 3)]
    large = [bytes([200 + i]) * (JOINED_BYTES_MAX // 3 + 1) for i in range(4)]
    pieces = small[:10] + large + [b""] + small[10:]
    assert sum(map(len, pieces)) > SMALL_PIECE_BYTES * len(pieces)   # groups measured
    assert _received_whole(pieces) == b"".join(pieces)


def test_a_large_piece_among_many_small_ones_arrives_whole_and_in_order() -> None:
    """Pieces small on average are joined unmeasured, a large one among them too."""
    rng = random.Random(13)
    small = [bytes([i % 251]) * rng.randrange(1, 400) for i in range(20 * GROUP_PIECES)]
    pieces = small[:700] + [b"\xee" * (JOINED_BYTES_MAX + 5)] + small[700:]
    assert sum(map(len, pieces)) <= SMALL_PIECE_BYTES * len(pieces)   # groups not measured
    assert _received_whole(pieces) == b"".join(pieces)
