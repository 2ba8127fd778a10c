"""The server's log: plain text for a terminal, or one JSON object per line for a log collector (--log-format)."""
from __future__ import annotations

import json
import logging
import time

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{record.msecs:03.0f}Z",
                 "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure(level: str, log_format: str) -> None:
    """Logs of every module go to standard error in the chosen format."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    for name in CREDENTIAL_LOGGERS:   # even at DEBUG: they log request headers, which carry the access key id
        logging.getLogger(name).setLevel(max(logging.INFO, logging.getLogger().level))


# The object-store client libraries, whose DEBUG lines hold each request's signed headers.
CREDENTIAL_LOGGERS = ("botocore", "aiobotocore", "s3fs", "fsspec", "urllib3", "aiohttp")
