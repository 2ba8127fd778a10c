"""Free loopback ports for servers a test starts on ports it must know before they start."""
from __future__ import annotations

import socket
from contextlib import ExitStack


def free_ports(count: int) -> tuple[int, ...]:
    """`count` distinct ports free a moment ago: every probe stays bound until all are picked, so two picks in
    one call never return the same port (two separate picks may, once the first probe is closed)."""
    with ExitStack() as probes:
        ports = []
        for _ in range(count):
            probe = probes.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
        return tuple(ports)


def free_port() -> int:
    return free_ports(1)[0]
