"""A Python client for hmsproxy (and any HMS): every Thrift method as a plain call, and iterators over a
table's partitions that fetch them in id-ordered batches, sequentially or over several connections.

    with MetastoreClient("127.0.0.1", 9083) as hms:
        hms.get_table("sales", "events")                       # any HMS method
        for partition in hms.iter_partitions("sales", "events", connections=4, filter='ds >= "2024-01-01"'):
            ...

The batches come from hmsproxy's get_partitions_batch (an extension of the HMS API): the server keeps no
state between them, so an iteration survives reconnects; partitions added meanwhile arrive at the end,
removed ones are simply not returned.
"""
from __future__ import annotations

import enum
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import thriftpy2.rpc
from thriftpy2.transport import TCyFramedTransportFactory

from hmsproxy.hive.write_ids import LONG_MAX, ValidTxnList, ValidWriteIdList
from hmsproxy.idl import hms

if TYPE_CHECKING:
    from hmsproxy.idl.hive_metastore_thrift import ThriftHiveMetastoreClient


class _Done(enum.Enum):
    """What a worker queues after the last batch of its range."""
    DONE = enum.auto()


def decode_bitset(data: bytes | None, count: int) -> list[bool]:
    """java.util.BitSet.toByteArray (the abortedBits of HMS answers): bit i is bit i % 8 of byte i // 8."""
    data = data or b""
    return [i // 8 < len(data) and bool(data[i // 8] >> (i % 8) & 1) for i in range(count)]


def reader_snapshot(client: ThriftHiveMetastoreClient | MetastoreClient, full_table_name: str,
                    txn_id: int | None = None) -> ValidWriteIdList:
    """The table's ValidWriteIdList as a Hive reader builds it (inside transaction `txn_id`, whose own
    writes it sees, or outside any): what a snapshot read sends as validWriteIdList."""
    state = client.get_open_txns()
    txns = list(state.open_txns or [])
    aborted = decode_bitset(state.abortedBits, len(txns))
    open_txns = [t for t, a in zip(txns, aborted) if not a and t != txn_id]
    valid_txns = ValidTxnList(high_watermark=state.txn_high_water_mark, min_open_id=min(open_txns, default=LONG_MAX),
                              open_ids=tuple(open_txns), aborted_ids=tuple(t for t, a in zip(txns, aborted) if a))
    [ids] = client.get_valid_write_ids(hms.GetValidWriteIdsRequest(
        fullTableNames=[full_table_name], validTxnList=str(valid_txns))).tblValidWriteIds
    invalid = list(ids.invalidWriteIds or [])
    bad = decode_bitset(ids.abortedBits, len(invalid))
    return ValidWriteIdList.of(full_table_name, ids.writeIdHighWaterMark,
                               [w for w, a in zip(invalid, bad) if not a], [w for w, a in zip(invalid, bad) if a])


_Item = hms.Partition | str   # a batch listing's item: a partition, or its name
_ThriftMethod = Callable[..., Any]   # a method of the HMS Thrift API, found by name: its result's type is unknown


class MetastoreClient:
    def __init__(self, host: str = "127.0.0.1", port: int = 9083, *, timeout_s: float = 600.0,
                 framed: bool = False) -> None:
        self.host, self.port, self.timeout_s, self.framed = host, port, timeout_s, framed
        self._client = self._connect()

    def _connect(self) -> ThriftHiveMetastoreClient:
        extra = {"trans_factory": TCyFramedTransportFactory()} if self.framed else {}
        # thriftpy2 annotates the service as a module; it is the generated class
        client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, self.host, self.port,  # type: ignore[arg-type]
                                           timeout=int(self.timeout_s * 1000), **extra)
        return cast("ThriftHiveMetastoreClient", client)   # its methods are the service's, looked up by name

    def __getattr__(self, name: str) -> _ThriftMethod:
        """Any method of the HMS Thrift API, e.g. client.get_table("db", "t")."""
        return cast(_ThriftMethod, getattr(self._client, name))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> MetastoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- batched partition listings ----------------------------------------------------------------

    def iter_partitions(self, db: str, table: str, *, batch_size: int = 1000, filter: str | None = None,
                        connections: int = 1) -> Iterator[hms.Partition]:
        """Every partition of the table (matching `filter`), in partition id order."""
        return cast("Iterator[hms.Partition]", self._iterate(db, table, batch_size, filter, connections, names=False))

    def iter_partition_names(self, db: str, table: str, *, batch_size: int = 1000, filter: str | None = None,
                             connections: int = 1) -> Iterator[str]:
        return cast("Iterator[str]", self._iterate(db, table, batch_size, filter, connections, names=True))

    def _fetch(self, client: ThriftHiveMetastoreClient, db: str, table: str, start: int, end: int, size: int,
               filter: str | None, names: bool) -> tuple[Sequence[_Item], hms.PartitionBatchResponse
                                                         | hms.PartitionNameBatchResponse]:
        request = hms.PartitionBatchRequest(dbName=db, tblName=table, fromPartitionId=start, toPartitionId=end,
                                            batchSize=size, filter=filter)
        if names:
            named = client.get_partition_names_batch(request)
            return named.names, named
        response = client.get_partitions_batch(request)
        return response.partitions, response

    def _range(self, client: ThriftHiveMetastoreClient, db: str, table: str, start: int, end: int, size: int,
               filter: str | None, names: bool) -> Iterator[_Item]:
        """Batches of [start, end) (end -1: to the last partition) until the server says it is done."""
        while start >= 0:
            items, response = self._fetch(client, db, table, start, end, size, filter, names)
            yield from items
            start = response.nextPartitionId

    def _iterate(self, db: str, table: str, size: int, filter: str | None, connections: int,
                 names: bool) -> Iterator[_Item]:
        if connections <= 1:
            yield from self._range(self._client, db, table, 0, -1, size, filter, names)
            return
        first, response = self._fetch(self._client, db, table, 0, -1, size, filter, names)
        yield from first
        start, end = response.nextPartitionId, response.maxPartitionId + 1
        if start < 0:
            return
        step = max(1, -(-(end - start) // connections))
        bounds = [(lo, min(lo + step, end)) for lo in range(start, end, step)]
        yield from self._concurrently(db, table, bounds, size, filter, names)
        # partitions added while we iterated have higher ids: pick them up at the end
        yield from self._range(self._client, db, table, end, -1, size, filter, names)

    def _concurrently(self, db: str, table: str, bounds: list[tuple[int, int]], size: int, filter: str | None,
                      names: bool) -> Iterator[_Item]:
        """One connection per id range; results come back range by range, so the order stays by id.
        Each range buffers at most a few batches, so memory stays bounded."""
        queues: list[queue.Queue[Sequence[_Item] | BaseException | _Done]] = [queue.Queue(maxsize=4) for _ in bounds]
        stop = threading.Event()

        def work(index: int, start: int, end: int) -> None:
            client = self._connect()
            try:
                while start >= 0 and not stop.is_set():
                    items, response = self._fetch(client, db, table, start, end, size, filter, names)
                    queues[index].put(items)
                    start = response.nextPartitionId
                queues[index].put(_Done.DONE)
            except BaseException as exc:  # handed to the consuming thread, which raises it
                queues[index].put(exc)
            finally:
                client.close()

        workers = [threading.Thread(target=work, args=(i, lo, hi), daemon=True) for i, (lo, hi) in enumerate(bounds)]
        for worker in workers:
            worker.start()
        try:
            for q in queues:
                while (items := q.get()) is not _Done.DONE:
                    if isinstance(items, BaseException):
                        raise items
                    yield from items
        finally:
            stop.set()
            for q in queues:  # unblock workers waiting on a full queue
                while not q.empty():
                    q.get_nowait()
            for worker in workers:
                worker.join(timeout=5)
