"""What every group of Thrift calls shares: the store, the warehouse, name parsing and HMS's errors."""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Self, TypeVar

from hmsproxy.hive.names import DEFAULT_CATALOG, is_valid_identifier
from hmsproxy.idl import hms
from hmsproxy.storage.locations import normalise_location
from hmsproxy.storage.warehouse import Warehouse
from hmsproxy.store.rawstore import RawStore
from hmsproxy.store.reader import INTERNAL, Reader, shallow_copy

R = TypeVar("R")
DDL_TIME = "transient_lastDdlTime"
ErrorType = Callable[..., Exception]   # one of the IDL's exceptions, raised as error(message=...)


@dataclass
class HandlerContext:
    store: RawStore  # SqlStore, or the cache wrapping one
    warehouse: Warehouse
    server_conf: dict[str, str]
    started_at: int
    partition_request_limit: int = -1   # metastore.limit.partition.request; -1: unlimited
    reader: Reader = INTERNAL           # the call being answered, and the snapshot it reads at

    def serving(self, reader: Reader) -> HandlerContext:
        return shallow_copy(self, store=self.store.serving(reader), reader=reader)


class Calls:
    """The base of every group of calls: their context, and the same calls answering one call of a client."""

    def __init__(self, ctx: HandlerContext) -> None:
        self.ctx = ctx

    def serving(self, reader: Reader) -> Self:
        return type(self)(self.ctx.serving(reader))


def now() -> int:
    return int(time.time())


def checked_location(location: str | None, error: ErrorType) -> str | None:
    """A client's location, normalised; a relative one is refused with `error`, the call's declared type."""
    try:
        return normalise_location(location)
    except ValueError as exc:
        raise error(message=str(exc)) from None


def split_catalog(name: str | None, default_catalog: str | None = None) -> tuple[str, str]:
    """Hive 3+ clients send `@cat#db` in the old-style calls; plain names belong to the default catalog.

    Returns (catalog, lower-cased database name)."""
    catalog = (default_catalog or DEFAULT_CATALOG).lower()
    if name is None:
        raise hms.MetaException(message="database name must not be null")
    if name.startswith("@"):
        cat, sep, db = name[1:].partition("#")
        if not sep:
            raise hms.MetaException(message=f"invalid catalog-qualified database name {name!r}")
        return cat.lower(), db.lower()
    return catalog, name.lower()


def lower(name: str | None, what: str) -> str:
    if name is None or name == "":
        raise hms.MetaException(message=f"{what} name must not be empty")
    return name.lower()


def table_name(dbname: str | None, tbl_name: str | None, catalog: str | None = None) -> tuple[str, str, str]:
    """(catalog, database, table) of the table a call names; MetaException where its names name none."""
    cat, db_name = split_catalog(dbname, catalog)
    return cat, db_name, lower(tbl_name, "table")


def ready_table_name(dbname: object, tbl_name: object) -> tuple[str, str, str] | None:
    """table_name for the ready tier, which reads arguments nothing has checked yet; None where the ordinary way
    must decide: a name that is not a string, names table_name refuses, or a catalog-qualified database."""
    if not isinstance(dbname, str) or not isinstance(tbl_name, str) or dbname.startswith("@"):
        return None
    try:
        return table_name(dbname, tbl_name)
    except hms.MetaException:
        return None


def require_valid_name(name: str | None, error: ErrorType = hms.InvalidObjectException) -> str:
    if name is None or not is_valid_identifier(name):
        raise error(message=f"{name} is not a valid object name")
    return name.lower()


def env_properties(env: hms.EnvironmentContext | None) -> dict[str, str]:
    return dict(env.properties or {}) if env is not None and getattr(env, "properties", None) else {}


def check_partition_values(table: hms.Table, values: Sequence[str] | None) -> list[str]:
    """The values must match the table's partition keys one to one. An empty value is kept as given (Hive
    stores it so); only the partition's name and directory say __HIVE_DEFAULT_PARTITION__ for it."""
    keys = [k.name for k in table.partitionKeys or []]
    values = list(values or [])
    if not keys:
        raise hms.MetaException(message=f"table {table.dbName}.{table.tableName} is not partitioned")
    if len(values) != len(keys):
        raise hms.MetaException(
            message=f"Invalid partition key & values; keys {keys}, values {values} of {table.dbName}.{table.tableName}")
    return ["" if v is None else v for v in values]


def with_snapshot(method: Callable[..., R]) -> Callable[..., R]:
    """For request-style reads: the request's validWriteIdList and table id hold for the whole call."""
    @functools.wraps(method)
    def call(self: Calls, request: object, *args: object) -> R:
        reader = self.ctx.reader.at(getattr(request, "validWriteIdList", None), getattr(request, "id", None))
        return method(self.serving(reader), request, *args)
    return call
