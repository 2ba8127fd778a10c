"""The warehouse's work on an object store: what HMS does to directories, done to prefixes.

An object store has no directories: a database, table or partition "exists" once an object is under its prefix.
Creating one writes nothing (no marker object; Spark, Hive on S3A and Iceberg write into a prefix without one), so
a new location costs one listing request and nothing is left to clean up. Deleting one deletes every object under
its prefix (`key/`, so `t1` never takes `t10`), a thousand to a request. Moving one copies every object (the store
copies, COPIES_AT_ONCE at a time) and deletes the sources only once the metadata change committed: a
failure while copying deletes the copies made and leaves the sources whole, a failure after the commit leaves
sources behind (logged), never a table without its data.

Never deleted, emptied or moved: a bucket's root, or a prefix that holds the warehouse root.
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor, wait

from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.storage.locations import ObjectPlace
from hmsproxy.storage.object_store import ObjectStores

log = logging.getLogger(__name__)
# The copies of a move, made this many at a time: the store copies (the bytes never pass through here), so a
# thousand objects cost a thousand round trips, which one at a time would hold a rename for one each.
COPIES_AT_ONCE = 16
_COPIERS = ThreadPoolExecutor(max_workers=COPIES_AT_ONCE, thread_name_prefix="object-copies")


class ObjectFiles:
    def __init__(self, stores: ObjectStores, kept: tuple[ObjectPlace, ...], quick_stats_max_files: int) -> None:
        """`kept`: the places nothing may delete or move (the warehouse root, when it is on an object store)."""
        self.stores = stores
        self._kept = kept
        self._quick_stats_max_files = quick_stats_max_files
        self._quick_stats_skipped = BurstLog("quick stats of %s skipped: more than %d objects", 60.0, log)

    def served(self, place: ObjectPlace) -> bool:
        return place.family in self.stores.families

    def refusal(self, place: ObjectPlace) -> str | None:
        """Why `place` may not be deleted, emptied or moved, or None."""
        if not place.key:
            return "it is a bucket's root"
        for kept in self._kept:
            if place.holds(kept):
                return f"it holds {kept}"
        return None

    def keys(self, place: ObjectPlace) -> list[str]:
        """Every key under the place's prefix."""
        return [key for page in self.stores.client(place.family).pages(place.bucket, place.prefix) for key, _ in page]

    def is_empty(self, place: ObjectPlace) -> bool:
        pages = self.stores.client(place.family).pages(place.bucket, place.prefix)
        return not next(pages, [])

    def remove(self, place: ObjectPlace, *, keep_marker: bool = False) -> None:
        """Deletes every object under the place (`keep_marker`: but a `key/` marker another tool left, as emptying a
        directory keeps it); refused places are logged and kept."""
        refusal = self.refusal(place)
        if refusal is not None:
            log.warning("not deleting %s: %s", place, refusal)
            return
        keys = [key for key in self.keys(place) if not (keep_marker and key == place.prefix)]
        self.stores.client(place.family).delete(place.bucket, keys)

    def copy(self, source: ObjectPlace, target: ObjectPlace) -> list[str]:
        """Copies every object under `source` to the same name under `target`; returns the target keys. Refuses a
        target that holds objects (FileExistsError) and a source that may not move (PermissionError). A failure
        midway deletes the copies made before it is raised."""
        refusal = self.refusal(source)
        if refusal is not None:
            raise PermissionError(f"cannot move {source}: {refusal}")
        if not self.is_empty(target):
            raise FileExistsError(f"cannot move {source} to {target}: the target already holds objects")
        client = self.stores.client(source.family)
        keys = self.keys(source)
        copies = [target.prefix + key[len(source.prefix):] for key in keys]
        started = [_COPIERS.submit(client.copy, source.bucket, key, copy) for key, copy in zip(keys, copies)]
        wait(started)   # all of them, so that no copy lands after the undo below
        failures = [error for error in (future.exception() for future in started) if error is not None]
        copied = [copy for copy, future in zip(copies, started) if future.exception() is None]
        if failures:
            self.delete_keys(target, copied)
            raise failures[0]
        return copied

    def delete_keys(self, place: ObjectPlace, keys: list[str]) -> None:
        """Deletes the keys (what a copy made, or its sources); a failure is logged, not raised: it runs when the
        call's outcome is already decided."""
        try:
            self.stores.client(place.family).delete(place.bucket, keys)
        except OSError as exc:
            log.warning("%d objects under %s left behind: %s", len(keys), place, exc)

    def quick_stats(self, place: ObjectPlace, *, missing_is_new: bool) -> dict[str, str] | None:
        """numFiles / totalSize of the objects under the place, hidden ones (a `_` or `.` name at any level below
        it) and markers skipped; None past `quick_stats_max_files` objects, or for an empty new place."""
        files = size = visited = 0
        for page in self.stores.client(place.family).pages(place.bucket, place.prefix):
            visited += len(page)
            if visited > self._quick_stats_max_files:
                self._quick_stats_skipped.happened(place, self._quick_stats_max_files)
                return None
            for key, length in page:
                name = key[len(place.prefix):]
                if key.endswith("/") or any(part.startswith((".", "_")) for part in name.split("/")):
                    continue
                files += 1
                size += length
        if visited == 0 and missing_is_new:
            return None
        return {"numFiles": str(files), "totalSize": str(size)}
