"""Calls to an upstream metastore as UpstreamStore makes them, with its failures turned into what HMS clients expect.

* A declared exception of the upstream (NoSuchObjectException, ...) is its answer: it passes through unchanged.
* No upstream answered (UpstreamUnavailable): MetaException. Hive's RetryingMetaStoreClient retries a MetaException
  whose message matches `(?s).*(JDO[a-zA-Z]*|TProtocol|TTransport)Exception.*`, so the message says
  "TTransportException" when sending the call again is safe (a read, or a write that never reached an upstream) and
  never names such an exception when a write may have been applied: a client must not repeat that one blindly.
* "Invalid method name" (TApplicationException UNKNOWN_METHOD): the upstream is older than the call. An `optional`
  call (a feature a newer Hive brought) then answers None, and the store remembers it, so it is asked once.
* Any other TApplicationException (Hive 2.3 answers some failures so, e.g. a NullPointerException inside it):
  MetaException with its text, as a client can only ever be handed a declared exception.
"""
from __future__ import annotations

import re
from typing import Any

from thriftpy2.thrift import TApplicationException

from hmsproxy.idl import hms
from hmsproxy.upstream.pool import UpstreamPool, UpstreamUnavailable

_RETRIED_BY_HIVE = re.compile(r"(JDO[a-zA-Z]*|TProtocol|TTransport)Exception")


class UpstreamCalls:
    """One store's calls through its pool, and what it learnt of the upstream's methods."""

    def __init__(self, pool: UpstreamPool) -> None:
        self.pool = pool
        self._missing: set[str] = set()   # optional methods the upstream answered "Invalid method name" to

    def call(self, method: str, *args: object, write: bool = False, null_ok: bool = False) -> Any:
        """ThriftHiveMetastore.`method`(*args) upstream. `write`: not idempotent, so never sent twice. `null_ok`: the
        call may answer null, which Thrift conveys as TApplicationException MISSING_RESULT; None is returned then."""
        try:
            return self._send(method, args, write)
        except TApplicationException as exc:
            if null_ok and exc.type == TApplicationException.MISSING_RESULT:
                return None
            raise _failed(method, exc) from None

    def optional(self, method: str, *args: object, write: bool = False) -> Any:
        """As `call`, but None when the upstream does not have the method."""
        if method in self._missing:
            return None
        try:
            return self._send(method, args, write)
        except TApplicationException as exc:
            if exc.type != TApplicationException.UNKNOWN_METHOD:
                raise _failed(method, exc) from None
            self._missing.add(method)
            return None

    def _send(self, method: str, args: tuple[object, ...], write: bool) -> Any:
        try:
            return self.pool.call(method, *args, idempotent=not write)
        except UpstreamUnavailable as exc:
            raise unavailable(exc, write) from None

    def close(self) -> None:
        self.pool.close()


def _failed(method: str, exc: TApplicationException) -> Exception:
    if exc.type == TApplicationException.UNKNOWN_METHOD:
        return hms.MetaException(message=f"the upstream HMS does not support {method}")
    return hms.MetaException(message=f"the upstream HMS failed in {method}: {exc}")


def unavailable(exc: UpstreamUnavailable, write: bool) -> Exception:
    """The MetaException a client gets when no upstream answered (see the module docstring)."""
    if write and exc.maybe_applied:
        detail = _RETRIED_BY_HIVE.sub(r"\1 failure", str(exc))
        return hms.MetaException(message=f"the upstream HMS did not answer, and the write may have been "
                                         f"applied: check before repeating it. {detail}")
    return hms.MetaException(message=f"TTransportException: the upstream HMS did not answer: {exc}")
