"""The REST catalog's HTTP server: a Starlette app served by uvicorn on a thread of the metastore's process, so
that it shares the store, the cache, the metrics and the audit log with the Thrift port, and stops with it."""
from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable

import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount
from starlette.routing import Route as StarletteRoute

from hmsproxy.iceberg.http import Call, Limits, handler, json_response
from hmsproxy.iceberg.routes import Route, config_answer
from hmsproxy.ops.audit import AuditLog
from hmsproxy.ops.listening import binding
from hmsproxy.ops.metrics import Metrics

log = logging.getLogger(__name__)

KEEP_ALIVE_S = 30   # seconds a keep-alive connection may idle before uvicorn closes it


def build_app(base_path: str, routes: list[Route], limits: Limits, metrics: Metrics,
              audit: AuditLog | None) -> Starlette:
    config = config_answer(routes)

    def get_config(call: Call) -> object:
        return json_response(config)

    served: list[BaseRoute] = [StarletteRoute("/v1/config", handler("get_config", get_config, limits, metrics,
                                                                     audit), methods=["GET"])]
    for route in routes:
        served.append(StarletteRoute(route.served, handler(route.operation, route.endpoint, limits, metrics,
                                                                  audit), methods=[route.method]))
    return Starlette(routes=[Mount("/" + base_path.strip("/"), routes=served)] if base_path.strip("/") else served)


class RestServer:
    """uvicorn on its own thread and event loop, listening on a socket bound before it starts (so a taken port
    fails the start, and port 0 gives a free one)."""

    def __init__(self, app: Starlette, host: str, port: int, tls: ssl.SSLContext | None,
                 max_requests: int) -> None:
        with binding("the Iceberg REST catalog", host, port):
            self._socket = _listening_socket(host, port)
        self.port: int = self._socket.getsockname()[1]
        self.scheme = "https" if tls else "http"
        factory: Callable[[uvicorn.Config, Callable[[], ssl.SSLContext]], ssl.SSLContext] | None = \
            (lambda config, default: tls) if tls is not None else None
        self._server = uvicorn.Server(uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=KEEP_ALIVE_S,
            limit_concurrency=max_requests, ssl_context_factory=factory))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="iceberg-rest", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


def _listening_socket(host: str, port: int) -> socket.socket:
    """A listening socket made with the TCP protocol number, which its accepted connections inherit. asyncio sets
    TCP_NODELAY only on a connection that carries it (socket.create_server's have 0): without it a reply written
    as headers and then body waits for the client's delayed ACK, 40 ms on Linux, before its body leaves."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((host, port))
        listener.listen()
    except OSError:
        listener.close()
        raise
    return listener
