"""Thrift calls on transactions, table write ids and locks."""
from __future__ import annotations

from hmsproxy.handler.common import Calls
from hmsproxy.hive.write_ids import ValidTxnList
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present


def _bits(flags: list[bool]) -> bytes:
    """java.util.BitSet.toByteArray: bit i is bit (i % 8) of byte i // 8, trailing zero bytes dropped."""
    data = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            data[i // 8] |= 1 << (i % 8)
    return bytes(data).rstrip(b"\x00")


class TransactionCalls(Calls):

    def open_txns(self, rqst: hms.OpenTxnRequest) -> hms.OpenTxnsResponse:
        ids = self.ctx.store.open_txns(rqst.num_txns, rqst.user, rqst.hostname, rqst.agentInfo, rqst.txn_type)
        return hms.OpenTxnsResponse(txn_ids=ids)

    def commit_txn(self, rqst: hms.CommitTxnRequest) -> None:
        self.ctx.store.commit_txn(rqst.txnid)

    def abort_txn(self, rqst: hms.AbortTxnRequest) -> None:
        self.ctx.store.abort_txns([rqst.txnid])

    def abort_txns(self, rqst: hms.AbortTxnsRequest) -> None:
        self.ctx.store.abort_txns(list(rqst.txn_ids or []), skip_unknown=True)

    def get_open_txns(self) -> hms.GetOpenTxnsResponse:
        high, txns = self.ctx.store.get_open_txns()
        open_ids = [t.id for t in txns if t.state == hms.TxnState.OPEN]
        return hms.GetOpenTxnsResponse(
            txn_high_water_mark=high, open_txns=[t.id for t in txns], min_open_txn=min(open_ids, default=None),
            abortedBits=_bits([t.state == hms.TxnState.ABORTED for t in txns]))

    def get_open_txns_req(self, getOpenTxnsRequest: hms.GetOpenTxnsRequest) -> hms.GetOpenTxnsResponse:
        return self.get_open_txns()

    def get_open_txns_info(self) -> hms.GetOpenTxnsInfoResponse:
        high, txns = self.ctx.store.get_open_txns()
        return hms.GetOpenTxnsInfoResponse(txn_high_water_mark=high, open_txns=txns)

    def allocate_table_write_ids(self, rqst: hms.AllocateTableWriteIdsRequest) -> hms.AllocateTableWriteIdsResponse:
        if not rqst.txnIds:
            raise hms.MetaException(message="allocate_table_write_ids needs txnIds (replication is not supported)")
        allocated = self.ctx.store.allocate_write_ids(rqst.dbName.lower(), rqst.tableName.lower(), rqst.txnIds)
        return hms.AllocateTableWriteIdsResponse(
            txnToWriteIds=[hms.TxnToWriteId(txnId=t, writeId=w) for t, w in allocated])

    def get_valid_write_ids(self, rqst: hms.GetValidWriteIdsRequest) -> hms.GetValidWriteIdsResponse:
        try:
            snapshot = ValidTxnList.parse(rqst.validTxnList) if rqst.validTxnList else None
        except ValueError as exc:
            raise hms.MetaException(message=f"invalid validTxnList: {exc}") from None
        lists = self.ctx.store.valid_write_ids(list(rqst.fullTableNames or []), snapshot)
        return hms.GetValidWriteIdsResponse(tblValidWriteIds=[
            hms.TableValidWriteIds(
                fullTableName=present(w.table_name), writeIdHighWaterMark=w.high_watermark,
                invalidWriteIds=list(w.exceptions), minOpenWriteId=min(w.open_ids, default=None),
                abortedBits=_bits([w.is_aborted(i) for i in w.exceptions])) for w in lists])

    def lock(self, rqst: hms.LockRequest) -> hms.LockResponse:
        outcome = self.ctx.store.lock(rqst.component or [], rqst.txnid, rqst.user, rqst.hostname, rqst.agentInfo)
        return hms.LockResponse(lockid=outcome.lock_id, state=outcome.state)

    def check_lock(self, rqst: hms.CheckLockRequest) -> hms.LockResponse:
        return hms.LockResponse(lockid=rqst.lockid, state=self.ctx.store.check_lock(rqst.lockid).state)

    def unlock(self, rqst: hms.UnlockRequest) -> None:
        self.ctx.store.unlock(rqst.lockid)

    def show_locks(self, rqst: hms.ShowLocksRequest) -> hms.ShowLocksResponse:
        return hms.ShowLocksResponse(locks=self.ctx.store.show_locks(rqst.dbname, rqst.tablename, rqst.partname,
                                                                    rqst.txnid))

    def heartbeat(self, ids: hms.HeartbeatRequest) -> None:
        self.ctx.store.heartbeat(ids.lockid, ids.txnid)

    def heartbeat_txn_range(self, txns: hms.HeartbeatTxnRangeRequest) -> hms.HeartbeatTxnRangeResponse:
        aborted, nosuch = self.ctx.store.heartbeat_txn_range(txns.min, txns.max)
        return hms.HeartbeatTxnRangeResponse(aborted=aborted, nosuch=nosuch)
