"""Binding the ports this server was told to listen on, with a refusal a person can act on."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class PortRefused(Exception):
    """A port cannot be had (taken by another process, or not this host's address): the start ends with this
    one line (exit code 2) instead of a traceback."""


@contextmanager
def binding(what: str, host: str, port: int) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise PortRefused(f"cannot listen on {host}:{port} for {what}: {reason}") from None
