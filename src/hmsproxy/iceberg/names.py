"""Namespaces and table identifiers as the REST paths and bodies carry them, checked against what HMS holds.

HMS databases have one level, so a namespace is one part; a path's namespace parts are joined by 0x1F (the spec's
default separator, `%1F` on the wire)."""
from __future__ import annotations

from dataclasses import dataclass

from hmsproxy.iceberg.errors import BadRequest, NoSuchNamespace, NoSuchTable

SEPARATOR = "\x1f"


def namespace_from_path(text: str) -> str:
    parts = text.split(SEPARATOR)
    return one_level(parts)


def one_level(parts: list[str] | tuple[str, ...]) -> str:
    """The database a namespace names; hmsproxy's namespaces are HMS databases, which have one level."""
    if len(parts) != 1 or not parts[0]:
        raise NoSuchNamespace(f"Namespace does not exist: {'.'.join(parts)} (this catalog's namespaces have one "
                              "level, the HMS databases)") if len(parts) > 1 else BadRequest("empty namespace")
    return parts[0]


def table_from_path(namespace: str, table: str) -> TableName:
    """The table a path names. A namespace of several levels holds no table here: that is NoSuchTableException, not
    NoSuchNamespaceException, because Iceberg's clients read a metadata table (`db.t.snapshots`) by loading
    `snapshots` in namespace `db.t` first and fall back to the base table `db.t` only on NoSuchTableException."""
    parts = namespace.split(SEPARATOR)
    if len(parts) > 1:
        raise NoSuchTable(f"Table does not exist: {'.'.join(parts)}.{table} (this catalog's namespaces have one level)")
    return TableName(one_level(parts).lower(), table.lower())


@dataclass(frozen=True)
class TableName:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


def table_identifier(value: object, field: str) -> TableName:
    """A TableIdentifier body field: `{"namespace": [..], "name": ".."}`."""
    if not isinstance(value, dict):
        raise BadRequest(f"{field}: expected a table identifier object")
    namespace, name = value.get("namespace"), value.get("name")
    if not isinstance(namespace, list) or not all(isinstance(p, str) for p in namespace):
        raise BadRequest(f"{field}.namespace: expected a list of strings")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{field}.name: expected a non-empty string")
    return TableName(one_level(namespace).lower(), name.lower())
