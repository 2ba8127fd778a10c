"""JSON as json.loads gives it and json.dumps takes it, named once for the modules that build or read JSON text
(notification messages, COLUMN_STATS_ACCURATE)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# Read-only containers (covariant): a list[str] or a dict[str, str] built for a message is JSON as it is.
Json: TypeAlias = str | int | float | bool | Sequence["Json"] | Mapping[str, "Json"] | None
JsonObject: TypeAlias = dict[str, Json]
