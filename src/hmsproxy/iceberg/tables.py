"""Iceberg tables of the REST catalog: HMS tables whose `metadata_location` names the current metadata file.

Every change goes through the Handler, as a Thrift client's would: Hive's rules, the notification log that keeps
other instances current, the cache updated after the commit. A commit takes the HMS table lock (as HiveCatalog
writers do) and also compares-and-sets `metadata_location` (as Iceberg's newer Java writers do), so that writers
through either protocol, on any instance, never lose a commit."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TypeVar

from pydantic import TypeAdapter
from pydantic import ValidationError as ModelError
from pyiceberg.catalog import MetastoreCatalog, delete_data_files, delete_files
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.manifest import ManifestFile
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import AssertCreate, TableRequirement, TableUpdate, update_table_metadata

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.handler import Handler
from hmsproxy.hive.names import DEFAULT_CATALOG
from hmsproxy.iceberg.errors import (
    AlreadyExists,
    BadRequest,
    CommitFailed,
    CommitStateUnknown,
    NoSuchTable,
)
from hmsproxy.iceberg.hive_tables import METADATA_LOCATION, committed_hms_table, is_iceberg, new_hms_table
from hmsproxy.iceberg.metadata_io import MetadataFiles, next_metadata_location
from hmsproxy.iceberg.names import TableName
from hmsproxy.iceberg.namespaces import Namespaces
from hmsproxy.iceberg.paging import page
from hmsproxy.iceberg.table_lock import LOCK_USER, table_lock
from hmsproxy.idl import hms
from hmsproxy.store.domain import TableChange
from hmsproxy.store.reader import shallow_copy

log = logging.getLogger(__name__)

T = TypeVar("T")
REQUIREMENTS: TypeAdapter[list[TableRequirement]] = TypeAdapter(list[TableRequirement])
UPDATES: TypeAdapter[list[TableUpdate]] = TypeAdapter(list[TableUpdate])
CAS_REFUSED = "The table has been modified"   # the store's compare-and-set message starts so (Hive's text)


@dataclass(frozen=True)
class _Planned:
    """One table's part of a multi-table commit, checked and computed, not yet written."""
    name: TableName
    current: hms.Table
    base: TableMetadata
    previous: str
    metadata: TableMetadata
    location: str

    def change(self) -> TableChange:
        return TableChange(self.name.database, self.name.table,
                           committed_hms_table(self.current, self.base, self.metadata, self.location, self.previous),
                           (METADATA_LOCATION, self.previous))


@dataclass(frozen=True)
class Loaded:
    """A table as a load or a commit answers it; `metadata_location` is None for a staged create."""
    metadata: TableMetadata
    metadata_location: str | None


def parsed(adapter: TypeAdapter[T], value: object, field: str) -> T:
    try:
        return adapter.validate_python(value)
    except (ModelError, ValueError, TypeError) as wrong:
        raise BadRequest(f"{field}: {_first_error(wrong)}") from None


def _first_error(wrong: Exception) -> str:
    if isinstance(wrong, ModelError):
        first = wrong.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(wrong)


def _pointer(name: TableName, table: hms.Table) -> str:
    """The metadata file an Iceberg table's HMS table points at."""
    location = (table.parameters or {}).get(METADATA_LOCATION)
    if not location:
        raise NoSuchTable(f"Table {name} has no metadata_location")
    return location


