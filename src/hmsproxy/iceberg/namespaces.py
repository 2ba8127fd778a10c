"""Namespaces of the REST catalog: the HMS databases, with their location and comment shown as properties."""
from __future__ import annotations

from collections.abc import Sequence

from hmsproxy.handler import Handler
from hmsproxy.iceberg.errors import AlreadyExists, BadRequest, NamespaceNotEmpty, NoSuchNamespace, UnprocessableEntity
from hmsproxy.iceberg.paging import page
from hmsproxy.idl import hms

LOCATION, COMMENT = "location", "comment"
FIELD_PROPERTIES = (LOCATION, COMMENT)   # Database fields, not parameters: HMS 2.3's alter_database keeps them


class Namespaces:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    def database(self, name: str) -> hms.Database:
        try:
            return self.handler.get_database(name)
        except hms.NoSuchObjectException:
            raise NoSuchNamespace(f"Namespace does not exist: {name}") from None

    def listed(self, parent: str | None, token: str | None, size: int | None) -> tuple[list[str], str | None]:
        if parent is not None:
            self.database(parent)
            return [], None   # one level: no namespace has children
        return page(sorted(self.handler.get_all_databases()), token, size)

    def create(self, name: str, properties: dict[str, str]) -> dict[str, str]:
        params = {k: v for k, v in properties.items() if k not in FIELD_PROPERTIES}
        try:
            self.handler.create_database(hms.Database(
                name=name, locationUri=properties.get(LOCATION) or None, description=properties.get(COMMENT),
                parameters=params, ownerType=hms.PrincipalType.USER))
        except hms.AlreadyExistsException:
            raise AlreadyExists(f"Namespace already exists: {name}") from None
        except (hms.InvalidObjectException, hms.MetaException) as refused:
            raise BadRequest(f"Namespace {name} refused: {refused.message}") from None
        return self.properties(name)

    def properties(self, name: str) -> dict[str, str]:
        database = self.database(name)
        shown = dict(database.parameters or {})
        if database.locationUri:
            shown[LOCATION] = database.locationUri
        if database.description:
            shown[COMMENT] = database.description
        return shown

    def drop(self, name: str) -> None:
        self.database(name)
        if self.handler.get_all_tables(name):
            raise NamespaceNotEmpty(f"Namespace {name} is not empty")
        try:
            self.handler.drop_database(name, False, False)   # Iceberg's HiveCatalog: data stays, never cascades
        except hms.NoSuchObjectException:
            raise NoSuchNamespace(f"Namespace does not exist: {name}") from None
        except hms.InvalidOperationException:   # a table created since the check
            raise NamespaceNotEmpty(f"Namespace {name} is not empty") from None
        except hms.MetaException as refused:    # the default database
            raise BadRequest(refused.message or f"Namespace {name} cannot be dropped") from None

    def update(self, name: str, removals: Sequence[str], updates: dict[str, str]) -> dict[str, list[str]]:
        overlap = set(removals) & set(updates)
        if overlap:
            raise UnprocessableEntity(f"Keys both removed and updated: {', '.join(sorted(overlap))}")
        fixed = sorted((set(removals) | set(updates)) & set(FIELD_PROPERTIES))
        if fixed:
            raise UnprocessableEntity(f"{', '.join(fixed)} of a namespace cannot be changed")
        database = self.database(name)
        params = dict(database.parameters or {})
        removed = [key for key in removals if key in params]
        missing = [key for key in removals if key not in params]
        for key in removed:
            del params[key]
        params.update(updates)
        self.handler.alter_database(name, hms.Database(name=name, parameters=params))
        return {"updated": sorted(updates), "removed": removed, "missing": missing}
