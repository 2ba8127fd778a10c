"""The Thrift handler: one method per HMS call, each unpacking the request, calling the store and packing
the answer. It never touches SQL; the store it holds may be the database or the cache in front of it."""
from __future__ import annotations

from collections.abc import Callable

from hmsproxy.handler.common import HandlerContext
from hmsproxy.handler.databases import DatabaseCalls
from hmsproxy.handler.functions import FunctionCalls
from hmsproxy.handler.notifications import NotificationCalls
from hmsproxy.handler.partitions import PartitionCalls
from hmsproxy.handler.ready import ReadyCalls
from hmsproxy.handler.service import ServiceCalls
from hmsproxy.handler.statistics import StatisticsCalls
from hmsproxy.handler.tables import TableCalls
from hmsproxy.handler.transactions import TransactionCalls
from hmsproxy.store.reader import Reader


class Handler(DatabaseCalls, TableCalls, PartitionCalls, FunctionCalls, StatisticsCalls, TransactionCalls,
              NotificationCalls, ServiceCalls, ReadyCalls):

    def method_for(self, api: str, reader: Reader) -> Callable[..., object] | None:
        """The method answering one call of `api` (None where hmsproxy serves no such call)."""
        method: Callable[..., object] | None = getattr(self.serving(reader), api, None)
        return method


__all__ = ["Handler", "HandlerContext"]
