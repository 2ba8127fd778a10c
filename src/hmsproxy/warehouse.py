"""Directories of databases, tables and partitions: default locations and the file-system work HMS does.

Locations are stored as URIs the way Hive writes them (`file:/abs/path`). Only local file systems are
touched; a location on another scheme (hdfs://, s3a://, ...) is stored as given and left alone, because
this server has no client for it.
"""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
import re

log = logging.getLogger(__name__)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def to_uri(path: Path) -> str:
    return "file:" + str(path)


def local_path(location: str | None) -> Path | None:
    """The local directory behind a location, or None when it is not on the local file system.

    Hive writes locations as Path.toString(): nothing is percent-encoded (an escaped partition name such
    as `ds=a%2Fb` is literally that directory name), so the text after the scheme is the path as is."""
    if not location:
        return None
    if location.startswith("file:"):
        rest = location[len("file:"):]
        if rest.startswith("//"):
            host, _, path = rest[2:].partition("/")
            if host not in ("", "localhost"):
                return None
            rest = "/" + path
        return Path(rest)
    if _SCHEME.match(location):
        return None
    return Path(location)


def normalise_location(location: str | None) -> str | None:
    """`/x/y/`, `file:///x/y` and `file:/x/y` all become `file:/x/y`, as Hive's Path does."""
    path = local_path(location)
    if path is None:
        return location.rstrip("/") if location else location
    return to_uri(Path(os.path.normpath(path)))


def join(location: str, *parts: str) -> str:
    return location.rstrip("/") + "".join("/" + p for p in parts)


class Warehouse:
    """Computes default locations under the warehouse root and does the directory work."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def default_database_location(self, db_name: str) -> str:
        if db_name == "default":
            return to_uri(self.root)
        return to_uri(self.root / f"{db_name}.db")

    @staticmethod
    def default_table_location(db_location: str, table_name: str) -> str:
        return join(db_location, table_name)

    @staticmethod
    def mkdirs(location: str | None) -> bool:
        """Creates the directory; True if it did not exist before (so a failed call can undo it)."""
        path = local_path(location)
        if path is None or path.exists():
            return False
        path.mkdir(parents=True, exist_ok=True)
        return True

    @staticmethod
    def remove(location: str | None) -> None:
        path = local_path(location)
        if path is None or not path.exists():
            return
        try:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError as exc:
            log.warning("could not delete %s: %s", path, exc)

    @staticmethod
    def move(source: str | None, target: str | None) -> bool:
        """Renames a directory; True if something was moved. Refuses to overwrite an existing target."""
        src, dst = local_path(source), local_path(target)
        if src is None or dst is None or not src.exists() or src == dst:
            return False
        if dst.exists():
            raise FileExistsError(f"cannot move {source} to {target}: the target already exists")
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        return True

    @staticmethod
    def quick_stats(location: str | None) -> dict[str, str] | None:
        """numFiles / totalSize of the data files under a directory (hidden `_`/`.` files skipped), as HMS
        computes them; None when the directory cannot be read."""
        path = local_path(location)
        if path is None or not path.is_dir():
            return None
        files = 0
        size = 0
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
            for name in filenames:
                if name.startswith((".", "_")):
                    continue
                files += 1
                size += os.path.getsize(os.path.join(dirpath, name))
        return {"numFiles": str(files), "totalSize": str(size)}
