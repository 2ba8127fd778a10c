"""An HTTP relay in front of the S3 server that counts requests by S3 operation and refuses chosen ones: how a test
makes a rename's copy fail after its Nth object, or the deletes after it, deterministically (a TCP relay cannot tell
one request from the next on a kept-alive connection)."""
from __future__ import annotations

import http.client
import threading
from collections import Counter
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

REFUSAL = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
           b"<Message>refused by the test relay</Message></Error>")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


def operation(method: str, path: str, headers: http.client.HTTPMessage) -> str:
    """The S3 operation of a request, named as botocore names it (what the server's metrics name too)."""
    query = parse_qs(urlsplit(path).query, keep_blank_values=True)
    if method == "PUT":
        return "copy_object" if "x-amz-copy-source" in headers else "put_object"
    if method == "POST" and "delete" in query:
        return "delete_objects"
    if method == "GET" and query.get("list-type") == ["2"]:
        return "list_objects_v2"
    return {"GET": "get_object", "HEAD": "head_object", "DELETE": "delete_object"}.get(method, method.lower())


class S3Relay:
    """Forwards every request to the S3 server on `target_port`; `refuse(operation, after=n)` lets the next n
    requests of that operation through and answers the later ones 403 AccessDenied (not retried by botocore)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.counts: Counter[str] = Counter()   # requests seen, by operation (refused ones included)
        self.refused: Counter[str] = Counter()
        self._let_through: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Relayed, self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def refuse(self, operation: str, after: int = 0) -> None:
        with self._lock:
            self._let_through[operation] = after

    def heal(self) -> None:
        with self._lock:
            self._let_through.clear()

    def admits(self, operation: str) -> bool:
        """Counts the request; whether it goes through."""
        with self._lock:
            self.counts[operation] += 1
            left = self._let_through.get(operation)
            if left is None:
                return True
            if left > 0:
                self._let_through[operation] = left - 1
                return True
            self.refused[operation] += 1
            return False

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Relayed(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keeps the client's connections alive, as S3 does

    def __init__(self, relay: S3Relay, *args: object) -> None:
        self.relay = relay
        super().__init__(*args)  # type: ignore[arg-type]

    def log_message(self, format: str, *args: object) -> None:   # quiet: the test's output is not a server log
        pass

    def _relay(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.relay.admits(operation(self.command, self.path, self.headers)):
            self._answer(403, [("Content-Type", "application/xml")], REFUSAL)
            return
        upstream = http.client.HTTPConnection("127.0.0.1", self.relay.target_port, timeout=60)
        try:
            upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
            reply = upstream.getresponse()
            data = reply.read()
            headers = [(k, v) for k, v in reply.getheaders() if k.lower() not in _HOP_BY_HOP]
            length = reply.getheader("Content-Length") if self.command == "HEAD" else None
            self._answer(reply.status, headers, data, length)
        finally:
            upstream.close()

    def _answer(self, status: int, headers: list[tuple[str, str]], data: bytes, length: str | None = None) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", length or str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay
