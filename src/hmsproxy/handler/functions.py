"""Thrift calls on user-defined functions."""
from __future__ import annotations

import copy

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.handler.common import Calls, ErrorType, lower, now, require_valid_name, split_catalog
from hmsproxy.hive.names import filter_by_pattern
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present


class FunctionCalls(Calls):

    def _normalised(self, func: hms.Function | None, error: ErrorType = hms.InvalidObjectException) -> hms.Function:
        if func is None:
            raise error(message="function must not be null")
        function = copy.deepcopy(func)
        function.functionName = require_valid_name(function.functionName, error)
        function.catName, function.dbName = split_catalog(function.dbName, function.catName)
        if not function.className:
            raise error(message=f"function {function.functionName} needs a class name")
        return function

    def create_function(self, func: hms.Function) -> None:
        function = self._normalised(func)
        function.createTime = now()
        try:
            self.ctx.store.create_function(function, journal=Journal.of(messages.create_function(function)))
        except hms.AlreadyExistsException:  # Hive's text names the function as the client spelt it
            raise hms.AlreadyExistsException(message=f"Function {func.functionName} already exists") from None

    def get_function(self, dbName: str, funcName: str) -> hms.Function:
        catalog, db_name = split_catalog(dbName)
        return self.ctx.store.get_function(catalog, db_name, lower(funcName, "function"))

    def get_functions(self, dbName: str, pattern: str | None) -> list[str]:
        catalog, db_name = split_catalog(dbName)
        names = [present(f.functionName) for f in self.ctx.store.get_functions(catalog, db_name)]
        return filter_by_pattern(names, pattern)

    def get_all_functions(self) -> hms.GetAllFunctionsResponse:
        return hms.GetAllFunctionsResponse(functions=self.ctx.store.get_functions("hive"))

    def alter_function(self, dbName: str, funcName: str, newFunc: hms.Function) -> None:
        catalog, db_name = split_catalog(dbName)
        function = self._normalised(newFunc, hms.InvalidOperationException)
        old = self._existing(catalog, db_name, lower(funcName, "function"))
        function.createTime = old.createTime
        changed = Journal.of(messages.drop_function(old), messages.create_function(function))  # Hive has no alter event
        self.ctx.store.alter_function(catalog, db_name, present(old.functionName), function, journal=changed)

    def _existing(self, catalog: str, db_name: str, name: str) -> hms.Function:
        try:
            return self.ctx.store.get_function(catalog, db_name, name)
        except hms.NoSuchObjectException:
            raise hms.MetaException(message=f"function {name} doesn't exist") from None  # Hive's ObjectStore text

    def drop_function(self, dbName: str, funcName: str) -> None:
        catalog, db_name = split_catalog(dbName)
        function = self.ctx.store.get_function(catalog, db_name, lower(funcName, "function"))
        self.ctx.store.drop_function(catalog, db_name, present(function.functionName),
                                     journal=Journal.of(messages.drop_function(function)))
