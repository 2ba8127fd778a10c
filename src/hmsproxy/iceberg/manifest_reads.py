"""Reading manifests for a cold plan: their bytes from storage, many at once and one request each, and their
entries decoded by pyiceberg.

A cold plan reads every manifest the cache lacks. pyiceberg's own read of a file through fsspec asks an object
store for the object's size first (a HEAD) and then for its bytes (a GET): two round trips of tens of
milliseconds each. Here a manifest is one GET, `READERS` of them in flight while the planning thread decodes the
ones already read, so that a cold plan costs about the decoding alone once the store answers fast enough.
"""
from __future__ import annotations

import io as stdio
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import urlparse

from pyiceberg.avro.decoder import new_decoder
from pyiceberg.avro.file import AvroFile
from pyiceberg.avro.reader import Reader
from pyiceberg.avro.resolver import resolve_reader
from pyiceberg.io import FileIO, InputFile, InputStream
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    _inherit_from_manifest,
)
from pyiceberg.schema import Schema
from s3fs import S3FileSystem

READERS = 16   # manifests requested at once (pyiceberg's client-side planner reads from a pool of threads too)


def file_reader(io: FileIO, scheme: str) -> Callable[[str], bytes]:
    """A function reading whole files of one scheme's store: one GET through fsspec (the filesystem resolved here,
    once for all the reads), the FileIO's own read for any other FileIO."""
    if not isinstance(io, FsspecFileIO):
        def read_stream(path: str) -> bytes:
            with io.new_input(path).open(seekable=False) as stream:
                return stream.read()
        return read_stream
    fs = io.get_fs(scheme or "file")
    # s3fs asks for an object's size first (a HEAD) to split a large read into concurrent ranges; a manifest is
    # small enough for one GET.
    options = {"max_concurrency": 1} if isinstance(fs, S3FileSystem) else {}

    def read_file(path: str) -> bytes:
        content: bytes = fs.cat_file(path, **options)
        return content
    return read_file


def read_ahead(io: FileIO, locations: Sequence[str], readers: int = READERS) -> Iterator[bytes]:
    """The files' contents in order, at most `readers` requested ahead of the one the caller is at."""
    readers_by_scheme = {scheme: file_reader(io, scheme) for scheme in {urlparse(path).scheme for path in locations}}

    def read(location: str) -> bytes:
        return readers_by_scheme[urlparse(location).scheme](location)
    if len(locations) < 2:
        yield from map(read, locations)
        return
    with ThreadPoolExecutor(min(readers, len(locations)), thread_name_prefix="manifest-reader") as pool:
        pending: deque[Future[bytes]] = deque()
        upcoming = iter(locations)
        for location in upcoming:
            pending.append(pool.submit(read, location))
            if len(pending) == readers:
                break
        while pending:
            content = pending.popleft().result()
            following = next(upcoming, None)
            if following is not None:
                pending.append(pool.submit(read, following))
            yield content


class ReadInput(InputFile):
    """A file whose bytes were read already (read_ahead), for live_entries."""

    def __init__(self, location: str, content: bytes) -> None:
        super().__init__(location)
        self._content = content

    def __len__(self) -> int:
        return len(self._content)

    def exists(self) -> bool:
        return True

    def open(self, seekable: bool = True) -> InputStream:
        return stdio.BytesIO(self._content)


def live_entries(file: InputFile, manifest: ManifestFile) -> list[ManifestEntry]:
    """pyiceberg's `manifest.fetch_manifest_entry(io, discard_deleted=True)`, read from the manifest's `file`
    through _ManifestAvroFile."""
    with _ManifestAvroFile(file, MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
                           read_types={-1: ManifestEntry, 2: DataFile},
                           read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent}) as reader:
        return [_inherit_from_manifest(entry, manifest) for entry in reader
                if entry.status != ManifestEntryStatus.DELETED]


MAX_SCHEMAS = 64   # writers of other versions and engines; a manifest of yet another schema is derived anew
_DERIVED: dict[str, tuple[Schema, Reader]] = {}   # by the Avro schema's text, for _ManifestAvroFile
_DERIVED_LOCK = threading.Lock()


class _ManifestAvroFile(AvroFile[ManifestEntry]):
    """pyiceberg's Avro file reader, keeping the Iceberg schema and the reader tree it derives from a file's Avro
    schema by that schema's text. A table's manifests share their writer's schema, and deriving both took about half
    the time of decoding a manifest of 20 files (pyiceberg derives them again for every file)."""

    def __enter__(self) -> _ManifestAvroFile:
        with self.input_file.open() as stream:
            self.decoder = new_decoder(stream.read())
        self.header = self._read_header()
        text = self.header.meta.get("avro.schema", "")
        with _DERIVED_LOCK:
            derived = _DERIVED.get(text)
        if derived is None:
            schema = self.header.get_schema()
            derived = schema, resolve_reader(schema, self.read_schema or schema, self.read_types, self.read_enums)
            with _DERIVED_LOCK:
                if len(_DERIVED) < MAX_SCHEMAS:
                    _DERIVED[text] = derived
        self.schema, self.reader = derived
        self.read_schema = self.read_schema or self.schema
        return self
