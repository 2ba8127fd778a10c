"""Bytes a store holds ready to send, and how whoever keeps them learns that they are no longer current."""
from __future__ import annotations

from typing import NamedTuple


class Held:
    """Current while the store holds what it stands for; set off, for good, when that is replaced or removed."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current = True


class Ready(NamedTuple):
    answer: bytes   # a call's answer (the `success` value) as Thrift bytes
    held: Held      # current while the store still answers with these bytes
