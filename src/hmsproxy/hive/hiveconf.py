"""HiveConf's defaults, for get_config_value: HMS answers a key it does not set with HiveConf's default.

`hiveconf_2_3_defaults.jsonl` holds, one `[key, default]` per line, every HiveConf variable of Hive 2.3.10
whose default is not empty (HMS leaves empty and null defaults unset, so the caller's default answers them).
It is read from the `hive-common` jar PySpark ships; tests/unit/test_hiveconf.py reads the jar again with
`jshell` and fails if the file differs.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

DEFAULTS_FILE = "hiveconf_2_3_defaults.jsonl"


@functools.cache
def hiveconf_defaults() -> dict[str, str]:
    text = resources.files("hmsproxy.hive").joinpath(DEFAULTS_FILE).read_text(encoding="utf-8")
    return {key: value for key, value in (json.loads(line) for line in text.splitlines() if line)}
