"""A stateful property test: random sequences of writes go to a plain SqlStore and to a CachedStore (each
on its own database), and after every step every read must give the same answer from both.

Loads and evictions are steps too, so reads are checked from memory, from the database behind the
cache, and across the switch between the two."""
from __future__ import annotations

import copy
import uuid

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from hmsproxy.hive.names import make_partition_name
from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.stats_codec import stats_as_stored
from hmsproxy.store.sql.store import SqlStore

CAT, DB = "hive", "d"
TABLES = ["t1", "t2", "t3"]
VALUES = ["a", "b", "c", "d"]
COLUMNS = ["id", "name"]

table_names = st.sampled_from(TABLES)
part_values = st.sampled_from(VALUES)


def _sd(location: str) -> object:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="id", type="bigint"), hms.FieldSchema(name="name", type="string", comment="c")],
        location=location, inputFormat="in", outputFormat="out", compressed=False, numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib="lib", parameters={"p": "1"}), bucketCols=[],
        sortCols=[], parameters={}, skewedInfo=None, storedAsSubDirectories=False)


def _table(name: str, partitioned: bool, params: dict[str, str]) -> object:
    return hms.Table(tableName=name, dbName=DB, catName=CAT, owner="o", createTime=100, lastAccessTime=0,
                     retention=0, sd=_sd(f"file:/w/d.db/{name}"), parameters=dict(params), tableType="MANAGED_TABLE",
                     partitionKeys=[hms.FieldSchema(name="k", type="string")] if partitioned else [])


def _partition(table: str, value: str, params: dict[str, str]) -> object:
    return hms.Partition(values=[value], dbName=DB, tableName=table, catName=CAT, createTime=200, lastAccessTime=0,
                         sd=_sd(f"file:/w/d.db/{table}/k={value}"), parameters=dict(params))


def _long_stats(column: str, low: int, high: int) -> object:
    return hms.ColumnStatisticsObj(colName=column, colType="bigint", statsData=hms.ColumnStatisticsData(
        longStats=hms.LongColumnStatsData(lowValue=low, highValue=high, numNulls=0, numDVs=high - low + 1)))


def _outcome(call):
    """The answer of a call, or the type of exception it raised, in a comparable form."""
    try:
        result = call()
    except Exception as exc:  # the type is what must match
        return ("raised", type(exc).__name__)
    if isinstance(result, (list, tuple)) or type(result).__name__ == "EncodedList":
        return list(result)
    return result


