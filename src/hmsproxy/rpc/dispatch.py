"""The Thrift processor: runs one call, turns every failure into an exception the method declares, and
records metrics.

thriftpy2 drops the connection when a handler raises something the IDL does not declare for that method
(the client sees "TSocket read 0 bytes"). Here such failures become the method's MetaException, or a
TApplicationException (as the Java server answers undeclared errors) when it declares none; the
connection stays usable either way.
"""
from __future__ import annotations

import copy
import functools
import logging
import re
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from sqlalchemy import exc as sa_exc
from thriftpy2.protocol.cybin.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TApplicationException, TException, TMessageType, TPayload, TProcessor, TType
from thriftpy2.transport.memory.cymemory import TCyMemoryBuffer

from hmsproxy.idl import hms
from hmsproxy.idl.codec import EncodedList, encode, encode_for_every_hive, has_legacy_kinds
from hmsproxy.ops.audit import AuditLog
from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.ops.metrics import Metrics
from hmsproxy.rpc.repeated_requests import Repeat, RepeatedRequests
from hmsproxy.storage.object_store import ObjectStoreError
from hmsproxy.store.reader import Reader
from hmsproxy.store.ready import Held, Ready

log = logging.getLogger(__name__)
# Internal errors are logged with their traceback once per burst (a database outage fails every call).
internal_errors = BurstLog("internal error in %s (error id %s): %r", 60.0, log, logging.ERROR)

# Methods whose Hive 2.3 IDL declared MetaException where Hive 4 declares NoSuchObjectException (field 1):
# Spark's 2.3 client reads field 1 only, so failures must travel there.
FIELD_ONE_FOR_LEGACY_CLIENTS = {"get_partition_names": hms.NoSuchObjectException}


def declared_exceptions(result: TPayload) -> list[type]:
    return [spec[2] for fid, spec in sorted(result.thrift_spec.items()) if spec[1] != "success"]


def database_error_kind(exc: sa_exc.DBAPIError) -> str:
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return "unreachable"
    if isinstance(exc, sa_exc.IntegrityError):
        return "constraint"
    if isinstance(exc, sa_exc.DataError):
        return "value"
    return "other"


def client_message(api: str, exc: Exception) -> str:
    """What the client is told of an internal error: what went wrong in its terms and an id to find the
    details (SQL, parameters, paths, hosts) in the server log, never the details themselves."""
    error_id = uuid.uuid4().hex[:12]
    internal_errors.happened(api, error_id, exc, exc_info=exc)  # the first of a burst in full, then a count
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        what = "the metastore database could not be reached or did not answer"
    elif isinstance(exc, sa_exc.IntegrityError):
        what = "the metastore database refused the change (a constraint was violated)"
    elif isinstance(exc, sa_exc.DBAPIError):
        what = "the metastore database failed the request"
    elif isinstance(exc, ObjectStoreError):
        # The metadata is unchanged; data work done before the failure may stand (a truncate's first deletes).
        return (f"{api}: the object store holding its data could not be reached or failed the request; the metadata "
                f"was not changed (server log: error id {error_id})")
    else:
        what = "an internal error occurred"
    return f"{api}: {what}; nothing was changed (server log: error id {error_id})"


# MySQL/MariaDB's refusals of a value (strict mode): 1366 text outside the column's character set, 1406 text
# longer than the column. "... for column `db`.`TABLE`.`COLUMN` at row 1" (or 'COLUMN') names the column.
_VALUE_REFUSALS = {1366: "text the metastore database cannot store in {column} (its character set, latin1 in "
                         "Hive's MySQL schema, does not hold every character given)",
                   1406: "text longer than the metastore database's column {column} holds"}
_REFUSED_COLUMN = re.compile(r"for column (?:`[^`]*`\.)?(`[^`]*`\.`[^`]*`|'[^']*')")


def value_refusal(api: str, exc: Exception) -> str | None:
    """The client's message when the database refused a value the request carried (not an internal error)."""
    code = getattr(getattr(exc, "orig", None), "args", (None,))[0]
    if not isinstance(exc, sa_exc.DataError) or code not in _VALUE_REFUSALS:
        return None
    named = _REFUSED_COLUMN.search(str(exc.orig))
    column = named[1].replace("`", "").strip("'") if named else "a column"
    return f"{api}: {_VALUE_REFUSALS[code].format(column=column)}; nothing was changed"


