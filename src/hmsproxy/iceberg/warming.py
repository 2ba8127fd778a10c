"""Warms the manifest cache after prewarm: the current snapshot's manifest list and manifests of every Iceberg
table, so that the first plan of each is answered from memory (--iceberg-warm-manifests)."""
from __future__ import annotations

import logging
import threading
import time

from hmsproxy.iceberg.hive_tables import METADATA_LOCATION, is_iceberg
from hmsproxy.iceberg.manifest_cache import ManifestCache
from hmsproxy.iceberg.tables import Tables

log = logging.getLogger(__name__)

PROGRESS_EVERY = 100   # tables between progress lines


def warm_manifests(tables: Tables, cache: ManifestCache) -> int:
    """Reads every Iceberg table's current manifests into the cache; returns the tables warmed. A table whose files
    cannot be read is logged and skipped: its first plan reads them, as without warming."""
    handler, io = tables.handler, tables.files.io
    started, warmed = time.monotonic(), 0
    for database in handler.get_all_databases():
        for table in handler.get_table_objects_by_name(database, handler.get_all_tables(database)):
            location = (table.parameters or {}).get(METADATA_LOCATION)
            if not is_iceberg(table) or not location:
                continue
            try:
                snapshot = tables.files.read(location).current_snapshot()
                if snapshot is not None:
                    for manifest in cache.manifests(io, snapshot.manifest_list):
                        cache.entries(io, manifest)
            except Exception:
                log.warning("warming the manifests of %s.%s failed; its first plan reads them", database,
                            table.tableName, exc_info=True)
                continue
            warmed += 1
            if warmed % PROGRESS_EVERY == 0:
                log.info("warming Iceberg manifests: %d tables, %d entries, %.1f s", warmed, cache.entries_held,
                         time.monotonic() - started)
    log.info("warmed the manifests of %d Iceberg tables: %d entries, %d bytes, in %.1f s", warmed,
             cache.entries_held, cache.size_bytes, time.monotonic() - started)
    return warmed


def warm_after(prewarmed: threading.Event | None, tables: Tables, cache: ManifestCache) -> threading.Thread:
    """Starts warming on a thread of its own once prewarm has completed (at once without a cache)."""
    def run() -> None:
        if prewarmed is not None:
            prewarmed.wait()
        warm_manifests(tables, cache)
    thread = threading.Thread(target=run, name="iceberg-manifest-warming", daemon=True)
    thread.start()
    return thread
