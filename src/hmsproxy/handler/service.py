"""Session and service calls: set_ugi, configuration look-ups and the fb303 base service."""
from __future__ import annotations

import logging
from collections.abc import Sequence

from hmsproxy.handler.common import Calls
from hmsproxy.idl import fb303, hms

log = logging.getLogger(__name__)

SECRET_KEY_PARTS = ("password", "secret", "credential", "keystore")
READABLE_PREFIXES = ("hive", "hdfs", "mapred", "metastore")  # HMS refuses get_config_value for any other key
VERSION = "4.0.0"
# HiveConf's metaConfs: the keys a client may read and set per session through getMetaConf/setMetaConf.
META_CONF_DEFAULTS = {
    "hive.metastore.try.direct.sql": "true",
    "hive.metastore.try.direct.sql.ddl": "true",
    "hive.metastore.client.socket.timeout": "600s",
    "hive.metastore.partition.name.whitelist.pattern": "",
    "hive.metastore.client.capability.check": "true",
    "hive.metastore.disallow.incompatible.col.type.changes": "true",
}


class ServiceCalls(Calls):

    def set_ugi(self, user_name: str, group_names: Sequence[str] | None) -> list[str]:
        """HMS 2.3 answers the client's groups (clients ignore the answer)."""
        return list(group_names or [])

    def getMetaConf(self, key: str) -> str:
        """Only the per-session "meta confs" HMS exposes; anything else is an invalid key, as in HMS."""
        if key not in META_CONF_DEFAULTS:
            raise hms.MetaException(message=f"Invalid configuration key {key}")
        return META_CONF_DEFAULTS[key]

    def setMetaConf(self, key: str, value: str) -> None:
        if key not in META_CONF_DEFAULTS:
            raise hms.MetaException(message=f"Invalid configuration key {key}")

    def get_config_value(self, name: str, defaultValue: str) -> str:
        lowered = (name or "").lower()
        if not lowered.startswith(READABLE_PREFIXES) or any(part in lowered for part in SECRET_KEY_PARTS):
            raise hms.ConfigValSecurityException(
                message=f"For security reasons, the config key {name} cannot be accessed")
        return self.ctx.server_conf.get(name, defaultValue)

    # ---- fb303 -------------------------------------------------------------------------------------

    def getName(self) -> str:
        return "hmsproxy"

    def getVersion(self) -> str:
        return VERSION

    def getStatus(self) -> int:
        return fb303.fb_status.ALIVE

    def getStatusDetails(self) -> str:
        return "hmsproxy is serving"

    def getCounters(self) -> dict[str, int]:
        return {}

    def getCounter(self, key: str) -> int:
        return 0

    def setOption(self, key: str, value: str) -> None:
        return None

    def getOption(self, key: str) -> str:
        return ""

    def getOptions(self) -> dict[str, str]:
        return {}

    def getCpuProfile(self, profileDurationInSec: int) -> str:
        return ""

    def aliveSince(self) -> int:
        return self.ctx.started_at

    def reinitialize(self) -> None:
        return None

    def shutdown(self) -> None:
        """Clients send this one-way call when they close a connection; it never stops the server."""
        log.debug("client sent fb303 shutdown (connection closing)")
