"""Directories of databases, tables and partitions: default locations and the file-system work HMS does.

Locations are stored as URIs the way Hive writes them (`file:/abs/path`). Only local file systems are
touched; a location on another scheme (hdfs://, s3a://, ...) is stored as given and left alone, because
this server has no client for it.

What a client may name, and what the server may delete or move:
- a location is an absolute path or an absolute URI (`file:/x`, `file:///x`, `hdfs://nn/x`); relative ones
  (`.`, `..`, `dir`, `file:.`, `file:rel`) are refused, and `..` segments are resolved before anything else;
- nothing that holds the warehouse root, the server's working directory or its database file (the file
  system root included) is deleted, emptied or moved, whatever object claims it as its location; nor is
  anything inside the working directory or beside the database file, unless it is inside the warehouse.
"""
from __future__ import annotations

import itertools
import logging
import os
import re
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from hmsproxy.ops.burst_log import BurstLog

log = logging.getLogger(__name__)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def to_uri(path: Path) -> str:
    return "file:" + str(path)


def local_path(location: str | None) -> Path | None:
    """The local directory behind a location, or None when it is not on the local file system."""
    text = _local_text(location)
    return None if text is None else Path(text)


def _local_text(location: str | None) -> str | None:
    """`local_path` as text (what a write of many partitions needs, without a Path object for each).

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
        return rest
    if _SCHEME.match(location):
        return None
    return location


def normalise_location(location: str | None) -> str | None:
    """`/x/y/`, `file:///x/y` and `file:/x/y` all become `file:/x/y`, as Hive's Path does.
    Raises ValueError for a relative location (see the module docstring)."""
    path = _local_text(location)
    if path is None:
        if location and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:/", location):
            raise ValueError(f"location {location!r} is not absolute: give an absolute path or URI")
        return location.rstrip("/") if location else location
    if not path.startswith("/"):
        raise ValueError(f"location {location!r} is not absolute: give an absolute path or URI")
    return "file:" + os.path.normpath(path)


def _inside(path: str, directory: str) -> bool:
    """path is directory itself or below it (both normalised absolute paths)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def join(location: str, *parts: str) -> str:
    return location.rstrip("/") + "".join("/" + p for p in parts)


class Warehouse:
    """Computes default locations under the warehouse root and does the directory work."""

    def __init__(self, root: Path, keep: tuple[Path, ...] = (), quick_stats_max_files: int = 100_000) -> None:
        """`keep`: what the server runs from (its working directory, its database file).
        `quick_stats_max_files`: the most directory entries one quick-stats listing visits."""
        self.root = root
        self.quick_stats_max_files = quick_stats_max_files
        self._quick_stats_skipped = BurstLog("quick stats of %s skipped: more than %d entries", 60.0, log)
        self._root = os.path.normpath(root.absolute())
        self._kept = (self._root, *(os.path.normpath(p.absolute()) for p in keep))
        self._kept_trees = tuple(os.path.normpath((p if p.is_dir() else p.parent).absolute()) for p in keep)

    def _refusal(self, path: Path) -> str | None:
        """Why `path` may not be deleted, emptied or moved (see the module docstring), or None."""
        candidate = os.path.normpath(path.absolute())
        for kept in self._kept:
            if _inside(kept, candidate):
                return f"it holds {kept}"
        if _inside(candidate, self._root):
            return None
        for tree in self._kept_trees:
            if _inside(candidate, tree):
                return f"it is inside {tree}, which the server runs from"
        return None

    def default_database_location(self, db_name: str) -> str:
        if db_name == "default":
            return to_uri(self.root)
        return to_uri(self.root / f"{db_name}.db")

    @staticmethod
    def default_table_location(db_location: str, table_name: str) -> str:
        return join(db_location, table_name)

    @staticmethod
    def mkdirs(location: str | None) -> list[str]:
        """Creates the directory and its missing parents; returns those it created, innermost first (what a failed
        call removes), none when the directory existed."""
        path = _local_text(location)
        return [] if path is None else Warehouse.make_dir(path)

    @staticmethod
    def make_dir(path: str) -> list[str]:
        """`mkdirs` of a local path: one system call when the parent exists (a partition's, as a rule), and no
        Path object then (a write of many partitions makes one directory each)."""
        try:
            os.mkdir(path)
            return [path]
        except FileExistsError:
            return []
        except FileNotFoundError:
            directory = Path(path)
            missing = [directory, *itertools.takewhile(lambda parent: not parent.exists(), directory.parents)]
            directory.mkdir(parents=True, exist_ok=True)
            return [str(made) for made in missing]

    def remove_created(self, created: list[str]) -> None:
        """Undoes `mkdirs`: the directory it made, then each parent it made while that is empty (another call
        may have put its own directory there meanwhile)."""
        self.remove(to_uri(Path(created[0])))
        for parent in created[1:]:
            try:
                os.rmdir(parent)
            except OSError:
                return

    def remove(self, location: str | None) -> None:
        """Deletes an object's directory; never one that holds something kept (then it logs and keeps it)."""
        path = local_path(location)
        if path is None or not path.exists():
            return
        refusal = self._refusal(path)
        if refusal is not None:
            log.warning("not deleting %s: %s", location, refusal)
            return
        try:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        except OSError as exc:
            log.warning("could not delete %s: %s", path, exc)

    def empty(self, location: str | None) -> None:
        """Deletes what a directory holds (truncate), each entry as `remove` would."""
        path = local_path(location)
        if path is None or not path.is_dir():
            return
        refusal = self._refusal(path)
        if refusal is not None:
            log.warning("not emptying %s: %s", location, refusal)
            return
        assert location is not None  # local_path(None) is None
        for child in path.iterdir():
            self.remove(join(location, child.name))

    def move(self, source: str | None, target: str | None) -> bool:
        """Renames a directory; True if something was moved. Refuses to overwrite an existing target and
        to move a directory that holds something kept (FileExistsError / PermissionError)."""
        src, dst = local_path(source), local_path(target)
        if src is None or dst is None or not src.exists() or src == dst:
            return False
        refusal = self._refusal(src)
        if refusal is not None:
            raise PermissionError(f"cannot move {source}: {refusal}")
        if dst.exists():
            raise FileExistsError(f"cannot move {source} to {target}: the target already exists")
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        return True

    def changes(self) -> DirectoryWork:
        """The directory work of one write, to be undone if the write fails (see DirectoryWork)."""
        return DirectoryWork(self)

    def quick_stats(self, location: str | None, *, missing_is_new: bool = False) -> dict[str, str] | None:
        """numFiles / totalSize of the data files under a directory (hidden `_`/`.` files skipped), as HMS
        computes them; None when the directory cannot be read, or holds more than `quick_stats_max_files`
        entries (a table placed over a huge tree, such as `file:/`, would hold the call for minutes; HMS
        lists it all). What cannot be stat'ed (a dangling symlink, a file deleted meanwhile) is skipped: a
        write never fails for the sake of these figures. A directory that does not exist holds no files, as
        HMS lists it; unless `missing_is_new`: the caller makes it next, and a new directory gets no stats."""
        path = local_path(location)
        if path is None:
            return None
        if not path.is_dir():
            return None if missing_is_new or path.exists() else {"numFiles": "0", "totalSize": "0"}
        files = 0
        size = 0
        visited = 0
        for dirpath, dirnames, filenames in os.walk(path):
            visited += len(dirnames) + len(filenames)
            if visited > self.quick_stats_max_files:
                self._quick_stats_skipped.happened(location, self.quick_stats_max_files)  # clients can repeat it
                return None
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
            for name in filenames:
                if name.startswith((".", "_")):
                    continue
                try:
                    size += os.path.getsize(os.path.join(dirpath, name))
                except OSError:
                    continue
                files += 1
        return {"numFiles": str(files), "totalSize": str(size)}


