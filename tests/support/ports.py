"""Free loopback ports for servers a test starts on ports it must know before they start.

A port is free only until someone binds it. The kernel gives every outgoing connection's local end a port of its
ephemeral range, and the suite opens thousands of them (database drivers, clients, Spark), so a port picked there
can be taken before the server binds it (seen: "Address already in use" for a metrics port picked a moment before).
Ports are therefore picked at random below that range, where only an explicit bind takes one."""
from __future__ import annotations

import random
import socket
from contextlib import ExitStack
from pathlib import Path

LOWEST = 10_000   # above the ports services commonly listen on
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
PICKS = random.SystemRandom()   # not the module's generator, which hypothesis seeds the same for every example


def _below_ephemeral() -> range:
    """The ports a pick is drawn from: from LOWEST to the kernel's ephemeral range (empty where it is unknown)."""
    try:
        first_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return range(0)
    return range(LOWEST, first_ephemeral)


def _probe(probes: ExitStack, candidates: range) -> int:
    """Binds a free port (of `candidates` when one of a few tries is free, else any) and keeps it bound."""
    probe = probes.enter_context(socket.socket())
    for port in PICKS.sample(candidates, min(20, len(candidates))):
        try:
            probe.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
    probe.bind(("127.0.0.1", 0))
    return int(probe.getsockname()[1])


def free_ports(count: int) -> tuple[int, ...]:
    """`count` distinct ports free a moment ago: every probe stays bound until all are picked, so two picks in
    one call never return the same port (two separate picks seldom may, once the first probe is closed)."""
    candidates = _below_ephemeral()
    with ExitStack() as probes:
        return tuple(_probe(probes, candidates) for _ in range(count))


def free_port() -> int:
    return free_ports(1)[0]