def to_declared(api: str, exc: Exception, result: TPayload) -> Exception:
    """The exception to send for a failed call: itself if declared, else MetaException, else an
    application error."""
    declared = declared_exceptions(result)
    legacy = FIELD_ONE_FOR_LEGACY_CLIENTS.get(api)
    if legacy is not None and isinstance(exc, TException) and not isinstance(exc, legacy):
        return legacy(message=getattr(exc, "message", str(exc)))
    if any(isinstance(exc, kind) for kind in declared):
        return exc
    if isinstance(exc, TException) and hasattr(exc, "message"):
        message = exc.message or type(exc).__name__
    else:
        message = value_refusal(api, exc) or client_message(api, exc)
    if hms.MetaException in declared:
        return hms.MetaException(message=message)
    return TApplicationException(TApplicationException.INTERNAL_ERROR, message)


def _encoded_list_bytes(field_id: int, items: EncodedList[object]) -> list[bytes]:
    header = struct.pack("!bhbi", TType.LIST, field_id, TType.STRUCT, len(items))
    return [header, *items.pieces]


@functools.cache
def _list_fields(struct_type: type[TPayload]) -> tuple[tuple[int, str], ...]:
    """(id, name) of a struct type's list fields: the only ones that can hold a pre-encoded or a large list."""
    return tuple((fid, spec[1]) for fid, spec in struct_type.thrift_spec.items() if spec[0] == TType.LIST)


_LIST_HEADER_BYTES = 8   # a list field's type, id, element type and count
_SUCCESS_STRUCT = struct.pack("!bh", TType.STRUCT, 0)   # a result's field 0 holding a struct


def result_pieces(success: Any) -> tuple[list[bytes], int] | None:
    """The result struct of a call as byte pieces, and their size, when the answer holds pre-encoded lists or a
    field Hive 2.3 declared as another container kind (field 0 is `success`); None when ordinary serialization
    applies."""
    if type(success) is EncodedList:
        return _encoded_list_bytes(0, success) + [b"\x00"], _LIST_HEADER_BYTES + success.byte_size() + 1
    if has_legacy_kinds(success):
        body = encode_for_every_hive(success)
        return [_SUCCESS_STRUCT, body, b"\x00"], len(_SUCCESS_STRUCT) + len(body) + 1
    if not hasattr(success, "thrift_spec"):
        return None
    lists = {fid: value for fid, name in _list_fields(success.__class__)
             if type(value := getattr(success, name)) is EncodedList}
    if not lists:
        return None
    rest = copy.copy(success)
    for fid in lists:
        setattr(rest, success.thrift_spec[fid][1], None)
    pieces = [_SUCCESS_STRUCT, encode(rest)[:-1]]
    size = sum(map(len, pieces)) + 2
    for fid, items in lists.items():
        pieces += _encoded_list_bytes(fid, items)
        size += _LIST_HEADER_BYTES + items.byte_size()
    return pieces + [b"\x00", b"\x00"], size


LARGE_REPLY_ITEMS = 1000


def _is_large(success: Any) -> bool:
    """A list answer (or a struct holding one) long enough to be worth checking against the size limit."""
    if isinstance(success, (list, tuple)):
        return len(success) > LARGE_REPLY_ITEMS
    return hasattr(success, "thrift_spec") and any(
        type(value := getattr(success, name)) is list and len(value) > LARGE_REPLY_ITEMS
        for _, name in _list_fields(success.__class__))


class Calls(Protocol):
    """What the processor dispatches to: handler/'s Handler, or upstream/'s ForwardingHandler."""

    @property
    def ready_calls(self) -> frozenset[str]:
        """The calls ready_answer may answer (rpc/tiers.py: the ready tier)."""

    def method_for(self, api: str, reader: Reader) -> Callable[..., object] | None:
        """The method answering one call of `api`, bound to that call (None where none is served)."""

    def ready_answer(self, api: str, reader: Reader, arguments: Sequence[object]) -> Ready | None:
        """A call's answer (the `success` value) as Thrift bytes held ready, or None: method_for's method answers."""

    def ready_again(self, reader: Reader, held: Held) -> bool:
        """Whether an answer ready_answer gave, with `held`, is still current: it may be given `reader` again,
        counted as the cache hits it is."""


@functools.cache
def _reader(api: str) -> Reader:
    """The reader of a call with no snapshot of its own: one per method, as readers never change."""
    return Reader(api)


@functools.cache
def _arg_names(args_type: type[TPayload]) -> tuple[str, ...]:
    return tuple(spec[1] for spec in args_type.thrift_spec.values())


