"""The COLUMN_STATS_ACCURATE parameter of a table or partition: which of its statistics Hive may trust without
reading the data (a JSON object: BASIC_STATS, and COLUMN_STATS with a "true" per column)."""
from __future__ import annotations

import json
from collections.abc import Sequence

from hmsproxy.idl.json_value import JsonObject

ACCURATE = "COLUMN_STATS_ACCURATE"


def _accuracy(current: str | None) -> tuple[JsonObject, JsonObject]:
    """The COLUMN_STATS_ACCURATE state and its COLUMN_STATS part; what is not that JSON reads as nothing marked."""
    try:
        state = json.loads(current) if current else {}
    except ValueError:
        state = {}
    if not isinstance(state, dict):
        state = {}
    column_state = state.get("COLUMN_STATS")
    return state, column_state if isinstance(column_state, dict) else {}


def mark_columns_accurate(current: str | None, columns: Sequence[str]) -> str:
    state, column_state = _accuracy(current)
    column_state.update({c: "true" for c in columns})
    state["COLUMN_STATS"] = dict(sorted(column_state.items()))
    return json.dumps(state, separators=(",", ":"))


def mark_basic_stats_accurate(current: str | None) -> str:
    """COLUMN_STATS_ACCURATE once a stats task has computed the basic stats: BASIC_STATS true, the columns marked
    before kept, written as Hive 2.3 writes it (BASIC_STATS first; COLUMN_STATS only when some are marked)."""
    _, column_state = _accuracy(current)
    state: JsonObject = {"BASIC_STATS": "true"}
    if column_state:
        state["COLUMN_STATS"] = dict(sorted(column_state.items()))
    return json.dumps(state, separators=(",", ":"))
