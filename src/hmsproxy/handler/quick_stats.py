"""numFiles / totalSize, the "fast stats" HMS keeps in table and partition parameters.

HMS lists a directory when a table or partition is created over existing data and when one is altered. Such
stats are not "accurate" basic stats, so the COLUMN_STATS_ACCURATE marker is dropped, unless the client says a
stats task computed them (STATS_GENERATED=TASK), which marks the basic stats accurate. The rules of Hive 2.3,
checked against it call by call (tests/api/test_hive_answers.py):
- create_table: unless the table carries a true DO_NOT_UPDATE_STATS parameter (removed, never stored);
- add_partition(s): always (the environment context and that parameter mean nothing there: it is stored);
- alter_table of an unpartitioned table, not a rename: unless the environment context says
  DO_NOT_UPDATE_STATS=true (exactly) or the table carries the parameter, always listed again;
- alter_partition(s): see `update_altered_partition_stats`.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from hmsproxy.hive.stats_accurate import ACCURATE, mark_basic_stats_accurate
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.storage.warehouse import Warehouse

DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"
STATS_GENERATED = "STATS_GENERATED"
FAST_STATS = ("numFiles", "totalSize")
JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def strip_marker(params: dict[str, str]) -> bool:
    """Removes a table's DO_NOT_UPDATE_STATS parameter; True if it asked to skip the update (Java's
    Boolean.valueOf: "true" in any case)."""
    marker = params.pop(DO_NOT_UPDATE_STATS, None)
    return marker is not None and marker.lower() == "true"


def told_not_to_update(env: Mapping[str, str]) -> bool:
    """The environment context's DO_NOT_UPDATE_STATS, which Hive compares with "true" case-sensitively."""
    return env.get(DO_NOT_UPDATE_STATS) == "true"


def update_basic_state(params: dict[str, str], env: Mapping[str, str]) -> None:
    """Hive's updateBasicState: stats a stats task computed are accurate basic stats; any others are not."""
    if env.get(STATS_GENERATED) == "TASK":
        params[ACCURATE] = mark_basic_stats_accurate(params.get(ACCURATE))
    else:
        params.pop(ACCURATE, None)


def update_quick_stats(warehouse: Warehouse, params: dict[str, str], location: str | None, *, new_dir: bool,
                       force: bool, env: Mapping[str, str], made_if_missing: bool = False) -> None:
    """Updates params in place the way Hive's updateTableStatsFast / updatePartitionStatsFast do, once the
    caller has decided they are to be updated. `made_if_missing`: the caller makes a missing directory next, so
    it is new (no stats) rather than listed as empty."""
    if new_dir or (not force and all(k in params for k in FAST_STATS)):
        return
    stats = warehouse.quick_stats(location, missing_is_new=made_if_missing)
    if stats is None:
        return
    params.update(stats)
    update_basic_state(params, env)


# Hive lists added partitions' directories on a pool of hive.metastore.fshandler.threads (15): on an object store each
# listing is a request away, so a thousand partitions are listed fifteen at a time.
_LISTERS = ThreadPoolExecutor(max_workers=15, thread_name_prefix="quick-stats")


def update_added_partitions_stats(warehouse: Warehouse, parts: Sequence[hms.Partition]) -> None:
    """The quick stats of partitions being added (before their directories are made: a missing one is new)."""
    def update(part: hms.Partition) -> None:
        update_quick_stats(warehouse, present(part.parameters), present(part.sd).location, new_dir=False,
                           force=False, env={}, made_if_missing=True)
    if len(parts) > 1 and warehouse.is_remote(present(parts[0].sd).location):
        list(_LISTERS.map(update, parts))
    else:
        for part in parts:
            update(part)


def update_altered_partition_stats(warehouse: Warehouse, old_params: Mapping[str, str], new_params: dict[str, str],
                                   location: str | None, env: Mapping[str, str]) -> None:
    """HiveAlterHandler's alterPartition(s): when the stats are to be recalculated (`_require_cal_stats`), new
    fast stats equal to the stored ones are kept (only their accuracy follows STATS_GENERATED); others are
    listed from the directory again (a missing one: zero files)."""
    if not _require_cal_stats(old_params, new_params, env):
        return
    if _fast_stats_same(old_params, new_params):
        update_basic_state(new_params, env)
    else:
        update_quick_stats(warehouse, new_params, location, new_dir=False, force=True, env=env)


def _require_cal_stats(old_params: Mapping[str, str], new_params: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Hive's requireCalStats for an altered partition: unless told not to, when the new partition lacks fast
    stats, when a stats task or the user generated them, or when they are not the stored ones."""
    if told_not_to_update(env):
        return False
    if not all(key in new_params for key in FAST_STATS) or env.get(STATS_GENERATED) in ("TASK", "USER"):
        return True
    return not _fast_stats_same(old_params, new_params)


def _fast_stats_same(old_params: Mapping[str, str], new_params: Mapping[str, str]) -> bool:
    """Hive's isFastStatsSame: both carry every fast stat with the same number ("01" is 1). A value that is not
    a Java long refuses the call with Hive's MetaException, as Long.parseLong does."""
    for key in FAST_STATS:
        if key not in old_params:
            return False
        old_value = _java_long(old_params[key])   # parsed before the new one is looked at, as in Hive
        if key not in new_params or old_value != _java_long(new_params[key]):
            return False
    return True


def _java_long(text: str) -> int:
    value = int(text) if JAVA_LONG.fullmatch(text) else None
    if value is None or not -(2 ** 63) <= value < 2 ** 63:
        raise hms.MetaException(message=f'java.lang.NumberFormatException: For input string: "{text}"')
    return value
