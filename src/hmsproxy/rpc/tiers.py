"""The three tiers that answer a request, in the order they are tried; each answers what the one before declines.

1. repeated: a request that repeats one the ready tier answered, differing only in its sequence id
   (repeated_requests.py), is answered with that reply again while the store still holds its answer (a current
   Held). Matched on the request's bytes alone: nothing is walked, decoded or looked up.
2. ready: a call whose answer the store holds as Thrift bytes (store/ready.py ReadyAnswers, which only the cache
   implements; handler/ready.py names the calls and reads their arguments) is answered with those bytes. Its
   arguments are decoded, nothing else; a large request (more than LARGE_REQUEST_VALUES values) is never one of
   these and is declined unread.
3. ordinary: the handler's method (dispatch.py MetastoreProcessor.reply), which may wait on the database.

Neither of the first two ever waits on the database, so the connection loop (connection_loop.py) tries them for
the requests buffered on plain connections and hands a request the third must answer to a worker thread. A thread
that reads a request whole (a worker, or a TLS connection's own thread: an SSL socket cannot be waited on by the
loop) tries all three in the same order: the first costs a dictionary lookup. A request the loop's tiers declined
is tried again there, as nothing says which tier declined it (it may have arrived whole only now).

Every tier's reply leaves here in the transport's frame (with_frame), added in this one place.
"""
from __future__ import annotations

import contextlib
import struct
import threading

from hmsproxy.rpc.connection import LARGE_REQUEST_VALUES, Request
from hmsproxy.rpc.dispatch import MetastoreProcessor


def repeated(processor: MetastoreProcessor, pending: bytearray, framed: bool) -> bytes | None:
    """The repeated tier for the bytes a connection has buffered (in their frame when `framed`): the framed reply
    when they are exactly one request that repeats an answer still current, else None."""
    reply = processor.repeated_reply(pending, framed)
    return None if reply is None else _framed(reply, framed)


def ready(processor: MetastoreProcessor, request: Request, framed: bool) -> bytes | None:
    """The ready tier for one request read whole: its framed reply, or None."""
    reply = None if request.values > LARGE_REQUEST_VALUES else processor.ready_reply(request.message)
    return None if reply is None else _framed(reply, framed)


def answer(processor: MetastoreProcessor, request: Request, framed: bool,
           large_requests: threading.BoundedSemaphore) -> tuple[list[bytes], int]:
    """The three tiers in order, for a request read whole on a thread that may wait: the reply's pieces in their
    frame and their size (none for a one-way call). A large request is answered holding `large_requests`."""
    reply = processor.repeated_reply(request.message, False)   # the message, without its frame
    if reply is not None:
        return with_frame([reply], len(reply), framed)
    reply = ready(processor, request, False)
    if reply is not None:
        return with_frame([reply], len(reply), framed)
    large = request.values > LARGE_REQUEST_VALUES
    with large_requests if large else contextlib.nullcontext():
        pieces, size = processor.reply(request.message, tolerant=request.container_keys)
    return with_frame(pieces, size, framed)


_FRAME = struct.Struct("!i")   # a framed transport's prefix: the size of the message that follows


def with_frame(pieces: list[bytes], size: int, framed: bool) -> tuple[list[bytes], int]:
    """A reply's pieces with the frame's size in front when `framed`; no pieces (a one-way call) stay none."""
    if not framed or not pieces:
        return pieces, size
    return [_FRAME.pack(size), *pieces], size + 4


def _framed(reply: bytes, framed: bool) -> bytes:
    """One reply in its frame, as the one value the connection loop sends (its hot path: no list is built)."""
    return _FRAME.pack(len(reply)) + reply if framed else reply
