"""Thrift calls on tables: create, read, list, alter (incl. rename with data move), drop, truncate."""
from __future__ import annotations

import copy
import logging
import re
from collections.abc import Sequence
from typing import cast

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.handler.common import (
    DDL_TIME,
    Calls,
    ErrorType,
    checked_location,
    env_properties,
    lower,
    now,
    require_valid_name,
    split_catalog,
    table_name,
    with_snapshot,
)
from hmsproxy.handler.quick_stats import strip_marker, told_not_to_update, update_quick_stats
from hmsproxy.hive.names import filter_by_pattern
from hmsproxy.hive.partition_filter import FilterError
from hmsproxy.hive.table_filter import TableFilterRefused, compile_table_filter
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.storage.warehouse import DirectoryWork, Warehouse
from hmsproxy.store.domain import DroppedTable
from hmsproxy.store.reader import shallow_copy

log = logging.getLogger(__name__)

MANAGED, EXTERNAL, VIEW, MATERIALIZED_VIEW = "MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW", "MATERIALIZED_VIEW"


def is_external(table: hms.Table) -> bool:
    params = table.parameters or {}
    return table.tableType == EXTERNAL or str(params.get("EXTERNAL", "")).upper() == "TRUE"


def is_view(table: hms.Table) -> bool:
    return table.tableType in (VIEW, MATERIALIZED_VIEW)


# The type names Hive's metastore accepts as the first word of a column type (serdeConstants' primitive and
# collection types, uniontype, struct), case-sensitive, as MetaStoreUtils.validateColumnType checks them.
HIVE_TYPE_NAMES = frozenset({
    "void", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string", "varchar", "char",
    "date", "datetime", "timestamp", "decimal", "binary", "interval_year_month", "interval_day_time",
    "array", "map", "struct", "uniontype"})
TYPE_FROM_DESERIALIZER = "<derived from deserializer>"
FIRST_TYPE_WORD = re.compile(r"\w+|\W+")


def _check_columns(table: hms.Table, error: ErrorType) -> None:
    """Hive's checks of a table's columns and partition keys: the first word of every type is a Hive type
    name (`error`, which differs between create and alter, else the text Hive sends); names are lower-cased.
    A name used twice in one list fails as Hive's database insert does (MetaException); a partition key
    may share a data column's name (HMS 2.3 accepts it)."""
    for kind, columns in (("column", present(table.sd).cols or []), ("partition column", table.partitionKeys or [])):
        seen: set[str] = set()
        for column in columns:
            if column.name is None or not column.type:
                raise hms.MetaException(message=f"{kind} {column.name!r} of table {table.tableName} has no "
                                                f"{'name' if column.name is None else 'type'}")
            word = FIRST_TYPE_WORD.match(column.type)
            if column.type != TYPE_FROM_DESERIALIZER and (word is None or word.group() not in HIVE_TYPE_NAMES):
                raise error(message=f"Invalid {kind} type: {column.type}")
            column.name = column.name.lower()
            if column.name in seen:
                raise hms.MetaException(message=f"{kind} {column.name} appears twice in table {table.tableName}")
            seen.add(column.name)