@functools.cache
def _reply_head(api: str) -> bytes:
    """A strict binary REPLY message to `api`, up to its sequence id."""
    name = api.encode()
    return struct.pack("!Ii", 0x80010000 | TMessageType.REPLY, len(name)) + name


@functools.cache
def _success_head(api: str) -> bytes:
    """The header of the `success` field (id 0) of `api`'s result: a struct for get_table, a list for listings."""
    success_type = getattr(hms.ThriftHiveMetastore, api + "_result").thrift_spec[0][0]
    return struct.pack("!bh", success_type, 0)


def _ready_message(api: str, seqid: bytes, answer: bytes) -> bytes:
    """The REPLY message (no frame) whose result's `success` is `answer`, bytes held ready."""
    return b"".join((_reply_head(api), seqid, _success_head(api), answer, b"\x00"))


class ReplyBuffer(TCyMemoryBuffer):   # type: ignore[misc]  # a compiled class: Any to mypy
    """Where a reply is written: what the protocol writes, and then byte pieces kept as they are (a cached listing
    is sent from the cache's own bytes objects, never copied into one buffer)."""

    def __init__(self) -> None:
        super().__init__()
        self._pieces: list[bytes] = []
        self._size = 0

    def write_pieces(self, pieces: list[bytes], size: int) -> None:
        """Ends the reply with `pieces`, `size` bytes together."""
        head = self.getvalue()
        self._pieces = [head, *pieces]
        self._size = len(head) + size

    def pieces(self) -> tuple[list[bytes], int]:
        """The reply's pieces and their size (the pieces' sizes are not added up again: a listing has thousands);
        none for a one-way call."""
        if self._pieces:
            return self._pieces, self._size
        value = self.getvalue()
        return ([value] if value else []), len(value)


