"""User-defined functions in FUNCS / FUNC_RU."""
from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Connection, delete, insert, select, update

from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.lookups import database_id, no_such_object, principal_type_name, principal_type_value


def _function_row(function: hms.Function) -> dict[str, object]:
    return {"FUNC_NAME": function.functionName, "CLASS_NAME": function.className,
            "OWNER_NAME": function.ownerName, "OWNER_TYPE": principal_type_name(function.ownerType),
            "CREATE_TIME": function.createTime or 0, "FUNC_TYPE": function.functionType or 1}


class FunctionStore:
    db: Database

    def create_function(self, function: hms.Function, journal: Journal | None = None) -> None:
        with self.db.transaction(write=True, journal=journal) as conn:
            db_id = database_id(conn, present(function.catName), present(function.dbName))
            if self._function_id(conn, db_id, present(function.functionName)) is not None:
                raise hms.AlreadyExistsException(message=f"Function {function.functionName} already exists")
            func_id = self.db.allocate_ids(conn, "MFunction", 1)
            conn.execute(insert(s.FUNCS).values(FUNC_ID=func_id, DB_ID=db_id, **_function_row(function)))
            self._write_resources(conn, func_id, function)

    @staticmethod
    def _write_resources(conn: Connection, func_id: int, function: hms.Function) -> None:
        rows = [{"FUNC_ID": func_id, "RESOURCE_TYPE": r.resourceType, "RESOURCE_URI": r.uri, "INTEGER_IDX": i}
                for i, r in enumerate(function.resourceUris or [])]
        if rows:
            conn.execute(insert(s.FUNC_RU), rows)

    @staticmethod
    def _function_id(conn: Connection, db_id: int, name: str) -> int | None:
        return conn.execute(select(s.FUNCS.c.FUNC_ID)
                            .where(s.FUNCS.c.DB_ID == db_id, s.FUNCS.c.FUNC_NAME == name)).scalar()

    def get_function(self, cat: str, db_name: str, name: str) -> hms.Function:
        found = self._load(cat, db_name, name)
        if not found:
            raise no_such_object(f"Function {db_name}.{name} does not exist")
        return found[0]

    def get_functions(self, cat: str, db_name: str | None = None) -> list[hms.Function]:
        """All functions of a database (or of the whole catalog when db_name is None), sorted by name."""
        return self._load(cat, db_name, None)

    def _load(self, cat: str, db_name: str | None, name: str | None) -> list[hms.Function]:
        with self.db.transaction() as conn:
            query = select(s.FUNCS, s.DBS.c.NAME.label("DB_NAME")).join(s.DBS, s.DBS.c.DB_ID == s.FUNCS.c.DB_ID) \
                .where(s.DBS.c.CTLG_NAME == cat)
            if db_name is not None:
                query = query.where(s.DBS.c.NAME == db_name)
            if name is not None:
                query = query.where(s.FUNCS.c.FUNC_NAME == name)
            rows = conn.execute(query).all()
            resources: dict[int, list[hms.ResourceUri]] = defaultdict(list)
            ids = [r.FUNC_ID for r in rows]
            if ids:
                for func_id, kind, uri in conn.execute(
                    select(s.FUNC_RU.c.FUNC_ID, s.FUNC_RU.c.RESOURCE_TYPE, s.FUNC_RU.c.RESOURCE_URI)
                    .where(s.FUNC_RU.c.FUNC_ID.in_(ids)).order_by(s.FUNC_RU.c.FUNC_ID, s.FUNC_RU.c.INTEGER_IDX)
                ):
                    resources[func_id].append(hms.ResourceUri(resourceType=kind, uri=uri))
        return [
            hms.Function(functionName=r.FUNC_NAME, dbName=r.DB_NAME, className=r.CLASS_NAME, ownerName=r.OWNER_NAME,
                         ownerType=principal_type_value(r.OWNER_TYPE), createTime=r.CREATE_TIME,
                         functionType=r.FUNC_TYPE, resourceUris=resources.get(r.FUNC_ID, []), catName=cat)
            for r in sorted(rows, key=lambda row: (row.DB_NAME, row.FUNC_NAME))
        ]

    def alter_function(self, cat: str, db_name: str, name: str, function: hms.Function,
                       journal: Journal | None = None) -> None:
        with self.db.transaction(write=True, journal=journal) as conn:
            db_id = database_id(conn, cat, db_name)
            func_id = self._function_id(conn, db_id, name)
            if func_id is None:
                raise hms.MetaException(message=f"function {name} doesn't exist")  # Hive's ObjectStore.alterFunction
            new_db_id = database_id(conn, cat, present(function.dbName))
            if (function.dbName, function.functionName) != (db_name, name) and \
                    self._function_id(conn, new_db_id, present(function.functionName)) is not None:
                raise hms.InvalidOperationException(
                    message=f"Function {function.dbName}.{function.functionName} already exists")
            conn.execute(update(s.FUNCS).where(s.FUNCS.c.FUNC_ID == func_id).values(
                DB_ID=new_db_id, **_function_row(function)))
            conn.execute(delete(s.FUNC_RU).where(s.FUNC_RU.c.FUNC_ID == func_id))
            self._write_resources(conn, func_id, function)

    def drop_function(self, cat: str, db_name: str, name: str, journal: Journal | None = None) -> None:
        with self.db.transaction(write=True, journal=journal) as conn:
            if not self._drop_function_in(conn, database_id(conn, cat, db_name), name):
                raise no_such_object(f"Function {db_name}.{name} does not exist")

    def _drop_function_in(self, conn: Connection, db_id: int, name: str) -> bool:
        func_id = self._function_id(conn, db_id, name)
        if func_id is None:
            return False
        conn.execute(delete(s.FUNC_RU).where(s.FUNC_RU.c.FUNC_ID == func_id))
        conn.execute(delete(s.FUNCS).where(s.FUNCS.c.FUNC_ID == func_id))
        return True
