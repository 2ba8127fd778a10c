"""The handler's part of the ready tier (rpc/tiers.py): the calls a store holding ready answers (ReadyAnswers:
only the cache) may answer with bytes before any handler method runs, each read as its ordinary method reads it
(table_name; the partition limits in hive/partition_limits.py, applied by the store). Whatever the ordinary method
must decide (a malformed argument, a bad filter, a refusal) is declined (None) and left to it."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from hmsproxy.handler.common import Calls, ready_table_name
from hmsproxy.store.reader import Reader
from hmsproxy.store.ready import Held, Ready, ReadyAnswers


class ReadyCalls(Calls):

    @functools.cached_property
    def _ready_store(self) -> ReadyAnswers | None:
        """The store's ready tier, if it has one (asked once: the protocol check is not free)."""
        store = self.ctx.store
        return store if isinstance(store, ReadyAnswers) else None

    @functools.cached_property
    def ready_calls(self) -> frozenset[str]:
        """The calls ready_answer may answer: none over a store without the ready tier."""
        return frozenset(_READY_CALLS) if self._ready_store is not None else frozenset()

    def ready_answer(self, api: str, reader: Reader, arguments: Sequence[object]) -> Ready | None:
        """The answer of a call of ready_calls as the Thrift bytes the store holds ready for `reader`, or None: the
        call is then answered the ordinary way. Never blocks on the database."""
        store = self._ready_store
        answer = _READY_CALLS.get(api)
        return None if store is None or answer is None else answer(self, store, reader, *arguments)

    def ready_again(self, reader: Reader, held: Held) -> bool:
        store = self._ready_store
        return store is not None and store.ready_again(reader, held)

    def _ready_table(self, store: ReadyAnswers, reader: Reader, dbname: object, tbl_name: object) -> Ready | None:
        names = ready_table_name(dbname, tbl_name)
        return None if names is None else store.ready_table(reader, *names)

    def _ready_partitions_by_filter(self, store: ReadyAnswers, reader: Reader, db_name: object, tbl_name: object,
                                    filter: object, max_parts: object) -> Ready | None:
        names = ready_table_name(db_name, tbl_name)
        if names is None or not isinstance(filter, str) or not isinstance(max_parts, int):
            return None
        return store.ready_partitions_by_filter(reader, *names, filter, max_parts, self.ctx.partition_request_limit)


# The calls the ready tier answers, and the method reading each one's arguments.
_READY_CALLS: dict[str, Callable[..., Ready | None]] = {
    "get_table": ReadyCalls._ready_table,
    "get_partitions_by_filter": ReadyCalls._ready_partitions_by_filter,
}
