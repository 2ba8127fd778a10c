"""The Thrift handler: one method per HMS call, each unpacking the request, calling the store and packing
the answer. It never touches SQL; the store it holds may be the database or the cache in front of it."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hmsproxy.handler.common import HandlerContext
from hmsproxy.handler.databases import DatabaseCalls
from hmsproxy.handler.functions import FunctionCalls
from hmsproxy.handler.notifications import NotificationCalls
from hmsproxy.handler.partitions import PartitionCalls
from hmsproxy.handler.service import ServiceCalls
from hmsproxy.handler.statistics import StatisticsCalls
from hmsproxy.handler.tables import TableCalls
from hmsproxy.handler.transactions import TransactionCalls
from hmsproxy.store.reader import Reader
from hmsproxy.store.ready import Held, Ready

# The reads that can be answered with bytes the cache holds ready, and the method giving them.
ENCODED_ANSWERS = {"get_table": "get_table_encoded", "get_partitions_by_filter": "get_partitions_by_filter_encoded"}


class Handler(DatabaseCalls, TableCalls, PartitionCalls, FunctionCalls, StatisticsCalls, TransactionCalls,
              NotificationCalls, ServiceCalls):
    encoded_calls = frozenset(ENCODED_ANSWERS)

    def method_for(self, api: str, reader: Reader) -> Callable[..., Any] | None:
        """The method answering one call of `api` (None where hmsproxy serves no such call)."""
        method: Callable[..., Any] | None = getattr(self.serving(reader), api, None)
        return method

    def encoded_answer(self, api: str, reader: Reader, arguments: Sequence[Any]) -> Ready | None:
        """The answer of a read as the Thrift bytes the store holds ready (a cached table for get_table), or None:
        the call is then answered by method_for's method. Never blocks on the database."""
        name = ENCODED_ANSWERS.get(api)
        answer: Ready | None = None if name is None else getattr(self, name)(reader, *arguments)
        return answer

    def ready_again(self, reader: Reader, held: Held) -> bool:
        return self.ctx.store.ready_again(reader, held)


__all__ = ["Handler", "HandlerContext"]