# Threads that create a write's directories beside its other work: a mkdir is the kernel's work (0.03-0.5 ms each
# on the machines measured), done without the interpreter's lock, so a hundred of them run on another core while
# the write's rows are built and sent.
_DIRECTORY_MAKERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mkdirs")


class DirectoryWork:
    """The directories one write creates and moves before its store call, undone (newest first) when the block
    it is used in fails, so a refused write leaves no directory behind nor one moved away:

        with warehouse.changes() as work:
            work.mkdirs(location)
            store.create_table(table)

    A write of many directories plans them (`plan_mkdirs`), starts them (`start_planned`) and has its store wait
    for them before it commits (`wait`).
    """

    def __init__(self, warehouse: Warehouse) -> None:
        self._warehouse = warehouse
        self._undo: list[Callable[[], object]] = []
        self._planned: list[str] = []
        self._making: Future[None] | None = None

    def mkdirs(self, location: str | None) -> bool:
        """Creates the directory; True if it did not exist before (and then removing it is the undo)."""
        return self._undoable(self._warehouse.mkdirs(location))

    def _undoable(self, created: list[str]) -> bool:
        """Remembers removing what a mkdirs created as an undo; whether it created anything."""
        if created:
            self._undo.append(lambda: self._warehouse.remove_created(created))
        return bool(created)

    def plan_mkdirs(self, location: str | None) -> None:
        """Plans creating the directory (and its missing parents): `start_planned` creates it, unless it exists
        by then. No system call here: a write of many partitions plans one directory each."""
        path = _local_text(location)
        if path is not None:
            self._planned.append(path)

    def start_planned(self) -> None:
        """Starts creating the planned directories on another thread."""
        planned, self._planned = self._planned, []
        if planned:
            self._making = _DIRECTORY_MAKERS.submit(self._make_all, planned)

    def _make_all(self, paths: list[str]) -> None:
        for path in paths:
            self._undoable(self._warehouse.make_dir(path))

    def wait(self) -> None:
        """Returns once the directories started are made; raises what stopped one."""
        if self._making is not None:
            self._making.result()

    def move(self, source: str | None, target: str | None) -> bool:
        """Warehouse.move, and moving it back is the undo."""
        moved = self._warehouse.move(source, target)
        if moved:
            self._undo.append(lambda: self._warehouse.move(target, source))
        return moved

    def __enter__(self) -> DirectoryWork:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if self._making is not None:
            self._making.exception()   # until all started are made (or failed): then they can be undone
        if exc_type is not None:
            for undo in reversed(self._undo):
                undo()
