"""Thrift calls on catalogs and databases."""
from __future__ import annotations

import copy
from collections.abc import Callable

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.handler.common import Calls, checked_location, now, require_valid_name, split_catalog
from hmsproxy.hive.names import filter_by_pattern
from hmsproxy.idl import hms
from hmsproxy.store.domain import DroppedTable


class DatabaseCalls(Calls):
    _delete_table_data: Callable[[DroppedTable], None]   # TableCalls

    # ---- catalogs ----------------------------------------------------------------------------------

    def get_catalog(self, request: hms.GetCatalogRequest) -> hms.GetCatalogResponse:
        return hms.GetCatalogResponse(catalog=self.ctx.store.get_catalog((request.name or "").lower()))

    def get_catalogs(self) -> hms.GetCatalogsResponse:
        return hms.GetCatalogsResponse(names=self.ctx.store.get_catalog_names())

    # ---- databases ---------------------------------------------------------------------------------

    def create_database(self, database: hms.Database) -> None:
        if database is None:
            raise hms.InvalidObjectException(message="database must not be null")
        name = require_valid_name(database.name)
        catalog = (database.catalogName or "hive").lower()
        location = checked_location(database.locationUri, hms.InvalidObjectException) or \
            self.ctx.warehouse.default_database_location(name)
        stored = hms.Database(
            name=name, description=database.description, locationUri=location,
            parameters=dict(database.parameters or {}), ownerName=database.ownerName,
            ownerType=database.ownerType or hms.PrincipalType.USER,  # as Hive's ObjectStore.createDatabase
            catalogName=catalog, createTime=now(),
            managedLocationUri=checked_location(database.managedLocationUri, hms.InvalidObjectException),
        )
        with self.ctx.warehouse.changes() as work:
            work.mkdirs(location)
            self.ctx.store.create_database(stored, journal=Journal.of(messages.create_database(stored)))

    def get_database(self, name: str) -> hms.Database:
        catalog, db_name = split_catalog(name)
        return self.ctx.store.get_database(catalog, db_name)

    def get_database_req(self, request: hms.GetDatabaseRequest) -> hms.Database:
        catalog, db_name = split_catalog(request.name, request.catalogName)
        return self.ctx.store.get_database(catalog, db_name)

    def get_databases(self, pattern: str | None) -> list[str]:
        catalog = "hive"
        if pattern and pattern.startswith("@"):
            catalog, pattern = split_catalog(pattern)
        names = self.ctx.store.get_database_names(catalog)
        return filter_by_pattern(names, pattern)

    def get_all_databases(self) -> list[str]:
        return self.ctx.store.get_database_names("hive")

    def alter_database(self, dbname: str, db: hms.Database) -> None:
        catalog, db_name = split_catalog(dbname)
        if db is None:
            raise hms.MetaException(message="database must not be null")
        before = self.ctx.store.get_database(catalog, db_name)
        after = copy.copy(before)  # as Hive: only parameters change, and the owner when one is given
        after.parameters = dict(db.parameters or {})
        if (db.ownerName or "").strip():
            after.ownerName = db.ownerName
        if db.ownerType is not None:
            after.ownerType = db.ownerType
        self.ctx.store.alter_database(catalog, db_name, after,
                                      journal=Journal.of(messages.alter_database(before, after)))

    def drop_database(self, name: str, deleteData: bool, cascade: bool) -> None:
        catalog, db_name = split_catalog(name)
        self._drop_database(catalog, db_name, bool(deleteData), bool(cascade), ignore_unknown=False)

    def drop_database_req(self, request: hms.DropDatabaseRequest) -> None:
        catalog, db_name = split_catalog(request.name, request.catalogName)
        self._drop_database(catalog, db_name, bool(request.deleteData), bool(request.cascade),
                            ignore_unknown=bool(request.ignoreUnknownDb))

    def _drop_database(self, catalog: str, db_name: str, delete_data: bool, cascade: bool,
                       ignore_unknown: bool) -> None:
        if db_name == "default" and catalog == "hive":
            raise hms.MetaException(message="Can not drop default database")
        try:
            database = self.ctx.store.get_database(catalog, db_name)
        except hms.NoSuchObjectException:
            if ignore_unknown:
                return
            raise
        tables = self.ctx.store.get_table_objects(catalog, db_name, self.ctx.store.get_table_names(catalog, db_name))
        functions = self.ctx.store.get_functions(catalog, db_name)
        events = [messages.drop_table(t) for t in tables] + [messages.drop_function(f) for f in functions]
        dropped = self.ctx.store.drop_database(catalog, db_name, cascade,
                                               journal=Journal.of(*events, messages.drop_database(database)))
        if delete_data:
            for item in dropped:
                self._delete_table_data(item)
            self.ctx.warehouse.remove(database.locationUri)
