"""The audit log: one line per call saying who called what on which object, and how it ended.

As the Java metastore's HiveMetaStore.audit log does (`ugi=... ip=... cmd=...`), with the object named and the
outcome added. The user is the one the client's `set_ugi` gave on its connection (the only identity an
unauthenticated Thrift connection carries; empty until it calls it), the address is the connection's peer. In text
each field is `key=value`, tab-separated (a value's tabs and newlines are escaped, so one call is one line); with
--log-format json each line is a JSON object with the same keys.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Mapping
from typing import TextIO

from hmsproxy.ops.call_names import database_named, tables_named

TO_STANDARD_OUTPUT = "-"


class AuditLog:
    def __init__(self, destination: str, as_json: bool) -> None:
        self._stream: TextIO = sys.stdout if destination == TO_STANDARD_OUTPUT else \
            open(destination, "a", encoding="utf-8", buffering=1)   # noqa: SIM115 (open for the server's life)
        self._as_json = as_json
        self._lock = threading.Lock()   # whole lines from every connection's thread

    def record(self, user: str, address: str, api: str, arguments: Mapping[str, object], outcome: str) -> None:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z", "ugi": user, "ip": address,
                 "cmd": api, **_object(api, arguments), "result": outcome}
        line = json.dumps(entry, ensure_ascii=False) if self._as_json else "\t".join(
            f"{key}={_escaped(value)}" for key, value in entry.items())
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def close(self) -> None:
        if self._stream is not sys.stdout:
            self._stream.close()


def _object(api: str, arguments: Mapping[str, object]) -> dict[str, str]:
    """The database and table the call names (empty when it names none)."""
    table = next(tables_named(arguments), None)
    if table is not None:
        return {"db": f"{table[0]}.{table[1]}", "tbl": table[2]}
    database = database_named(api, arguments)
    return {"db": f"{database[0]}.{database[1]}"} if database else {}


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
