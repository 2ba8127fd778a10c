"""A TCP forwarder on loopback that a test can cut, stall and restore, to take a database away from a server:
cut closes every connection (the database is down), stall keeps them open and forwards nothing (the
network black-holes the database)."""
from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self.open = True
        self._flowing = threading.Event()
        self._flowing.set()
        self._replying = threading.Event()   # cleared: requests reach the target, its answers are held
        self._replying.set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            self._flowing.wait()   # stalled: the connection is accepted and left unanswered
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections += [client, upstream]
            for source, sink, gates in ((client, upstream, (self._flowing,)),
                                        (upstream, client, (self._flowing, self._replying))):
                threading.Thread(target=self._pipe, args=(source, sink, gates), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, gates: tuple[threading.Event, ...]) -> None:
        try:
            while data := source.recv(65536):
                for gate in gates:
                    gate.wait()
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Refuses new connections and breaks the open ones: the database is unreachable."""
        self.open = False
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()

    def stall(self) -> None:
        """Keeps every connection open and forwards nothing, new ones included: a black hole."""
        self._flowing.clear()

    def hold_replies(self) -> None:
        """Requests still reach the target, which acts on them; its answers are held back: a write applied whose
        acknowledgement is lost."""
        self._replying.clear()

    def restore(self) -> None:
        self.open = True
        self._flowing.set()
        self._replying.set()

    def close(self) -> None:
        self._flowing.set()
        self._replying.set()
        self.cut()
        self._listener.close()
