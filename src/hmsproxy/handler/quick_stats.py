"""numFiles / totalSize, the "fast stats" HMS keeps in table and partition parameters.

HMS lists a directory when a table or partition is created over existing data and whenever one is
altered (unless the client says DO_NOT_UPDATE_STATS); such stats are not "accurate" basic stats, so the
COLUMN_STATS_ACCURATE marker is dropped unless the stats came from a stats task.
"""
from __future__ import annotations

from collections.abc import Mapping

from hmsproxy.warehouse import Warehouse

DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"
STATS_GENERATED = "STATS_GENERATED"
FAST_STATS = ("numFiles", "totalSize")


def strip_marker(params: dict[str, str]) -> bool:
    """Removes a DO_NOT_UPDATE_STATS marker parameter; True if it asked to skip the update."""
    marker = params.pop(DO_NOT_UPDATE_STATS, None)
    return marker is not None and marker.lower() == "true"


def update_quick_stats(warehouse: Warehouse, params: dict[str, str], location: str | None, *, new_dir: bool,
                       force: bool, env: Mapping[str, str]) -> None:
    """Updates params in place the way Hive's updateTableStatsFast / updatePartitionStatsFast do."""
    if DO_NOT_UPDATE_STATS in params and params[DO_NOT_UPDATE_STATS].lower() == "true":
        return
    if env.get(DO_NOT_UPDATE_STATS, "").lower() == "true":
        return
    if not force and all(k in params for k in FAST_STATS):
        return
    if new_dir:
        return
    stats = warehouse.quick_stats(location)
    if stats is None:
        return
    params.update(stats)
    if env.get(STATS_GENERATED) != "TASK":
        params.pop("COLUMN_STATS_ACCURATE", None)
