"""What a call forwarded to the upstream HMS may have changed in the cache, read from the call's own arguments.

The upstream decides what a write does, so the cache is not patched with the request: it is told which of its
objects to read again once the upstream has acknowledged the write. Tables are found wherever the arguments name
one: a database and a table name given side by side (`db_name, tbl_name`; `dbname, name`; an exchange's source and
destination) or a struct anywhere in the arguments that carries both (a Table, a Partition, a request, a statistics
descriptor). Naming more than the call changed costs a reload; naming less would leave a stale entry, which is why
the search is by shape and not by a per-method list that could miss a method.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hmsproxy.names import DEFAULT_CATALOG
from hmsproxy.store.cache.shared_cache import TableKey

DB_FIELDS = ("dbName", "dbname", "db_name")
TABLE_FIELDS = ("tableName", "tblName", "tbl_name", "tablename")
# Argument pairs (database, table) of the calls that name a table by two strings.
NAME_PAIRS = (("dbname", "tbl_name"), ("db_name", "tbl_name"), ("dbName", "tableName"), ("dbname", "name"),
              ("source_db", "source_table_name"), ("dest_db", "dest_table_name"))
# Calls that create, drop, rename or replace a table: its place in the name index (listings) may change.
TABLE_DDL_PREFIXES = ("create_table", "drop_table", "alter_table", "truncate_table")
NESTING = 4        # how deep into the arguments' structs tables are looked for (a request's statistics' descriptor)
LOCK_CALLS = frozenset({"lock", "check_lock"})


@dataclass(frozen=True)
class CacheEffects:
    """What to read again after the write: databases and functions at once, tables as `settle` (listing may change)
    or as `changed` (only the entry)."""

    databases: frozenset[tuple[str, str]] = frozenset()
    functions: frozenset[tuple[str, str, str]] = frozenset()
    settle: frozenset[TableKey] = frozenset()
    changed: frozenset[TableKey] = frozenset()


def cache_effects(api: str, arguments: Mapping[str, Any]) -> CacheEffects:
    """The cached objects call `api` with `arguments` (by the IDL's argument names) may have changed upstream."""
    if api in LOCK_CALLS:
        return CacheEffects()   # a lock changes no metadata; its grant is handled as a synchronisation point
    tables = frozenset(_tables_named(arguments))
    ddl = api.startswith(TABLE_DDL_PREFIXES)
    return CacheEffects(databases=frozenset(_databases(api, arguments)),
                        functions=frozenset(_functions(api, arguments)),
                        settle=tables if ddl else frozenset(), changed=frozenset() if ddl else tables)


def _lowered(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) and value else None


def _first_name(struct: Any, fields: Sequence[str]) -> str | None:
    """The first of the struct's fields that holds a name, lower-cased."""
    return next(filter(None, (_lowered(getattr(struct, f, None)) for f in fields)), None)


def _catalog_and_db(db_name: str, struct: Any = None) -> tuple[str, str]:
    """Hive 3+ clients may write `@cat#db` in a database name, or carry the catalog in the struct."""
    if db_name.startswith("@") and "#" in db_name:
        cat, _, db = db_name[1:].partition("#")
        return cat.lower() or DEFAULT_CATALOG, db.lower()
    return (_lowered(getattr(struct, "catName", None)) or DEFAULT_CATALOG), db_name.lower()


def _tables_named(arguments: Mapping[str, Any]) -> Iterator[TableKey]:
    for db_arg, table_arg in NAME_PAIRS:
        db, table = _lowered(arguments.get(db_arg)), _lowered(arguments.get(table_arg))
        if db and table:
            yield (*_catalog_and_db(db), table)
    for value in arguments.values():
        yield from _tables_in(value, NESTING)


def _tables_in(value: Any, depth: int) -> Iterator[TableKey]:
    if depth == 0:
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _tables_in(item, depth)
        return
    spec = getattr(value, "thrift_spec", None)
    if spec is None:
        return
    db, table = _first_name(value, DB_FIELDS), _first_name(value, TABLE_FIELDS)
    if db and table:
        yield (*_catalog_and_db(db, value), table)
    for field in spec.values():
        child = getattr(value, field[1], None)
        if child is not None and not isinstance(child, (str, bytes, int, float, bool, dict)):
            yield from _tables_in(child, depth - 1)


def _databases(api: str, arguments: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if api == "create_database":
        database = arguments.get("database")
        if database is not None and _lowered(database.name):
            yield (_lowered(database.catalogName) or DEFAULT_CATALOG, database.name.lower())
    elif api in ("alter_database", "drop_database"):
        name = _lowered(arguments.get("dbname" if api == "alter_database" else "name"))
        if name:
            yield _catalog_and_db(name)
    elif api == "drop_database_req":
        request = arguments.get("req")
        if request is not None and _lowered(request.name):
            yield (_lowered(request.catalogName) or DEFAULT_CATALOG, request.name.lower())


def _functions(api: str, arguments: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    if api == "create_function":
        function = arguments.get("func")
        if function is not None and _lowered(function.dbName) and _lowered(function.functionName):
            yield (_lowered(function.catName) or DEFAULT_CATALOG, function.dbName.lower(),
                   function.functionName.lower())
    elif api in ("alter_function", "drop_function"):
        db, name = _lowered(arguments.get("dbName")), _lowered(arguments.get("funcName"))
        if db and name:
            yield (*_catalog_and_db(db), name)
        renamed = arguments.get("newFunc")
        if renamed is not None and _lowered(renamed.dbName) and _lowered(renamed.functionName):
            yield (_lowered(renamed.catName) or DEFAULT_CATALOG, renamed.dbName.lower(), renamed.functionName.lower())
