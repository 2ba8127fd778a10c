"""What a location names: a local directory, a prefix of an object store, or a place this server leaves alone.

Locations are stored as Hive writes them (Path.toString(): `file:/abs/path`, `s3a://bucket/key`); nothing is
percent-encoded, so an escaped partition name such as `ds=a%2Fb` is literally that name.
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from hmsproxy.ops.config import OBJECT_STORE_SCHEMES

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_ABSOLUTE_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")

# The object stores served, by the scheme a location is written with: the family names the client (object_store.py).
# s3a, s3 and s3n are one store (Hadoop's three names for S3), kept as the client wrote them.
OBJECT_STORE_FAMILIES = OBJECT_STORE_SCHEMES


@dataclass(frozen=True)
class ObjectPlace:
    """A location on an object store: `scheme://bucket/key`, its key without a leading or trailing '/'."""
    scheme: str
    bucket: str
    key: str

    @property
    def family(self) -> str:
        return OBJECT_STORE_FAMILIES[self.scheme]

    @property
    def prefix(self) -> str:
        """The prefix of the objects inside it: an object store has no directories, so `t1` must not take `t10`."""
        return self.key + "/" if self.key else ""

    def child(self, key: str) -> ObjectPlace:
        return ObjectPlace(self.scheme, self.bucket, key)

    def holds(self, other: ObjectPlace) -> bool:
        """`other` is this place or inside it (on the same store)."""
        return (self.family, self.bucket) == (other.family, other.bucket) and (
            other.key == self.key or other.key.startswith(self.prefix))

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}" if self.key else f"{self.scheme}://{self.bucket}"


def to_uri(path: Path) -> str:
    return "file:" + str(path)


def local_path(location: str | None) -> Path | None:
    """The local directory behind a location, or None when it is not on the local file system."""
    text = local_text(location)
    return None if text is None else Path(text)


def local_text(location: str | None) -> str | None:
    """`local_path` as text (what a write of many partitions needs, without a Path object for each)."""
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


def object_place(location: str | None) -> ObjectPlace | None:
    """The object-store place a location names, or None (a local path, or a scheme this server does not serve)."""
    if not location:
        return None
    scheme, separator, rest = location.partition("://")
    if not separator or scheme.lower() not in OBJECT_STORE_FAMILIES:
        return None
    bucket, _, key = rest.partition("/")
    if not bucket:
        return None
    return ObjectPlace(scheme.lower(), bucket, _clean_key(key))


def _clean_key(key: str) -> str:
    """`a//b/./c/` -> `a/b/c`; a key climbing above its bucket (`../x`) is refused."""
    cleaned = posixpath.normpath(key.strip("/")) if key.strip("/") else "."
    if cleaned == ".." or cleaned.startswith("../"):
        raise ValueError(f"key {key!r} climbs above its bucket")
    return "" if cleaned == "." else cleaned


def normalise_location(location: str | None) -> str | None:
    """`/x/y/`, `file:///x/y` and `file:/x/y` all become `file:/x/y`, as Hive's Path does; an object-store location
    loses its trailing '/', '//' and '..' segments (what is deleted or moved is then what the location says).
    Raises ValueError for a relative location: a client names absolute paths or URIs only."""
    path = local_text(location)
    if path is None:
        if location and not _ABSOLUTE_URI.match(location):
            raise ValueError(f"location {location!r} is not absolute: give an absolute path or URI")
        try:
            place = object_place(location)
        except ValueError as exc:
            raise ValueError(f"location {location!r}: {exc}") from None
        if location and place is not None:
            return f"{location.partition('://')[0]}://{place.bucket}/{place.key}".rstrip("/")
        return location.rstrip("/") if location else location
    if not path.startswith("/"):
        raise ValueError(f"location {location!r} is not absolute: give an absolute path or URI")
    return "file:" + os.path.normpath(path)


def join(location: str, *parts: str) -> str:
    return location.rstrip("/") + "".join("/" + p for p in parts)