class MetastoreProcessor(TProcessor):
    """One per connection: `peer` is its client's address, and the user its set_ugi named is kept for the audit
    log."""

    def __init__(self, calls: Calls, metrics: Metrics, max_reply_bytes: int = 1 << 62, *,
                 audit: AuditLog | None = None, peer: str = "", repeats: RepeatedRequests | None = None) -> None:
        # thriftpy2 annotates the service as a module; it is the generated class
        super().__init__(hms.ThriftHiveMetastore, calls)  # type: ignore[arg-type]
        self._calls = calls
        self._metrics = metrics
        self._max_reply_bytes = max_reply_bytes
        self._audit = audit
        self._peer = peer
        self._user = ""
        self._repeats = RepeatedRequests(0) if repeats is None else repeats   # the server's, shared by connections

    def process(self, iprot: Any, oprot: Any, compiled: bool = False) -> None:
        """`compiled`: the arguments are read by the compiled decoder even where idl.py set the tolerant one."""
        api, _, seqid = iprot.read_message_begin()
        if api not in self._service.thrift_services:  # not in the IDL: named, as Thrift's servers answer
            iprot.skip(TType.STRUCT)
            iprot.read_message_end()
            self._metrics.observe("unknown", "unknown_method", 0.0)
            unknown = TApplicationException(TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{api}'")
            self._audited(api[:200], {}, "unknown_method")
            return self.send_exception(oprot, api, unknown, seqid)
        args = getattr(self._service, api + "_args")()
        if compiled:
            iprot.read_struct(args)
        else:
            args.read(iprot)
        iprot.read_message_end()
        arguments = {name: getattr(args, name) for name in _arg_names(args.__class__)}
        if api == "set_ugi" and isinstance(arguments.get("user_name"), str):
            self._user = arguments["user_name"][:200]
        self._audited(api, arguments, self._answer(api, arguments, seqid, oprot))

    def reply(self, request: bytes, tolerant: bool = True) -> tuple[list[bytes], int]:
        """The reply to one request (one message), as byte pieces to send in order, and its size; no pieces for a
        one-way call.
        `tolerant=False` (the request holds no list-keyed map with entries) lets the compiled decoder read it all."""
        out = ReplyBuffer()
        self.process(TCyBinaryProtocol(TCyMemoryBuffer(request), strict_read=False),
                     TCyBinaryProtocol(out, strict_write=True), compiled=not tolerant)
        return out.pieces()

    def ready_reply(self, request: bytes) -> bytes | None:
        """The ready tier (rpc/tiers.py): the whole reply (no frame) to a request (one message) whose answer the
        handler holds ready as bytes, or None: the request is then processed as any other. Only the message's name
        is read unless the call may be answered so; any failure is left to the ordinary way, which answers it
        properly."""
        started = time.perf_counter()
        try:
            iprot = TCyBinaryProtocol(TCyMemoryBuffer(request), strict_read=False)
            api, message_type, seqid = iprot.read_message_begin()
            if api not in self._calls.ready_calls or message_type != TMessageType.CALL:
                return None
            args = getattr(self._service, api + "_args")()
            args.read(iprot)
            names = _arg_names(args.__class__)
            values = [getattr(args, name) for name in names]
            ready = self._calls.ready_answer(api, _reader(api), values)
        except Exception:
            return None
        if ready is None or len(ready.answer) > self._max_reply_bytes:
            return None
        self._metrics.observe_ready_answer(api, time.perf_counter() - started)
        arguments = None   # built for the audit log only
        if self._audit is not None:
            arguments = dict(zip(names, values))
            self._audited(api, arguments, "ok")
        self._repeats.remember(request, Repeat(api, arguments, ready.answer, ready.held))
        return _ready_message(api, struct.pack("!i", seqid), ready.answer)

    def repeated_reply(self, data: bytes | bytearray, framed: bool) -> bytes | None:
        """The repeated tier (rpc/tiers.py): the reply (no frame) when `data` holds exactly one request (in its
        frame when `framed`), and it repeats one ready_reply answered whose answer is still current; None
        otherwise (the request then takes the next tier)."""
        started = time.perf_counter()
        found = self._repeats.find(data, framed)
        if found is None:
            return None
        repeat, seqid = found
        if not self._calls.ready_again(_reader(repeat.api), repeat.held):
            return None
        self._metrics.observe_ready_answer(repeat.api, time.perf_counter() - started)
        if repeat.arguments is not None:
            self._audited(repeat.api, repeat.arguments, "ok")
        return _ready_message(repeat.api, seqid, repeat.answer)

    def _answer(self, api: str, arguments: dict[str, object], seqid: int, oprot: Any) -> str:
        """Runs the call and sends its answer; returns its outcome ("ok" or the exception's type)."""
        result = getattr(self._service, api + "_result")()
        started = time.perf_counter()
        outcome = "ok"
        try:
            method = self._calls.method_for(api, _reader(api))
            if method is None:  # in the IDL, not served: the declared MetaException says so
                raise hms.MetaException(message=f"{api} is not supported by hmsproxy")
            result.success = method(*arguments.values())
        except TApplicationException as exc:
            self._metrics.observe(api, "unsupported", time.perf_counter() - started)
            self.send_exception(oprot, api, exc, seqid)
            return "unsupported"
        except Exception as exc:  # every failure becomes a declared exception
            if isinstance(exc, sa_exc.DBAPIError):
                self._metrics.db_errors.labels(database_error_kind(exc)).inc()
            answer = to_declared(api, exc, result)
            outcome = type(answer).__name__
            if isinstance(answer, TApplicationException):
                self._metrics.observe(api, outcome, time.perf_counter() - started)
                self.send_exception(oprot, api, answer, seqid)
                return outcome
            self.handle_exception(answer, result)
        self._metrics.observe(api, outcome, time.perf_counter() - started)
        if not result.oneway:
            self.send_result(oprot, api, result, seqid)
        return outcome

    def _audited(self, api: str, arguments: dict[str, object], outcome: str) -> None:
        if self._audit is not None:
            self._audit.record(self._user, self._peer, api, arguments, outcome)

    def send_result(self, oprot: Any, api: str, result: Any, seqid: int) -> None:
        success = getattr(result, "success", None)
        encoded = result_pieces(success)
        if encoded is None and _is_large(success):
            whole = encode(result)   # encoded once, so that its size can be checked first
            encoded = [whole], len(whole)
        if encoded is None:
            return super().send_result(oprot, api, result, seqid)
        pieces, size = encoded
        if size > self._max_reply_bytes:
            self._metrics.refused_messages.inc()
            result.success = None
            refusal = to_declared(api, hms.MetaException(
                message=f"the reply to {api} would be {size} bytes, more than the maximum message size "
                        f"({self._max_reply_bytes}); fetch partitions in batches with get_partitions_batch"), result)
            if isinstance(refusal, TApplicationException):
                return self.send_exception(oprot, api, refusal, seqid)
            self.handle_exception(refusal, result)
            return super().send_result(oprot, api, result, seqid)
        oprot.write_message_begin(api, TMessageType.REPLY, seqid)
        oprot.trans.write_pieces(pieces, size)   # a ReplyBuffer (reply())