class TableCalls(Calls):

    # ---- create ------------------------------------------------------------------------------------

    def create_table(self, tbl: hms.Table) -> None:
        self._create_table(tbl, None)

    def create_table_with_environment_context(self, tbl: hms.Table,
                                              environment_context: hms.EnvironmentContext) -> None:
        self._create_table(tbl, environment_context)

    def create_table_with_constraints(self, tbl: hms.Table, *constraints: object) -> None:
        self._create_table(tbl, None)

    def create_table_req(self, request: hms.CreateTableRequest) -> None:
        self._create_table(request.table, request.envContext)

    def _create_table(self, tbl: hms.Table | None, env: hms.EnvironmentContext | None) -> None:
        if tbl is None or tbl.sd is None:
            raise hms.InvalidObjectException(message="table and its storage descriptor must be given")
        try:
            self._create_new_table(tbl, env)
        except hms.AlreadyExistsException:  # Hive's text names the table as the client spelt it
            raise hms.AlreadyExistsException(message=f"Table {tbl.tableName} already exists") from None

    def _create_new_table(self, tbl: hms.Table, env: hms.EnvironmentContext | None) -> None:
        table = copy.deepcopy(tbl)
        sd = present(table.sd)   # _create_table refused a table without one
        table.tableName = require_valid_name(table.tableName)
        table.catName, table.dbName = split_catalog(table.dbName, table.catName)
        _check_columns(table, hms.InvalidObjectException)
        try:
            database = self.ctx.store.get_database(table.catName, table.dbName)
        except hms.NoSuchObjectException:
            raise hms.InvalidObjectException(message=tbl.dbName) from None  # HMS 2.3 names only the database
        if is_external(table):
            table.tableType = EXTERNAL
            table.parameters = {**(table.parameters or {}), "EXTERNAL": "TRUE"}
        table.tableType = table.tableType or MANAGED
        table.parameters = dict(table.parameters or {})
        table.partitionKeys = list(table.partitionKeys or [])
        table.createTime = now()
        table.parameters.setdefault(DDL_TIME, str(table.createTime))
        table.id = None
        with self.ctx.warehouse.changes() as work:
            if is_view(table):
                sd.location = checked_location(sd.location, hms.InvalidObjectException) or None
            else:
                sd.location = checked_location(sd.location, hms.InvalidObjectException) or \
                    Warehouse.default_table_location(present(database.locationUri), table.tableName)
                made = work.mkdirs(sd.location)
                if not strip_marker(table.parameters) and not table.partitionKeys:
                    update_quick_stats(self.ctx.warehouse, table.parameters, sd.location, new_dir=made,
                                       force=False, env=env_properties(env))
            self.ctx.store.create_table(table, journal=Journal.of(messages.create_table(table)))

    # ---- read --------------------------------------------------------------------------------------

    def get_table(self, dbname: str, tbl_name: str) -> hms.Table:
        """The ordinary tier: most calls of a cached table never reach it (rpc/tiers.py, handler/ready.py)."""
        return self.ctx.store.get_table(*table_name(dbname, tbl_name))

    @with_snapshot
    def get_table_req(self, req: hms.GetTableRequest) -> hms.GetTableResult:
        return hms.GetTableResult(table=self.ctx.store.get_table(*table_name(req.dbName, req.tblName, req.catName)))

    def get_table_objects_by_name(self, dbname: str, tbl_names: Sequence[str]) -> list[hms.Table]:
        catalog, db_name = split_catalog(dbname)
        return self._tables_by_name(catalog, db_name, tbl_names)

    def get_table_objects_by_name_req(self, req: hms.GetTablesRequest) -> hms.GetTablesResult:
        catalog, db_name = split_catalog(req.dbName, req.catName)
        names = req.tblNames
        if names is None:
            names = self._table_names(catalog, db_name, req.tablesPattern)
        return hms.GetTablesResult(tables=self._tables_by_name(catalog, db_name, names))

    def _tables_by_name(self, catalog: str, db_name: str, names: Sequence[str] | None) -> list[hms.Table]:
        if names is None:
            raise hms.InvalidOperationException(message="table names must not be null")
        try:
            return self.ctx.store.get_table_objects(catalog, db_name, [n.lower() for n in names if n])
        except hms.NoSuchObjectException:
            return []

    def _table_names(self, catalog: str, db_name: str, pattern: str | None, table_type: str | None = None) -> list[str]:
        try:
            names = self.ctx.store.get_table_names(catalog, db_name, table_type)
        except hms.NoSuchObjectException:
            return []
        return filter_by_pattern(names, pattern)

    def get_tables(self, db_name: str, pattern: str | None) -> list[str]:
        catalog, db = split_catalog(db_name)
        return self._table_names(catalog, db, pattern)

    def get_tables_by_type(self, db_name: str, pattern: str | None, tableType: str | None) -> list[str]:
        catalog, db = split_catalog(db_name)
        return self._table_names(catalog, db, pattern, tableType or None)

    def get_table_names_by_filter(self, dbname: str, filter: str, max_tables: int = -1) -> list[str]:
        """Names of the tables whose owner, last access or parameters pass the filter (table_filter.py); a
        database that does not exist has none, as in HMS."""
        try:
            matches = compile_table_filter(filter)
        except TableFilterRefused as refused:
            raise hms.MetaException(message=str(refused)) from None
        except FilterError as error:
            raise hms.MetaException(message=f"Error parsing table filter: {error}") from None
        catalog, db = split_catalog(dbname)
        tables = self._tables_by_name(catalog, db, self._table_names(catalog, db, None))
        names = sorted(present(table.tableName) for table in tables
                       if matches(table))
        return names if max_tables < 0 else names[:max_tables]

    def get_all_tables(self, db_name: str) -> list[str]:
        catalog, db = split_catalog(db_name)
        return self._table_names(catalog, db, None)

    def get_table_meta(self, db_patterns: str | None, tbl_patterns: str | None,
                       tbl_types: Sequence[str] | None) -> list[hms.TableMeta]:
        catalog = "hive"
        if db_patterns and db_patterns.startswith("@"):
            catalog, db_patterns = split_catalog(db_patterns)
        rows = self.ctx.store.get_table_meta(catalog)
        dbs = set(filter_by_pattern({r[0] for r in rows}, db_patterns))
        tables = set(filter_by_pattern({r[1] for r in rows}, tbl_patterns))
        types = set(tbl_types or [])
        return [hms.TableMeta(dbName=db, tableName=t, tableType=kind, comments=comment, catName=catalog)
                for db, t, kind, comment in rows
                if db in dbs and t in tables and (not types or kind in types)]

    def get_fields(self, db_name: str, table_name: str) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, with_partition_keys=False)

    def get_fields_with_environment_context(self, db_name: str, table_name: str,
                                            environment_context: hms.EnvironmentContext) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, with_partition_keys=False)

    def get_schema(self, db_name: str, table_name: str) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, with_partition_keys=True)

    def get_schema_with_environment_context(self, db_name: str, table_name: str,
                                            environment_context: hms.EnvironmentContext) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, with_partition_keys=True)

    @with_snapshot
    def get_fields_req(self, req: hms.GetFieldsRequest) -> hms.GetFieldsResponse:
        return hms.GetFieldsResponse(fields=self._fields(req.dbName, req.tblName, False, req.catName))

    @with_snapshot
    def get_schema_req(self, req: hms.GetSchemaRequest) -> hms.GetSchemaResponse:
        return hms.GetSchemaResponse(fields=self._fields(req.dbName, req.tblName, True, req.catName))

    def _fields(self, dbname: str, table_name: str, with_partition_keys: bool,
                cat: str | None = None) -> list[hms.FieldSchema]:
        catalog, db_name = split_catalog(dbname, cat)
        try:
            table = self.ctx.store.get_table(catalog, db_name, lower(table_name, "table"))
        except hms.NoSuchObjectException as exc:
            raise hms.UnknownTableException(message=exc.message) from None
        fields = list(present(table.sd).cols or [])
        return fields + list(table.partitionKeys or []) if with_partition_keys else fields

    # ---- alter -------------------------------------------------------------------------------------

    def alter_table(self, dbname: str, tbl_name: str, new_tbl: hms.Table) -> None:
        self._alter_table(dbname, None, tbl_name, new_tbl, None, cascade=False)

    def alter_table_with_environment_context(self, dbname: str, tbl_name: str, new_tbl: hms.Table,
                                             environment_context: hms.EnvironmentContext) -> None:
        cascade = env_properties(environment_context).get("CASCADE", "").lower() == "true"
        self._alter_table(dbname, None, tbl_name, new_tbl, environment_context, cascade)

    def alter_table_with_cascade(self, dbname: str, tbl_name: str, new_tbl: hms.Table, cascade: bool) -> None:
        self._alter_table(dbname, None, tbl_name, new_tbl, None, bool(cascade))

    def alter_table_req(self, req: hms.AlterTableRequest) -> hms.AlterTableResponse:
        cascade = env_properties(req.environmentContext).get("CASCADE", "").lower() == "true"
        table = req.table
        if table is not None and req.writeId is not None and req.writeId > 0:
            table = shallow_copy(table, writeId=req.writeId)  # a write in a transaction advances the table's write id
        self._alter_table(req.dbName, req.catName, req.tableName, table, req.environmentContext, cascade)
        return hms.AlterTableResponse()

    def _alter_table(self, dbname: str, cat: str | None, tbl_name: str, new_tbl: hms.Table | None,
                     env: hms.EnvironmentContext | None, cascade: bool) -> None:
        catalog, db_name = split_catalog(dbname, cat)
        tbl_name = lower(tbl_name, "table")
        if new_tbl is None or new_tbl.sd is None:
            raise hms.InvalidOperationException(message="new table and its storage descriptor must be given")
        table = copy.deepcopy(new_tbl)
        sd = present(table.sd)   # refused above when missing
        table.tableName = require_valid_name(table.tableName, hms.InvalidOperationException)
        table.dbName = split_catalog(table.dbName or db_name)[1]
        table.catName = catalog
        try:
            old = self.ctx.store.get_table(catalog, db_name, tbl_name)
        except hms.NoSuchObjectException:
            raise hms.InvalidOperationException(message=f"table {db_name}.{tbl_name} doesn't exist") from None
        old_keys = [(k.name, k.type) for k in old.partitionKeys or []]
        new_keys = [(cast(str, k.name).lower(), k.type) for k in table.partitionKeys or []]
        if old_keys != new_keys:
            raise hms.InvalidOperationException(message="partition keys can not be changed.")
        _check_columns(table, hms.InvalidOperationException)
        if is_external(table):
            table.tableType = EXTERNAL
        table.tableType = table.tableType or old.tableType
        table.parameters = dict(table.parameters or {})
        table.parameters.setdefault(DDL_TIME, str(now()))
        sd.location = (checked_location(sd.location, hms.InvalidOperationException)
                             or present(old.sd).location)
        renamed = (table.dbName, table.tableName) != (db_name, tbl_name)
        with self.ctx.warehouse.changes() as work:
            moves = self._rename_move(catalog, old, table, work) if renamed else None
            props = env_properties(env)
            expected = _expected_parameter(props, table)
            # HiveAlterHandler computes them on a plain alter, never on a rename
            if not renamed and not is_view(table) and not table.partitionKeys and not told_not_to_update(props) \
                    and not strip_marker(table.parameters):
                update_quick_stats(self.ctx.warehouse, table.parameters, sd.location, new_dir=False, force=True,
                                   env=props)
            strip_marker(table.parameters)
            event = messages.alter_table(old, table, write_id=table.writeId if cast(int, table.writeId) > 0 else None)
            self.ctx.store.alter_table(catalog, db_name, tbl_name, table, moves, cascade, expected,
                                       journal=Journal.of(event))

    def _rename_move(self, catalog: str, old: hms.Table, table: hms.Table,
                     work: DirectoryWork) -> tuple[str, str] | None:
        """A renamed managed table's directory move, done in `work` (undone if the rename fails); sets the new
        location. HiveAlterHandler moves the data only from its default place (<database>/<table>): a location
        the user chose stays where it is, as do views, external tables and a location the alter changes."""
        sd = present(table.sd)   # _alter_table refused a table without one
        if is_view(old) or is_external(old) or sd.location != present(old.sd).location:
            return None
        try:
            target_db = (self.ctx.store.get_database(catalog, present(table.dbName))
                         if table.dbName != old.dbName else None)
        except hms.NoSuchObjectException:
            raise hms.InvalidOperationException(message=f"Unable to change partition or table. "
                                                        f"Database {table.dbName} does not exist") from None
        old_db_location = self._db_location(catalog, present(old.dbName))
        if present(old.sd).location != Warehouse.default_table_location(old_db_location, present(old.tableName)):
            return None
        db_location = present(target_db.locationUri) if target_db else old_db_location
        sd.location = Warehouse.default_table_location(db_location, present(table.tableName))
        try:
            work.move(present(old.sd).location, sd.location)
        except (FileExistsError, PermissionError) as exc:
            raise hms.InvalidOperationException(message=str(exc)) from None
        return cast(str, present(old.sd).location), sd.location   # equal to the default location: set

    def _db_location(self, catalog: str, db_name: str) -> str:
        return present(self.ctx.store.get_database(catalog, db_name).locationUri)

    # ---- drop / truncate ---------------------------------------------------------------------------

    def drop_table(self, dbname: str, name: str, deleteData: bool) -> None:
        self._drop_table(dbname, name, deleteData)

    def drop_table_with_environment_context(self, dbname: str, name: str, deleteData: bool,
                                            environment_context: hms.EnvironmentContext) -> None:
        self._drop_table(dbname, name, deleteData)

    def _drop_table(self, dbname: str, name: str, delete_data: bool) -> None:
        catalog, db_name = split_catalog(dbname)
        table = self.ctx.store.get_table(catalog, db_name, lower(name, "table"))
        dropped = self.ctx.store.drop_table(catalog, db_name, present(table.tableName),
                                            journal=Journal.of(messages.drop_table(table)))
        if delete_data:
            self._delete_table_data(dropped)

    def _delete_table_data(self, dropped: DroppedTable) -> None:
        """Removes a dropped managed table's directory and its partitions' directories; external data stays."""
        table = dropped.table
        if is_external(table) or is_view(table):
            return
        for location in dropped.partition_locations:
            self.ctx.warehouse.remove(location)
        self.ctx.warehouse.remove(table.sd.location if table.sd else None)

    def truncate_table(self, dbName: str, tableName: str, partNames: Sequence[str] | None) -> None:
        catalog, db_name = split_catalog(dbName)
        table = copy.deepcopy(self.ctx.store.get_table(catalog, db_name, lower(tableName, "table")))
        if is_external(table) or is_view(table):
            raise hms.MetaException(message=f"Cannot truncate non-managed table {db_name}.{table.tableName}")
        name = present(table.tableName)
        if table.partitionKeys:
            names = partNames or self.ctx.store.get_partition_names(catalog, db_name, name)
            parts = copy.deepcopy(self.ctx.store.get_partitions_by_names(catalog, db_name, name, names))
            for part in parts:
                self.ctx.warehouse.empty(present(part.sd).location)
                update_quick_stats(self.ctx.warehouse, present(part.parameters), present(part.sd).location,
                                   new_dir=False, force=True, env={})
            before = {present(p.sd).location: p for p in self.ctx.store.get_partitions_by_names(
                catalog, db_name, name, names)}
            events = [messages.alter_partition(table, before.get(present(p.sd).location, p), p, is_truncate=True)
                      for p in parts]
            self.ctx.store.alter_partitions(catalog, db_name, name, parts, journal=Journal.of(*events))
        else:
            self.ctx.warehouse.empty(present(table.sd).location)
            update_quick_stats(self.ctx.warehouse, present(table.parameters), present(table.sd).location,
                               new_dir=False, force=True, env={})
            before_table = self.ctx.store.get_table(catalog, db_name, name)
            self.ctx.store.alter_table(catalog, db_name, name, table,
                                       journal=Journal.of(messages.alter_table(before_table, table, is_truncate=True)))

    def truncate_table_req(self, req: hms.TruncateTableRequest) -> hms.TruncateTableResponse:
        self.truncate_table(req.dbName, req.tableName, req.partNames)
        return hms.TruncateTableResponse()


EXPECTED_KEY, EXPECTED_VALUE = "expected_parameter_key", "expected_parameter_value"


def _expected_parameter(props: dict[str, str], new_table: hms.Table) -> tuple[str, str] | None:
    """The compare-and-set an alter asks for (Hive 4's EnvironmentContext keys), checked as Hive does: the
    new table must carry the key; the store compares the stored value."""
    key, value = props.get(EXPECTED_KEY), props.get(EXPECTED_VALUE)
    if key is None or value is None:
        return None
    if (new_table.parameters or {}).get(key) is None:
        raise hms.MetaException(message=f"New value for expected key {key} is not set")
    return key, value

