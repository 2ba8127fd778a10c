"""Thrift calls on table and partition column statistics, including aggregation over partitions."""
from __future__ import annotations

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.handler.common import Calls, lower, split_catalog, with_snapshot
from hmsproxy.hive.names import parse_partition_name
from hmsproxy.hive.stats_aggregate import aggregate_stats
from hmsproxy.idl import hms
from hmsproxy.idl.fields import present


class StatisticsCalls(Calls):

    def _apply(self, stats: hms.ColumnStatistics | None) -> None:
        if stats is None or stats.statsDesc is None:
            raise hms.InvalidInputException(message="column statistics need a statistics descriptor")
        desc = stats.statsDesc
        catalog, desc.dbName = split_catalog(desc.dbName, desc.catName)
        desc.tableName = lower(desc.tableName, "table")
        table = self.ctx.store.get_table(catalog, desc.dbName, desc.tableName)
        if desc.isTblLevel:
            event = messages.update_table_column_stat(table, stats, max(table.writeId or 0, 0), None)
            self.ctx.store.update_table_column_statistics(catalog, stats, journal=Journal.of(event))
            return
        if not desc.partName:
            raise hms.InvalidInputException(message="partition statistics need a partition name")
        try:
            values = [v for _, v in parse_partition_name(desc.partName)]
        except ValueError as exc:
            raise hms.InvalidInputException(message=str(exc)) from None
        self.ctx.store.update_partition_column_statistics(
            catalog, stats, values, journal=Journal.of(messages.update_part_column_stat(table, values, stats, 0)))

    def update_table_column_statistics(self, stats_obj: hms.ColumnStatistics) -> bool:
        if stats_obj is not None and stats_obj.statsDesc is not None and not stats_obj.statsDesc.isTblLevel:
            raise hms.InvalidInputException(message="update_table_column_statistics needs table-level statistics")
        self._apply(stats_obj)
        return True

    def update_partition_column_statistics(self, stats_obj: hms.ColumnStatistics) -> bool:
        if stats_obj is not None and stats_obj.statsDesc is not None and stats_obj.statsDesc.isTblLevel:
            raise hms.InvalidInputException(message="update_partition_column_statistics needs partition statistics")
        self._apply(stats_obj)
        return True

    def set_aggr_stats_for(self, request: hms.SetPartitionsStatsRequest) -> bool:
        for stats in request.colStats or []:
            self._apply(stats)
        return True

    def update_table_column_statistics_req(self, req: hms.SetPartitionsStatsRequest) -> hms.SetPartitionsStatsResponse:
        self.set_aggr_stats_for(req)
        return hms.SetPartitionsStatsResponse(result=True)

    def update_partition_column_statistics_req(self, req: hms.SetPartitionsStatsRequest
                                               ) -> hms.SetPartitionsStatsResponse:
        self.set_aggr_stats_for(req)
        return hms.SetPartitionsStatsResponse(result=True)

    def get_table_column_statistics(self, db_name: str, tbl_name: str, col_name: str) -> hms.ColumnStatistics:
        catalog, db = split_catalog(db_name)
        table = lower(tbl_name, "table")
        column = lower(col_name, "column")
        objs = self.ctx.store.get_table_column_statistics(catalog, db, table, [column])
        if not objs:
            raise hms.NoSuchObjectException(message=f"no column statistics for {db}.{table}.{column}")
        analyzed = self.ctx.store.statistics_analyzed_at(catalog, db, table, None, column)
        return hms.ColumnStatistics(
            statsDesc=hms.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=table, catName=catalog,
                                               lastAnalyzed=analyzed),
            statsObj=objs)

    def get_partition_column_statistics(self, db_name: str, tbl_name: str, part_name: str,
                                        col_name: str) -> hms.ColumnStatistics:
        catalog, db = split_catalog(db_name)
        table = lower(tbl_name, "table")
        column = lower(col_name, "column")
        found = self.ctx.store.get_partition_column_statistics(catalog, db, table, [part_name], [column])
        if not found.get(part_name):
            raise hms.NoSuchObjectException(message=f"no column statistics for {db}.{table} {part_name} {column}")
        analyzed = self.ctx.store.statistics_analyzed_at(catalog, db, table, part_name, column)
        return hms.ColumnStatistics(
            statsDesc=hms.ColumnStatisticsDesc(isTblLevel=False, dbName=db, tableName=table, partName=part_name,
                                               catName=catalog, lastAnalyzed=analyzed),
            statsObj=found[part_name])

    @with_snapshot
    def get_table_statistics_req(self, request: hms.TableStatsRequest) -> hms.TableStatsResult:
        catalog, db = split_catalog(request.dbName, request.catName)
        cols = [c.lower() for c in request.colNames or []]
        objs = self.ctx.store.get_table_column_statistics(catalog, db, lower(request.tblName, "table"), cols)
        return hms.TableStatsResult(tableStats=objs)

    @with_snapshot
    def get_partitions_statistics_req(self, request: hms.PartitionsStatsRequest) -> hms.PartitionsStatsResult:
        catalog, db = split_catalog(request.dbName, request.catName)
        cols = [c.lower() for c in request.colNames or []]
        found = self.ctx.store.get_partition_column_statistics(
            catalog, db, lower(request.tblName, "table"), list(request.partNames or []), cols)
        return hms.PartitionsStatsResult(partStats=found)

    @with_snapshot
    def get_aggr_stats_for(self, request: hms.PartitionsStatsRequest) -> hms.AggrStats:
        catalog, db = split_catalog(request.dbName, request.catName)
        table = lower(request.tblName, "table")
        cols = [c.lower() for c in request.colNames or []]
        names = [_hive_case_partition_name(name) for name in request.partNames or []]
        try:
            found = self.ctx.store.get_partition_column_statistics(catalog, db, table, names, cols)
        except hms.NoSuchObjectException:
            raise hms.NoSuchObjectException(message=f"Specified database/table does not exist : {db}.{table}") \
                from None
        return aggregate_stats(found, cols, names)

    def delete_table_column_statistics(self, db_name: str, tbl_name: str, col_name: str | None,
                                       engine: str | None = None) -> bool:
        catalog, db = split_catalog(db_name)
        table = self.ctx.store.get_table(catalog, db, lower(tbl_name, "table"))
        column = col_name.lower() if col_name else None
        self.ctx.store.delete_table_column_statistics(
            catalog, db, present(table.tableName), column,
            journal=Journal.of(messages.delete_table_column_stat(table, column)))
        return True

    def delete_partition_column_statistics(self, db_name: str, tbl_name: str, part_name: str, col_name: str | None,
                                           engine: str | None = None) -> bool:
        catalog, db = split_catalog(db_name)
        table = self.ctx.store.get_table(catalog, db, lower(tbl_name, "table"))
        column = col_name.lower() if col_name else None
        try:
            values = [v for _, v in parse_partition_name(part_name or "")]
        except ValueError as exc:
            raise hms.InvalidInputException(message=str(exc)) from None
        self.ctx.store.delete_partition_column_statistics(
            catalog, db, present(table.tableName), part_name, column,
            journal=Journal.of(messages.delete_part_column_stat(table, values, column)))
        return True


def _hive_case_partition_name(name: str) -> str:
    """A requested partition name as Hive reads it (lowerCaseConvertPartName): key names lower-cased, values
    as given, only `key=value` components; a name with none is refused as Hive refuses it."""
    pairs = [(key.lower(), value) for key, sep, value in (c.partition("=") for c in name.split("/"))
             if sep and key and value]
    if not pairs:
        raise hms.MetaException(message=f"Partition name is invalid. {name}")
    return "/".join(f"{key}={value}" for key, value in pairs)
