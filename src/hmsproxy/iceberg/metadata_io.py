"""Iceberg metadata files, read and written with pyiceberg's FileIO on local disk or the warehouse's object store.

A metadata file is written once under a unique name and never changed, so the decoded files are kept by location
(a bounded LRU) and never invalidated: the one mutable pointer, the HMS table's `metadata_location`, is read from
the metastore on every call."""
from __future__ import annotations

import threading

from cachetools import LRUCache
from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.io import (
    S3_ACCESS_KEY_ID,
    S3_CONNECT_TIMEOUT,
    S3_ENDPOINT,
    S3_FORCE_VIRTUAL_ADDRESSING,
    S3_REGION,
    S3_REQUEST_TIMEOUT,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    FileIO,
)
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata

from hmsproxy.storage.object_store import ObjectStoreSettings, endpoint_url


def file_io_properties(settings: ObjectStoreSettings) -> dict[str, str]:
    """pyiceberg's FileIO properties for the server's own S3 settings (fs.s3a.*); empty ones are left to botocore's
    chain, as the warehouse's client leaves them."""
    given = {
        S3_ENDPOINT: endpoint_url(settings),
        S3_REGION: settings.s3_region,
        S3_ACCESS_KEY_ID: settings.s3_access_key,
        S3_SECRET_ACCESS_KEY: settings.s3_secret_key,
        S3_SESSION_TOKEN: settings.s3_session_token,
        S3_CONNECT_TIMEOUT: f"{settings.connect_timeout_s:g}",
        S3_REQUEST_TIMEOUT: f"{settings.read_timeout_s:g}",
        S3_FORCE_VIRTUAL_ADDRESSING: "true" if settings.s3_path_style is False else "",
    }
    return {key: value for key, value in given.items() if value}


class MetadataFiles:
    """Reads, writes and deletes metadata files; keeps the decoded ones it read or wrote lately."""

    def __init__(self, io: FileIO, kept_files: int = 512) -> None:
        self.io = io
        self._kept: LRUCache[str, TableMetadata] = LRUCache(maxsize=kept_files)
        self._lock = threading.Lock()

    @classmethod
    def of(cls, settings: ObjectStoreSettings) -> MetadataFiles:
        return cls(FsspecFileIO(properties=file_io_properties(settings)))

    def read(self, location: str) -> TableMetadata:
        with self._lock:
            metadata = self._kept.get(location)
        if metadata is None:
            metadata = FromInputFile.table_metadata(self.io.new_input(location))
            with self._lock:
                self._kept[location] = metadata
        return metadata

    def write(self, metadata: TableMetadata, location: str) -> None:
        """Writes a new file; an existing file of that name is an error (names are unique: a clash is a bug)."""
        ToOutputFile.table_metadata(metadata, self.io.new_output(location), overwrite=False)
        with self._lock:
            self._kept[location] = metadata

    def delete(self, location: str) -> None:
        with self._lock:
            self._kept.pop(location, None)
        self.io.delete(location)


def next_metadata_location(metadata: TableMetadata, previous_location: str | None) -> str:
    """Where the next version of a table's metadata goes: `<location>/metadata/<version>-<uuid>.metadata.json`,
    the version one past the previous file's (Iceberg's naming, which every catalog and tool reads)."""
    version = MetastoreCatalog._parse_metadata_version(previous_location) + 1 if previous_location else 0
    provider = load_location_provider(metadata.location, metadata.properties)
    return provider.new_table_metadata_file_location(version)
