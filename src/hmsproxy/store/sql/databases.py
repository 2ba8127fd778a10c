"""Catalogs and databases in DBS / DATABASE_PARAMS / CTLGS."""
from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, delete, insert, select, update

from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.store.domain import DroppedTable
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.descriptors import params_rows
from hmsproxy.store.sql.layout import DEFAULT_CATALOG, Layout
from hmsproxy.store.sql.lookups import (
    database_id,
    missing_database_message,
    no_such_object,
    principal_type_name,
    principal_type_value,
)


class DatabaseStore:
    db: Database
    layout: Layout
    _drop_table_in: Callable[[Connection, str, str, str], DroppedTable]   # TableStore
    _drop_function_in: Callable[[Connection, int, str], bool]             # FunctionStore

    def get_catalog(self, name: str) -> hms.Catalog:
        with self.db.transaction() as conn:
            if not self.layout.holds(s.CTLGS):
                return self._implied_catalog(conn, name)
            row = conn.execute(select(s.CTLGS).where(s.CTLGS.c.NAME == name)).first()
        if row is None:
            raise no_such_object(f"catalog {name} does not exist")
        return hms.Catalog(name=row.NAME, description=row.DESC, locationUri=row.LOCATION_URI,
                           createTime=row.CREATE_TIME)

    @staticmethod
    def _implied_catalog(conn: Connection, name: str) -> hms.Catalog:
        """Before Hive 3 the one catalog is implied; its location is the warehouse, as the default database's."""
        if name != DEFAULT_CATALOG:
            raise no_such_object(f"catalog {name} does not exist")
        location = conn.execute(select(s.DBS.c.DB_LOCATION_URI).where(s.DBS.c.NAME == "default")).scalar()
        return hms.Catalog(name=DEFAULT_CATALOG, description="Default catalog for Hive", locationUri=location)

    def get_catalog_names(self) -> list[str]:
        if not self.layout.holds(s.CTLGS):
            return [DEFAULT_CATALOG]
        with self.db.transaction() as conn:
            return sorted(conn.execute(select(s.CTLGS.c.NAME)).scalars())

    def create_database(self, database: hms.Database, journal: Journal | None = None) -> None:
        with self.db.transaction(write=True, journal=journal) as conn:
            exists = conn.execute(select(s.DBS.c.DB_ID).where(
                s.DBS.c.NAME == database.name, s.DBS.c.CTLG_NAME == database.catalogName)).first()
            if exists is not None:
                raise hms.AlreadyExistsException(message=f"Database {database.name} already exists")
            db_id = self.db.allocate_ids(conn, "MDatabase", 1)
            conn.execute(insert(s.DBS).values(self.layout.values(s.DBS, {
                "DB_ID": db_id, "NAME": database.name, "DESC": database.description,
                "DB_LOCATION_URI": database.locationUri, "OWNER_NAME": database.ownerName,
                "OWNER_TYPE": principal_type_name(database.ownerType), "CTLG_NAME": database.catalogName,
                "CREATE_TIME": database.createTime, "DB_MANAGED_LOCATION_URI": database.managedLocationUri,
            })))
            rows = params_rows("DB_ID", db_id, database.parameters)
            if rows:
                conn.execute(insert(s.DATABASE_PARAMS), rows)

    def get_database(self, cat: str, name: str) -> hms.Database:
        with self.db.transaction() as conn:
            row = conn.execute(select(s.DBS).where(s.DBS.c.NAME == name, s.DBS.c.CTLG_NAME == cat)).first()
            if row is None:
                raise no_such_object(missing_database_message(cat, name))
            params = dict(conn.execute(select(s.DATABASE_PARAMS.c.PARAM_KEY, s.DATABASE_PARAMS.c.PARAM_VALUE)
                                       .where(s.DATABASE_PARAMS.c.DB_ID == row.DB_ID)).all())
        return hms.Database(
            name=row.NAME, description=row.DESC, locationUri=row.DB_LOCATION_URI, parameters=params,
            ownerName=row.OWNER_NAME, ownerType=principal_type_value(row.OWNER_TYPE), catalogName=row.CTLG_NAME,
            createTime=row.CREATE_TIME, managedLocationUri=row.DB_MANAGED_LOCATION_URI,
        )

    def get_database_names(self, cat: str) -> list[str]:
        with self.db.transaction() as conn:
            return sorted(conn.execute(select(s.DBS.c.NAME).where(s.DBS.c.CTLG_NAME == cat)).scalars())

    def alter_database(self, cat: str, name: str, database: hms.Database, journal: Journal | None = None) -> None:
        """Replaces parameters and owner; HMS ignores changes to name, description and location."""
        with self.db.transaction(write=True, journal=journal) as conn:
            db_id = database_id(conn, cat, name)
            conn.execute(update(s.DBS).where(s.DBS.c.DB_ID == db_id).values(
                OWNER_NAME=database.ownerName, OWNER_TYPE=principal_type_name(database.ownerType)))
            conn.execute(delete(s.DATABASE_PARAMS).where(s.DATABASE_PARAMS.c.DB_ID == db_id))
            rows = params_rows("DB_ID", db_id, database.parameters)
            if rows:
                conn.execute(insert(s.DATABASE_PARAMS), rows)

    def drop_database(self, cat: str, name: str, cascade: bool, journal: Journal | None = None) -> list[DroppedTable]:
        """Drops the database; with cascade also its tables and functions. Returns the dropped tables.

        Without cascade a database that still holds tables or functions is refused
        (InvalidOperationException), as HMS does."""
        with self.db.transaction(write=True, journal=journal) as conn:
            db_id = database_id(conn, cat, name)
            table_names = list(conn.execute(select(s.TBLS.c.TBL_NAME).where(s.TBLS.c.DB_ID == db_id)).scalars())
            function_names = list(conn.execute(select(s.FUNCS.c.FUNC_NAME).where(s.FUNCS.c.DB_ID == db_id)).scalars())
            if (table_names or function_names) and not cascade:  # Hive's HMSHandler texts
                what = "tables" if table_names else "functions"
                raise hms.InvalidOperationException(message=f"Database {name} is not empty. One or more {what} exist.")
            dropped = [self._drop_table_in(conn, cat, name, t) for t in sorted(table_names)]
            for function_name in function_names:
                self._drop_function_in(conn, db_id, function_name)
            conn.execute(delete(s.DATABASE_PARAMS).where(s.DATABASE_PARAMS.c.DB_ID == db_id))
            conn.execute(delete(s.DBS).where(s.DBS.c.DB_ID == db_id))
        return dropped
