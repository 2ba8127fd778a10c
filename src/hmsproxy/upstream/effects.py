"""What a call forwarded to the upstream HMS may have changed in the cache, read from the call's own arguments.

The upstream decides what a write does, so the cache is not patched with the request: it is told which of its
objects to read again once the upstream has acknowledged the write: the tables the arguments name wherever they
name one (call_names.py), and the databases and functions of the calls that write those. Naming more than the
call changed costs a reload; naming less would leave a stale entry, which is why tables are found by shape and
not by a per-method list that could miss a method.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hmsproxy.hive.names import DEFAULT_CATALOG
from hmsproxy.ops.call_names import catalog_and_db, lowered, tables_named
from hmsproxy.store.cache.shared_cache import TableKey

# Calls that create, drop, rename or replace a table: its place in the name index (listings) may change.
TABLE_DDL_PREFIXES = ("create_table", "drop_table", "alter_table", "truncate_table")
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
    tables = frozenset(tables_named(arguments))
    ddl = api.startswith(TABLE_DDL_PREFIXES)
    return CacheEffects(databases=frozenset(_databases(api, arguments)),
                        functions=frozenset(_functions(api, arguments)),
                        settle=tables if ddl else frozenset(), changed=frozenset() if ddl else tables)


def _databases(api: str, arguments: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if api == "create_database":
        database = arguments.get("database")
        if database is not None and lowered(database.name):
            yield (lowered(database.catalogName) or DEFAULT_CATALOG, database.name.lower())
    elif api in ("alter_database", "drop_database"):
        name = lowered(arguments.get("dbname" if api == "alter_database" else "name"))
        if name:
            yield catalog_and_db(name)
    elif api == "drop_database_req":
        request = arguments.get("req")
        if request is not None and lowered(request.name):
            yield (lowered(request.catalogName) or DEFAULT_CATALOG, request.name.lower())


def _functions(api: str, arguments: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    if api == "create_function":
        function = arguments.get("func")
        if function is not None and lowered(function.dbName) and lowered(function.functionName):
            yield (lowered(function.catName) or DEFAULT_CATALOG, function.dbName.lower(),
                   function.functionName.lower())
    elif api in ("alter_function", "drop_function"):
        db, name = lowered(arguments.get("dbName")), lowered(arguments.get("funcName"))
        if db and name:
            yield (*catalog_and_db(db), name)
        renamed = arguments.get("newFunc")
        if renamed is not None and lowered(renamed.dbName) and lowered(renamed.functionName):
            yield (lowered(renamed.catName) or DEFAULT_CATALOG, renamed.dbName.lower(), renamed.functionName.lower())