class Tables:
    def __init__(self, handler: Handler, files: MetadataFiles, lock_wait_s: float) -> None:
        self.handler = handler
        self.files = files
        self.namespaces = Namespaces(handler)
        self.lock_wait_s = lock_wait_s

    # ---- reads ---------------------------------------------------------------------------------------

    def hms_table(self, name: TableName) -> hms.Table:
        """The HMS table of an Iceberg table; a table of another format is not one of this catalog's."""
        table = self._hms_table_or_none(name)
        if table is None:
            self.namespaces.database(name.database)
            raise NoSuchTable(f"Table does not exist: {name}")
        if not is_iceberg(table):
            raise NoSuchTable(f"Table {name} is not an Iceberg table")
        return table

    def _hms_table_or_none(self, name: TableName) -> hms.Table | None:
        try:
            return self.handler.get_table(name.database, name.table)
        except hms.NoSuchObjectException:
            return None

    def metadata_location(self, name: TableName) -> str:
        return _pointer(name, self.hms_table(name))

    def load(self, name: TableName) -> Loaded:
        location = self.metadata_location(name)
        return Loaded(self.files.read(location), location)

    def listed(self, database: str, token: str | None, size: int | None) -> tuple[list[str], str | None]:
        self.namespaces.database(database)
        names = self.handler.get_all_tables(database)
        iceberg = sorted(t.tableName for t in self.handler.get_table_objects_by_name(database, names)
                         if is_iceberg(t) and t.tableName)
        return page(iceberg, token, size)

    # ---- create, register ----------------------------------------------------------------------------

    def create(self, database: str, body: dict[str, object]) -> Loaded:
        """A new table's first metadata; with `stage-create` it is only answered (a commit with assert-create
        creates it later)."""
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest("name: expected a non-empty string")
        table = TableName(database, name.lower())
        db = self.namespaces.database(database)
        if self._hms_table_or_none(table) is not None:
            raise AlreadyExists(f"Table already exists: {table}")
        schema = parsed(TypeAdapter(Schema), body.get("schema"), "schema")
        spec = parsed(TypeAdapter(PartitionSpec), body.get("partition-spec") or UNPARTITIONED_PARTITION_SPEC,
                      "partition-spec")
        order = parsed(TypeAdapter(SortOrder), body.get("write-order") or UNSORTED_SORT_ORDER, "write-order")
        properties = parsed(TypeAdapter(dict[str, str]), body.get("properties") or {}, "properties")
        location = body.get("location")
        if location is not None and not isinstance(location, str):
            raise BadRequest("location: expected a string")
        location = (location or f"{(db.locationUri or '').rstrip('/')}/{table.table}").rstrip("/")
        try:
            metadata = new_table_metadata(schema, spec, order, location, properties)
        except (ValueError, IcebergValidationError, ModelError) as wrong:
            raise BadRequest(f"The table cannot be created: {_first_error(wrong)}") from None
        if body.get("stage-create") is True:
            return Loaded(metadata, None)
        metadata_location = next_metadata_location(metadata, None)
        self.files.write(metadata, metadata_location)
        self._create_hms_table(table, metadata, metadata_location)
        return Loaded(metadata, metadata_location)

    def _create_hms_table(self, table: TableName, metadata: TableMetadata, metadata_location: str) -> None:
        try:
            self.handler.create_table(new_hms_table(table.database, table.table, metadata, metadata_location,
                                                    LOCK_USER))
        except hms.AlreadyExistsException:
            self._forget_file(metadata_location)
            raise AlreadyExists(f"Table already exists: {table}") from None
        except hms.InvalidObjectException as refused:
            self._forget_file(metadata_location)
            raise BadRequest(f"Table {table} refused: {refused.message}") from None

    def register(self, database: str, body: dict[str, object]) -> Loaded:
        name, location = body.get("name"), body.get("metadata-location")
        if not isinstance(name, str) or not name:
            raise BadRequest("name: expected a non-empty string")
        if not isinstance(location, str) or not location:
            raise BadRequest("metadata-location: expected a non-empty string")
        table = TableName(database, name.lower())
        self.namespaces.database(database)
        try:
            metadata = self.files.read(location)
        except (OSError, ValueError, ModelError) as unreadable:
            raise BadRequest(f"metadata-location: {location} cannot be read as table metadata: "
                             f"{type(unreadable).__name__}") from None
        if body.get("overwrite") is True and self._hms_table_or_none(table) is not None:
            with table_lock(self.handler, table, self.lock_wait_s):
                current = self.hms_table(table)
                previous = (current.parameters or {}).get(METADATA_LOCATION, "")
                base = self.files.read(previous) if previous else metadata
                self._alter(table, current, base, metadata, previous, location, keep_file=True)
            return Loaded(metadata, location)
        try:
            self.handler.create_table(new_hms_table(table.database, table.table, metadata, location, LOCK_USER))
        except hms.AlreadyExistsException:
            raise AlreadyExists(f"Table already exists: {table}") from None
        return Loaded(metadata, location)

    # ---- commit --------------------------------------------------------------------------------------

    def commit(self, table: TableName, body: dict[str, object]) -> Loaded:
        requirements = parsed(REQUIREMENTS, body.get("requirements", []), "requirements")
        updates = parsed(UPDATES, body.get("updates", []), "updates")
        with table_lock(self.handler, table, self.lock_wait_s):
            current = self._hms_table_or_none(table)
            if current is None and not any(isinstance(r, AssertCreate) for r in requirements):
                self.namespaces.database(table.database)
                raise NoSuchTable(f"Table does not exist: {table}")
            if current is not None and not is_iceberg(current):
                raise NoSuchTable(f"Table {table} is not an Iceberg table")
            previous = (current.parameters or {}).get(METADATA_LOCATION) if current is not None else None
            base = self.files.read(previous) if previous else None
            metadata = self._updated(base, previous, requirements, updates)
            if base is not None and metadata == base:
                return Loaded(base, previous)
            location = next_metadata_location(metadata, previous)
            self.files.write(metadata, location)
            if current is None or base is None or previous is None:
                self.namespaces.database(table.database)
                self._create_hms_table(table, metadata, location)
            else:
                self._alter(table, current, base, metadata, previous, location)
            return Loaded(metadata, location)

    @staticmethod
    def _updated(base: TableMetadata | None, base_location: str | None,
                 requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate]) -> TableMetadata:
        try:
            for requirement in requirements:
                requirement.validate(base)
        except CommitFailedException as unmet:
            raise CommitFailed(str(unmet)) from None
        try:
            return update_table_metadata(base or MetastoreCatalog._empty_table_metadata(), tuple(updates),
                                         enforce_validation=base is None, metadata_location=base_location)
        except (ValueError, IcebergValidationError, ModelError, KeyError) as wrong:
            raise BadRequest(f"updates: {_first_error(wrong)}") from None

    def _alter(self, table: TableName, current: hms.Table, base: TableMetadata, metadata: TableMetadata,
               previous: str, location: str, keep_file: bool = False) -> None:
        """Points the HMS table at `location` if it still points at `previous` (compare-and-set)."""
        new_table = committed_hms_table(current, base, metadata, location, previous)
        env = hms.EnvironmentContext(properties={"expected_parameter_key": METADATA_LOCATION,
                                                 "expected_parameter_value": previous,
                                                 "DO_NOT_UPDATE_STATS": "true"})
        try:
            self.handler.alter_table_with_environment_context(table.database, table.table, new_table, env)
        except hms.MetaException as refused:
            if not (refused.message or "").startswith(CAS_REFUSED):
                self._settle(table, location, keep_file)
                return
            if not keep_file:
                self._forget_file(location)
            raise CommitFailed(f"Commit of {table} failed: another writer committed first") from None
        except hms.InvalidOperationException:   # dropped meanwhile
            if not keep_file:
                self._forget_file(location)
            raise NoSuchTable(f"Table does not exist: {table}") from None
        except Exception:
            self._settle(table, location, keep_file)

    def _settle(self, table: TableName, location: str, keep_file: bool) -> None:
        """After an alter failed unexpectedly, reads the table again to tell whether it took: returns if it did,
        raises CommitFailed if it did not, CommitStateUnknown if the metastore cannot tell."""
        log.warning("commit of %s: the metastore failed while committing; reading the table again", table,
                    exc_info=True)
        try:
            now_at = (self.handler.get_table(table.database, table.table).parameters or {}).get(METADATA_LOCATION)
        except Exception:
            raise CommitStateUnknown(f"Commit of {table}: the metastore failed and the outcome cannot be "
                                     "read") from None
        if now_at == location:
            return
        if not keep_file:
            self._forget_file(location)
        raise CommitFailed(f"Commit of {table} failed: the metastore refused it; nothing was changed")

    def _forget_file(self, location: str) -> None:
        try:
            self.files.delete(location)
        except OSError:
            log.warning("could not delete the unused metadata file %s", location, exc_info=True)

    def commit_all(self, changes: Sequence[tuple[TableName, dict[str, object]]]) -> None:
        """Commits to several tables at once, all or none: every table's lock is held (in name order), every
        table's requirements checked, every new metadata file written, then the HMS tables change in one database
        transaction with a compare-and-set each."""
        names = [name for name, _ in changes]
        if len(set(names)) != len(names):
            raise BadRequest("table-changes: a table appears more than once")
        with ExitStack() as locks:
            for name in sorted(names, key=str):
                locks.enter_context(table_lock(self.handler, name, self.lock_wait_s))
            planned = [self._planned(name, body) for name, body in changes]
            written = [p for p in planned if p.metadata != p.base]
            for plan in written:
                self.files.write(plan.metadata, plan.location)
            if not written:
                return
            table_changes = [p.change() for p in written]
            journal = Journal.of(*(messages.alter_table(p.current, c.new_table)
                                   for p, c in zip(written, table_changes)))
            try:
                self.handler.ctx.store.alter_tables(DEFAULT_CATALOG, table_changes, journal)
            except Exception as failed:
                self._settle_all(written, failed)

    def _planned(self, name: TableName, body: dict[str, object]) -> _Planned:
        requirements = parsed(REQUIREMENTS, body.get("requirements", []), f"{name}.requirements")
        updates = parsed(UPDATES, body.get("updates", []), f"{name}.updates")
        current = self.hms_table(name)
        previous = _pointer(name, current)
        base = self.files.read(previous)
        metadata = self._updated(base, previous, requirements, updates)
        return _Planned(name, current, base, previous, metadata, next_metadata_location(metadata, previous))

    def _settle_all(self, written: list[_Planned], failed: Exception) -> None:
        """After a multi-table alter failed: one table read again tells for all (one transaction)."""
        refused_by_cas = isinstance(failed, hms.MetaException) and (failed.message or "").startswith(CAS_REFUSED)
        if not refused_by_cas:
            first = written[0]
            try:
                now_at = (self.handler.get_table(first.name.database, first.name.table).parameters or {}).get(
                    METADATA_LOCATION)
            except Exception:
                raise CommitStateUnknown("The multi-table commit failed in the metastore and its outcome cannot be "
                                         "read") from None
            if now_at == first.location:
                return
            log.warning("a multi-table commit failed in the metastore; nothing was changed", exc_info=failed)
        for plan in written:
            self._forget_file(plan.location)
        raise CommitFailed("The multi-table commit failed: " + (
            "another writer committed to one of its tables first" if refused_by_cas else
            "the metastore refused it; nothing was changed"))

    # ---- drop, rename --------------------------------------------------------------------------------

    def drop(self, table: TableName, purge: bool) -> None:
        current = self.hms_table(table)
        location = (current.parameters or {}).get(METADATA_LOCATION)
        try:
            self.handler.drop_table(table.database, table.table, False)   # the files are Iceberg's, not Hive's
        except hms.NoSuchObjectException:
            raise NoSuchTable(f"Table does not exist: {table}") from None
        if purge and location:
            self._purge(table, location)

    def _purge(self, table: TableName, location: str) -> None:
        """Deletes the files of every snapshot and every metadata file, after the drop committed; a failure leaves
        files behind and is logged (the drop stands), as Iceberg's catalogs do."""
        try:
            metadata = self.files.read(location)
            io = self.files.io
            manifests: dict[str, ManifestFile] = {}
            for snapshot in metadata.snapshots:
                for manifest in snapshot.manifests(io):
                    manifests.setdefault(manifest.manifest_path, manifest)
            delete_data_files(io, list(manifests.values()))
            delete_files(io, set(manifests), "manifest")
            delete_files(io, {s.manifest_list for s in metadata.snapshots}, "manifest list")
            delete_files(io, {entry.metadata_file for entry in metadata.metadata_log} | {location}, "metadata")
        except Exception:
            log.warning("purge of the dropped table %s left files behind", table, exc_info=True)

    def rename(self, source: TableName, target: TableName) -> None:
        current = self.hms_table(source)
        self.namespaces.database(target.database)
        if self._hms_table_or_none(target) is not None:
            raise AlreadyExists(f"Table already exists: {target}")
        renamed = shallow_copy(current, dbName=target.database, tableName=target.table)
        try:
            self.handler.alter_table(source.database, source.table, renamed)
        except hms.InvalidOperationException as refused:
            message = refused.message or ""
            if "already exists" in message:
                raise AlreadyExists(f"Table already exists: {target}") from None
            if "doesn't exist" in message:
                raise NoSuchTable(f"Table does not exist: {source}") from None
            raise BadRequest(message) from None
