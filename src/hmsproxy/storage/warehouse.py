"""Directories of databases, tables and partitions: default locations and the file-system work HMS does.

Local locations (`file:/abs/path`) are worked on here; those on an object store the server touches
(`--object-stores`, by default the warehouse's own) by object_files.py; any other (hdfs://, or an object store not
served) is stored as given and left alone, because this server has no client for it.

What a client may name, and what the server may delete or move:
- a location is an absolute path or an absolute URI (`file:/x`, `file:///x`, `s3a://b/x`, `hdfs://nn/x`); relative
  ones (`.`, `..`, `dir`, `file:.`, `file:rel`) are refused, and `..` segments are resolved before anything else;
- nothing that holds the warehouse root, the server's working directory or its database file (the file
  system root, a bucket's root included) is deleted, emptied or moved, whatever object claims it as its location;
  nor is anything inside the working directory or beside the database file, unless it is inside the warehouse.
"""
from __future__ import annotations

import itertools
import logging
import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from hmsproxy.ops.burst_log import BurstLog
from hmsproxy.storage.locations import ObjectPlace, join, local_path, local_text, object_place, to_uri
from hmsproxy.storage.object_files import ObjectFiles
from hmsproxy.storage.object_store import ObjectStores, ObjectStoreSettings

log = logging.getLogger(__name__)


def _inside(path: str, directory: str) -> bool:
    """path is directory itself or below it (both normalised absolute paths)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


class Warehouse:
    """Computes default locations under the warehouse root and does the directory work."""

    def __init__(self, root: Path | str, keep: tuple[Path, ...] = (), quick_stats_max_files: int = 100_000,
                 stores: ObjectStores | None = None) -> None:
        """`root`: a local directory, or an object-store location (`s3a://bucket/warehouse`).
        `keep`: what the server runs from (its working directory, its database file).
        `quick_stats_max_files`: the most directory entries (objects) one quick-stats listing visits.
        `stores`: the object stores touched (none by default; the warehouse's own when it is on one)."""
        root_place = object_place(root) if isinstance(root, str) else None
        self.local_root = None if root_place is not None else Path(root)
        self.location = str(root_place) if root_place is not None else to_uri(Path(root))
        if stores is None:
            stores = ObjectStores(frozenset({root_place.family}) if root_place else frozenset(),
                                  ObjectStoreSettings(), None)
        self.objects = ObjectFiles(stores, (root_place,) if root_place else (), quick_stats_max_files)
        self.quick_stats_max_files = quick_stats_max_files
        self._quick_stats_skipped = BurstLog("quick stats of %s skipped: more than %d entries", 60.0, log)
        self._root = None if self.local_root is None else os.path.normpath(self.local_root.absolute())
        self._kept = (*(() if self._root is None else (self._root,)), *(os.path.normpath(p.absolute()) for p in keep))
        self._kept_trees = tuple(os.path.normpath((p if p.is_dir() else p.parent).absolute()) for p in keep)

    def is_remote(self, location: str | None) -> bool:
        """Whether work on the location is a request to an object store away (not a local system call)."""
        return self._served(location) is not None

    def _served(self, location: str | None) -> ObjectPlace | None:
        """The object-store place of a location the server touches, or None."""
        place = object_place(location)
        return place if place is not None and self.objects.served(place) else None

    def _refusal(self, path: Path) -> str | None:
        """Why `path` may not be deleted, emptied or moved (see the module docstring), or None."""
        candidate = os.path.normpath(path.absolute())
        for kept in self._kept:
            if _inside(kept, candidate):
                return f"it holds {kept}"
        if self._root is not None and _inside(candidate, self._root):
            return None
        for tree in self._kept_trees:
            if _inside(candidate, tree):
                return f"it is inside {tree}, which the server runs from"
        return None

    def default_database_location(self, db_name: str) -> str:
        return self.location if db_name == "default" else join(self.location, f"{db_name}.db")

    def prepare_root(self) -> None:
        """Makes a local root exist; an object store's needs nothing (a prefix exists once written under)."""
        if self.local_root is not None:
            self.local_root.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def default_table_location(db_location: str, table_name: str) -> str:
        return join(db_location, table_name)

    @staticmethod
    def mkdirs(location: str | None) -> list[str]:
        """Creates the directory and its missing parents; returns those it created, innermost first (what a failed
        call removes), none when the directory existed."""
        path = local_text(location)
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
        """Deletes an object's directory; never one that holds something kept (then it logs and keeps it). It runs
        once a drop committed: a failure is logged, as HMS logs a directory it could not delete, not raised."""
        place = self._served(location)
        if place is not None:
            try:
                self.objects.remove(place)
            except OSError as exc:
                log.warning("could not delete %s: %s", location, exc)
            return
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
        place = self._served(location)
        if place is not None:
            self.objects.remove(place, keep_marker=True)
            return
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
        to move a directory that holds something kept (FileExistsError / PermissionError). Local only: DirectoryWork
        moves an object store's prefix (copies now, deletes the sources once the call committed)."""
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
        HMS lists it; unless `missing_is_new`: the caller makes it next, and a new directory gets no stats.
        On an object store: the objects under its prefix, a page of a thousand to a request."""
        place = self._served(location)
        if place is not None:
            return self.objects.quick_stats(place, missing_is_new=missing_is_new)
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
        self._after: list[Callable[[], object]] = []   # once the write committed
        self._planned: list[str] = []
        self._making: Future[None] | None = None

    def mkdirs(self, location: str | None) -> bool:
        """Creates the directory; True if it did not exist before (and then removing it is the undo). On an object
        store nothing is written: True when no object is under the location yet."""
        place = self._warehouse._served(location)
        if place is not None:
            return self._warehouse.objects.is_empty(place)
        return self._undoable(self._warehouse.mkdirs(location))

    def _undoable(self, created: list[str]) -> bool:
        """Remembers removing what a mkdirs created as an undo; whether it created anything."""
        if created:
            self._undo.append(lambda: self._warehouse.remove_created(created))
        return bool(created)

    def plan_mkdirs(self, location: str | None) -> None:
        """Plans creating the directory (and its missing parents): `start_planned` creates it, unless it exists
        by then. No system call here: a write of many partitions plans one directory each."""
        path = local_text(location)
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
        """Warehouse.move, and moving it back is the undo. On an object store: the objects are copied now, the
        copies deleted as the undo, the sources once the write committed."""
        source_place, target_place = self._warehouse._served(source), self._warehouse._served(target)
        if source_place is not None and target_place is not None:
            return self._copied(source_place, target_place)
        moved = self._warehouse.move(source, target)
        if moved:
            self._undo.append(lambda: self._warehouse.move(target, source))
        return moved

    def _copied(self, source: ObjectPlace, target: ObjectPlace) -> bool:
        if source == target:
            return False
        objects = self._warehouse.objects
        copies = objects.copy(source, target)
        if not copies:
            return False
        sources = [source.prefix + key[len(target.prefix):] for key in copies]
        self._undo.append(lambda: objects.delete_keys(target, copies))
        self._after.append(lambda: objects.delete_keys(source, sources))
        return True

    def __enter__(self) -> DirectoryWork:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if self._making is not None:
            self._making.exception()   # until all started are made (or failed): then they can be undone
        if exc_type is not None:
            for undo in reversed(self._undo):
                undo()
        else:
            for step in self._after:
                step()
