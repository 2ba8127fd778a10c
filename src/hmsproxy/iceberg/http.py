"""The HTTP side every REST endpoint shares: the bearer-token check, the bounded body read, JSON in and out, the
ErrorModel answer, metrics and the audit line. Endpoint functions are blocking (they call the metastore) and run
on the ASGI stack's worker threads; nothing here ever answers with a traceback."""
from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from hmsproxy.iceberg.errors import BadRequest, NotAuthorized, RequestTooLarge, RestError
from hmsproxy.ops.audit import AuditLog
from hmsproxy.ops.metrics import Metrics

log = logging.getLogger(__name__)

JSON = "application/json"


@dataclass(frozen=True)
class Call:
    """What an endpoint function gets: the decoded path parameters, the query, the JSON body (None on a GET),
    and the request's headers."""
    path: Mapping[str, str]
    query: Mapping[str, str]
    body: dict[str, object] | None
    headers: Mapping[str, str]

    def query_int(self, name: str) -> int | None:
        value = self.query.get(name)
        if value is None or value == "":
            return None
        try:
            return int(value)
        except ValueError:
            raise BadRequest(f"{name}: expected an integer, got {value!r}") from None

    def json(self) -> dict[str, object]:
        if self.body is None:
            raise BadRequest("a JSON object body is required")
        return self.body


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    tokens: frozenset[str]   # empty: open, as the Thrift port is


Endpoint = Callable[[Call], object]   # returns a JSON-ready value, a Response, or None (204)


def json_response(value: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(orjson.dumps(value), status_code=status, media_type=JSON, headers=headers)


def error_response(error: RestError) -> Response:
    return json_response(error.body(), error.code)


def handler(operation: str, endpoint: Endpoint, limits: Limits, metrics: Metrics,
            audit: AuditLog | None) -> Callable[[Request], Awaitable[Response]]:
    async def respond(request: Request) -> Response:
        started = time.perf_counter()
        try:
            _check_token(request, limits.tokens)
            body = await _body(request, limits.max_body_bytes) if request.method == "POST" else None
            call = Call(dict(request.path_params), dict(request.query_params), body, request.headers)
            result = await run_in_threadpool(endpoint, call)
            response = result if isinstance(result, Response) else \
                Response(status_code=204) if result is None else json_response(result)
        except RestError as refused:
            response = error_response(refused)
        except Exception:
            log.exception("iceberg %s failed", operation)
            response = error_response(RestError(f"{operation} failed in the server; its log has the details"))
        metrics.observe_iceberg(operation, str(response.status_code), time.perf_counter() - started)
        if audit is not None:
            peer = request.client
            audit.record("", f"{peer.host}:{peer.port}" if peer else "", f"iceberg.{operation}",
                         _audited(request.path_params), str(response.status_code))
        return response
    return respond


def _check_token(request: Request, tokens: frozenset[str]) -> None:
    if not tokens:
        return   # open: pyiceberg sends `Bearer None` when it has no token, and that is fine
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not any(hmac.compare_digest(token.strip(), t) for t in tokens):
        raise NotAuthorized("A valid bearer token is required")


async def _body(request: Request, limit: int) -> dict[str, object] | None:
    """The JSON object the request carries, read no further than `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestTooLarge(f"The request body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestTooLarge(f"The request body is larger than {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as wrong:
        raise BadRequest(f"The body is not JSON: {wrong}") from None
    if not isinstance(value, dict):
        raise BadRequest("The body must be a JSON object")
    return value


def _audited(path: Mapping[str, str]) -> dict[str, object]:
    names: dict[str, object] = {}
    if "namespace" in path:
        names["dbname"] = path["namespace"]
    if "table" in path:
        names["tbl_name"] = path["table"]
    return names
