"""The objects a Thrift call's arguments name, found by their shape rather than by a per-method list that could
miss a method: a database and a table name given side by side (`db_name, tbl_name`; `dbname, name`; an
exchange's source and destination) or a struct anywhere in the arguments that carries both (a Table, a
Partition, a request, a statistics descriptor). The cache in front of an upstream reads them again after a
write (upstream/effects.py); the audit log names them (audit.py).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from hmsproxy.hive.names import DEFAULT_CATALOG

DB_FIELDS = ("dbName", "dbname", "db_name")
TABLE_FIELDS = ("tableName", "tblName", "tbl_name", "tablename")
# Argument pairs (database, table) of the calls that name a table by two strings.
NAME_PAIRS = (("dbname", "tbl_name"), ("db_name", "tbl_name"), ("dbName", "tableName"), ("dbname", "name"),
              ("source_db", "source_table_name"), ("dest_db", "dest_table_name"))
NESTING = 4        # how deep into the arguments' structs tables are looked for (a request's statistics' descriptor)
TableName = tuple[str, str, str]   # catalog, database, table; lower-cased


def lowered(value: object) -> str | None:
    return value.lower() if isinstance(value, str) and value else None


def _first_name(struct: object, fields: Sequence[str]) -> str | None:
    """The first of the struct's fields that holds a name, lower-cased."""
    return next(filter(None, (lowered(getattr(struct, f, None)) for f in fields)), None)


def catalog_and_db(db_name: str, struct: object = None) -> tuple[str, str]:
    """Hive 3+ clients may write `@cat#db` in a database name, or carry the catalog in the struct."""
    if db_name.startswith("@") and "#" in db_name:
        cat, _, db = db_name[1:].partition("#")
        return cat.lower() or DEFAULT_CATALOG, db.lower()
    return (lowered(getattr(struct, "catName", None)) or DEFAULT_CATALOG), db_name.lower()


def tables_named(arguments: Mapping[str, object]) -> Iterator[TableName]:
    for db_arg, table_arg in NAME_PAIRS:
        db, table = lowered(arguments.get(db_arg)), lowered(arguments.get(table_arg))
        if db and table:
            yield (*catalog_and_db(db), table)
    for value in arguments.values():
        yield from _tables_in(value, NESTING)


def _tables_in(value: object, depth: int) -> Iterator[TableName]:
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
        yield (*catalog_and_db(db, value), table)
    for field in spec.values():
        child = getattr(value, field[1], None)
        if child is not None and not isinstance(child, (str, bytes, int, float, bool, dict)):
            yield from _tables_in(child, depth - 1)


DB_ARGUMENTS = ("dbname", "db_name", "dbName", "databaseName")


def database_named(api: str, arguments: Mapping[str, object]) -> tuple[str, str] | None:
    """The (catalog, database) a call that names no table (tables_named) names: a database argument's; a database
    call (get_database, drop_database, ...) names it by `name` or by the Database or request it carries."""
    for name in DB_ARGUMENTS:
        db = lowered(arguments.get(name))
        if db:
            return catalog_and_db(db)
    if "database" not in api or api in ("get_databases", "get_all_databases"):   # those take a pattern
        return None
    for value in arguments.values():
        db = lowered(value) or lowered(getattr(value, "name", None)) or _first_name(value, DB_FIELDS)
        if db:
            return (lowered(getattr(value, "catalogName", None)) or DEFAULT_CATALOG), db
    return None