class CacheMatchesDatabase(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = f"/tmp/hmsproxy-equivalence-{uuid.uuid4().hex[:8]}"
        self.plain = self._sql_store("plain")
        self.cache = SharedCache(max_bytes=1 << 30)
        self.cached = CachedStore(self._sql_store("cached"), self.cache, CachePolicy.from_patterns(), Metrics(),
                                  stats_as_stored)
        for store in (self.plain, self.cached):
            store.create_database(hms.Database(name=DB, locationUri="file:/w/d.db", parameters={}, catalogName=CAT,
                                               ownerName="o", ownerType=hms.PrincipalType.USER, createTime=1))
        self.both("create_table", _table("t1", True, {}))
        self.both("create_table", _table("t2", True, {"comment": "x"}))
        self.both("create_table", _table("t3", False, {}))
        for name in ("t1", "t2"):
            self.both("add_partitions", CAT, DB, name, [_partition(name, v, {"n": v}) for v in VALUES[:3]])
        self.cached.load_catalog(CAT)

    def _sql_store(self, name: str) -> SqlStore:
        import os
        os.makedirs(self.tmp, exist_ok=True)
        db = Database(f"sqlite:///{self.tmp}/{name}.db")
        init_schema(db, "file:/w")
        return SqlStore(db)

    def teardown(self) -> None:
        self.plain.close()
        self.cached.close()

    def both(self, method: str, *args):
        """Runs a write on both stores; they must succeed or fail alike."""
        outcomes = [_outcome(lambda s=s: getattr(s, method)(*copy.deepcopy(args))) for s in (self.plain, self.cached)]
        assert outcomes[0] == outcomes[1], (method, args, outcomes)

    # ---- writes ------------------------------------------------------------------------------------

    @rule(name=table_names, partitioned=st.booleans(), comment=st.sampled_from(["", "x"]))
    def create_table(self, name, partitioned, comment):
        self.both("create_table", _table(name, partitioned, {"comment": comment} if comment else {}))

    @rule(name=table_names)
    def drop_table(self, name):
        self.both("drop_table", CAT, DB, name)

    @rule(name=table_names, values=st.lists(part_values, min_size=1, max_size=3), if_not_exists=st.booleans())
    def add_partitions(self, name, values, if_not_exists):
        self.both("add_partitions", CAT, DB, name, [_partition(name, v, {"n": v}) for v in values], if_not_exists)

    @rule(name=table_names, values=st.lists(st.sampled_from([f"m{i:02d}" for i in range(20)]), min_size=10,
                                            max_size=20, unique=True),
          if_not_exists=st.booleans(), tag=st.sampled_from(["1", "2"]))
    def add_batch(self, name, values, if_not_exists, tag):
        """A batch; with if_not_exists only the new ones are added, and one that exists keeps what an earlier batch
        (another tag) gave it."""
        self.both("add_partitions", CAT, DB, name, [_partition(name, v, {"batch": tag}) for v in values],
                  if_not_exists)

    @rule(name=table_names, value=part_values, param=st.sampled_from(["1", "2"]))
    def alter_partition(self, name, value, param):
        self.both("alter_partitions", CAT, DB, name, [_partition(name, value, {"n": param})])

    @rule(name=table_names, old=part_values, new=part_values)
    def rename_partition(self, name, old, new):
        self.both("rename_partition", CAT, DB, name, [old], _partition(name, new, {"renamed": old}))

    @rule(name=table_names, values=st.lists(part_values, max_size=2), if_exists=st.booleans())
    def drop_partitions(self, name, values, if_exists):
        self.both("drop_partitions", CAT, DB, name, [make_partition_name(["k"], [v]) for v in values], if_exists)

    @rule(name=table_names, param=st.sampled_from(["p", "q"]), drop_column=st.booleans())
    def alter_table(self, name, param, drop_column):
        table = _table(name, False, {"param": param})
        if drop_column:
            table.sd.cols = table.sd.cols[:1]
        for store in (self.plain, self.cached):  # keep the partition keys the table has
            try:
                table.partitionKeys = store.get_table(CAT, DB, name).partitionKeys
            except hms.NoSuchObjectException:
                pass
        self.both("alter_table", CAT, DB, name, table)

    @rule(name=table_names, new_name=table_names)
    def rename_table(self, name, new_name):
        try:
            table = copy.deepcopy(self.plain.get_table(CAT, DB, name))
        except hms.NoSuchObjectException:
            return
        table.tableName = new_name
        self.both("alter_table", CAT, DB, name, table, (f"file:/w/d.db/{name}", f"file:/w/d.db/{new_name}"))

    @rule(name=table_names, column=st.sampled_from(COLUMNS + ["nope"]), low=st.integers(0, 5))
    def update_table_stats(self, name, column, low):
        stats = hms.ColumnStatistics(statsDesc=hms.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName=name),
                                     statsObj=[_long_stats(column, low, low + 3)])
        self.both("update_table_column_statistics", CAT, stats)

    @rule(name=table_names, value=part_values, low=st.integers(0, 5))
    def update_partition_stats(self, name, value, low):
        stats = hms.ColumnStatistics(
            statsDesc=hms.ColumnStatisticsDesc(isTblLevel=False, dbName=DB, tableName=name, partName=f"k={value}"),
            statsObj=[_long_stats("id", low, low + 1)])
        self.both("update_partition_column_statistics", CAT, stats, [value])

    @rule(name=table_names, column=st.sampled_from(COLUMNS + [None]))
    def delete_table_stats(self, name, column):
        self.both("delete_table_column_statistics", CAT, DB, name, column)

    @rule(name=st.sampled_from(["f", "g"]), cls=st.sampled_from(["a.B", "c.D"]))
    def create_function(self, name, cls):
        self.both("create_function", hms.Function(functionName=name, dbName=DB, catName=CAT, className=cls,
                                                  ownerName="o", ownerType=1, createTime=5, functionType=1,
                                                  resourceUris=[hms.ResourceUri(resourceType=1, uri="x.jar")]))

    @rule(name=st.sampled_from(["f", "g"]))
    def drop_function(self, name):
        self.both("drop_function", CAT, DB, name)

    # ---- cache movements ---------------------------------------------------------------------------

    @rule(name=table_names)
    def load(self, name):
        self.cached.load_table((CAT, DB, name))

    @rule(name=table_names)
    def evict(self, name):
        self.cache.drop_table((CAT, DB, name))

    # ---- every read agrees -------------------------------------------------------------------------

    @invariant()
    def reads_agree(self):
        reads = [
            ("get_database", (CAT, DB)), ("get_database_names", (CAT,)), ("get_table_names", (CAT, DB)),
            ("get_table_meta", (CAT,)), ("get_functions", (CAT, DB)), ("get_function", (CAT, DB, "f")),
        ]
        for name in TABLES:
            reads += [
                ("get_table", (CAT, DB, name)), ("get_partitions", (CAT, DB, name)),
                ("get_partitions", (CAT, DB, name, 2)), ("get_partition_names", (CAT, DB, name)),
                ("get_partition_values", (CAT, DB, name)),
                ("get_partitions_by_names", (CAT, DB, name, ["k=a", "k=c", "k=z"])),
                ("get_partition", (CAT, DB, name, ["b"])),
                ("get_table_column_statistics", (CAT, DB, name, COLUMNS)),
                ("get_partition_column_statistics", (CAT, DB, name, [f"k={v}" for v in VALUES], COLUMNS)),
            ]
        reads.append(("get_table_objects", (CAT, DB, TABLES)))
        for method, args in reads:
            expected = _outcome(lambda method=method, args=args: getattr(self.plain, method)(*args))
            actual = _outcome(lambda method=method, args=args: getattr(self.cached, method)(*args))
            assert actual == expected, (method, args, expected, actual)


TestCacheMatchesDatabase = CacheMatchesDatabase.TestCase
TestCacheMatchesDatabase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None,
                                             suppress_health_check=[HealthCheck.too_slow])
