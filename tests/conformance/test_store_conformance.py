"""The store conformance suite: one set of tests that every RawStore implementation must pass.

A store is a small, obvious piece of work only if what it owes is written down and checked: these tests
drive the three parts of the interface (store/rawstore.py: metadata, transactions and locks, the event
log) directly, with the values the handler would give, and assert what every caller relies on: answers,
orders, the declared exception types, and that a failed write changes nothing. Each store kind below runs
all of them; a new store joins by adding its kind to `STORES`.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.hive.partition_filter import compile_partition_filter, names_matching
from hmsproxy.idl import hms
from hmsproxy.ops.metrics import Metrics
from hmsproxy.store.cache.cached_store import CachedStore
from hmsproxy.store.cache.policy import CachePolicy
from hmsproxy.store.cache.shared_cache import SharedCache
from hmsproxy.store.domain import TableBundle
from hmsproxy.store.rawstore import RawStore
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.schema_setup import init_schema
from hmsproxy.store.sql.stats_codec import stats_as_stored
from hmsproxy.store.sql.store import SqlStore
from hmsproxy.upstream.pool import UpstreamPool
from hmsproxy.upstream.store import UpstreamStore
from support.builders import partition, sd
from support.databases import fresh_database
from support.hmsproxy_server import start_hmsproxy

CAT = "hive"
# Where the test's objects say they live; a store whose upstream creates directories creates them here.
WAREHOUSE_DIR = Path(tempfile.gettempdir()) / f"hmsproxy-conformance-{uuid.uuid4().hex[:8]}"
WAREHOUSE = f"file:{WAREHOUSE_DIR}"


@pytest.fixture(scope="module", autouse=True)
def _warehouse_removed_afterwards() -> Iterator[None]:
    yield
    shutil.rmtree(WAREHOUSE_DIR, ignore_errors=True)


@contextlib.contextmanager
def _sql(backend: str, workdir: Path) -> Iterator[SqlStore]:
    with fresh_database(backend, workdir) as url:
        db = Database(url)
        init_schema(db, WAREHOUSE)
        store = SqlStore(db)
        try:
            yield store
        finally:
            store.close()


@contextlib.contextmanager
def _cached(backend: str, workdir: Path) -> Iterator[RawStore]:
    """The cache over the database, as `serve` builds it (without the threads that load and poll)."""
    with _sql(backend, workdir) as sql:
        yield CachedStore(sql, SharedCache(max_bytes=1 << 30), CachePolicy.from_patterns(), Metrics(), stats_as_stored)


@contextlib.contextmanager
def _upstream(workdir: Path) -> Iterator[RawStore]:
    """The store that speaks the HMS API to another metastore: here an hmsproxy server on SQLite."""
    server = start_hmsproxy(workdir / "upstream", warehouse=str(WAREHOUSE_DIR), cache=False)
    store = UpstreamStore(UpstreamPool(f"thrift://{server.host}:{server.port}"))
    try:
        yield store
    finally:
        store.close()
        server.stop()


STORES: dict[str, Callable[[Path], contextlib.AbstractContextManager[RawStore]]] = {
    **{f"sql-{b}": (lambda workdir, b=b: _sql(b, workdir)) for b in ("sqlite", "mariadb", "postgres")},
    **{f"cached-{b}": (lambda workdir, b=b: _cached(b, workdir)) for b in ("sqlite", "mariadb", "postgres")},
    "upstream-hmsproxy": _upstream,
}


# Where the interface lets a store refuse, what each kind does is pinned here: a store that starts refusing (or
# accepting) then fails the suite instead of passing through the other allowed branch.
REFUSES_COMPARE_AND_SET = {"upstream-hmsproxy"}  # Hive before 4 ignores the expected value: an upstream refuses
LOG_WRITTEN_ELSEWHERE = {"upstream-hmsproxy"}  # the upstream server writes its own notification log


@pytest.fixture(params=sorted(STORES))
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(store_kind: str, tmp_path: Path) -> Iterator[RawStore]:
    with STORES[store_kind](tmp_path) as opened:
        yield opened


def _database(name: str, params: dict[str, str] | None = None) -> object:
    return hms.Database(name=name, description=f"about {name}", locationUri=f"{WAREHOUSE}/{name}.db",
                        parameters=dict(params or {}), ownerName="alice", ownerType=hms.PrincipalType.USER,
                        catalogName=CAT, createTime=1_700_000_000)


def _table(db: str, name: str, *, part_keys: tuple[tuple[str, str], ...] = (), table_type: str = "MANAGED_TABLE",
           params: dict[str, str] | None = None) -> object:
    return hms.Table(tableName=name, dbName=db, catName=CAT, owner="alice", createTime=1_700_000_001,
                     lastAccessTime=0, retention=0, sd=sd(hms, location=f"{WAREHOUSE}/{db}.db/{name}"),
                     partitionKeys=[hms.FieldSchema(name=k, type=t) for k, t in part_keys],
                     parameters=dict(params or {}), tableType=table_type)


def _with_table(store: RawStore, *, part_keys: tuple[tuple[str, str], ...] = (("ds", "string"),)) -> object:
    store.create_database(_database("d"))
    store.create_table(_table("d", "t", part_keys=part_keys))
    return store.get_table(CAT, "d", "t")


def _parts(store: RawStore, parent: object, *values: str) -> list[object]:
    return store.add_partitions(CAT, "d", "t", [partition(hms, parent, [v], location=f"{WAREHOUSE}/d.db/t/ds={v}")
                                                for v in values])


# ---- databases -------------------------------------------------------------------------------------


def test_databases_are_created_read_listed_altered_and_dropped(store: RawStore) -> None:
    store.create_database(_database("b", {"k": "v"}))
    store.create_database(_database("a"))
    got = store.get_database(CAT, "b")
    assert (got.name, got.description, got.locationUri, got.parameters, got.ownerName) == \
        ("b", "about b", f"{WAREHOUSE}/b.db", {"k": "v"}, "alice")
    assert [n for n in store.get_database_names(CAT) if n in ("a", "b")] == ["a", "b"]
    changed = _database("b", {"k": "w", "x": "y"})
    store.alter_database(CAT, "b", changed)
    assert store.get_database(CAT, "b").parameters == {"k": "w", "x": "y"}
    store.drop_database(CAT, "a", cascade=False)
    with pytest.raises(hms.NoSuchObjectException):
        store.get_database(CAT, "a")
    assert "a" not in store.get_database_names(CAT)


def test_a_database_that_exists_or_does_not_is_refused_with_the_declared_exception(store: RawStore) -> None:
    store.create_database(_database("a"))
    with pytest.raises(hms.AlreadyExistsException):
        store.create_database(_database("a"))
    with pytest.raises(hms.NoSuchObjectException):
        store.get_database(CAT, "missing")
    with pytest.raises(hms.NoSuchObjectException):
        store.drop_database(CAT, "missing", cascade=False)


def test_the_default_catalog_exists(store: RawStore) -> None:
    assert CAT in store.get_catalog_names()
    assert store.get_catalog(CAT).name == CAT
    with pytest.raises(hms.NoSuchObjectException):
        store.get_catalog("no_such_catalog")


def test_dropping_a_database_with_tables_needs_cascade_and_reports_what_it_removed(store: RawStore) -> None:
    parent = _with_table(store)
    _parts(store, parent, "1", "2")
    with pytest.raises(hms.InvalidOperationException):
        store.drop_database(CAT, "d", cascade=False)
    assert store.get_table(CAT, "d", "t").tableName == "t"   # the refused drop changed nothing
    dropped = store.drop_database(CAT, "d", cascade=True)
    assert [d.table.tableName for d in dropped] == ["t"]
    assert sorted(dropped[0].partition_locations) == [f"{WAREHOUSE}/d.db/t/ds=1", f"{WAREHOUSE}/d.db/t/ds=2"]
    assert "d" not in store.get_database_names(CAT)


# ---- tables ----------------------------------------------------------------------------------------


def test_tables_are_created_read_and_listed(store: RawStore) -> None:
    store.create_database(_database("d"))
    first = store.create_table(_table("d", "b", params={"p": "1"}))
    second = store.create_table(_table("d", "a", table_type="EXTERNAL_TABLE"))
    assert first != second
    got = store.get_table(CAT, "d", "b")
    assert (got.tableName, got.dbName, got.owner, got.tableType, got.parameters["p"]) == \
        ("b", "d", "alice", "MANAGED_TABLE", "1")
    assert [c.name for c in got.sd.cols] == ["id", "name"]
    assert store.get_table_names(CAT, "d") == ["a", "b"]
    assert store.get_table_names(CAT, "d", "EXTERNAL_TABLE") == ["a"]
    assert [t.tableName for t in store.get_table_objects(CAT, "d", ["b", "missing", "a"])] == ["a", "b"]
    assert [m for m in store.get_table_meta(CAT) if m[0] == "d"] == \
        [("d", "a", "EXTERNAL_TABLE", None), ("d", "b", "MANAGED_TABLE", None)]


def test_a_table_that_exists_or_does_not_is_refused_with_the_declared_exception(store: RawStore) -> None:
    _with_table(store)
    with pytest.raises(hms.AlreadyExistsException):
        store.create_table(_table("d", "t"))
    with pytest.raises(hms.NoSuchObjectException):
        store.get_table(CAT, "d", "missing")
    with pytest.raises(hms.NoSuchObjectException):
        store.drop_table(CAT, "d", "missing")
    with pytest.raises((hms.NoSuchObjectException, hms.InvalidObjectException)):
        store.create_table(_table("missing", "t"))


def test_a_table_is_altered_and_renamed_and_its_old_name_is_free(store: RawStore) -> None:
    table = _with_table(store, part_keys=())
    changed = _table("d", "t", part_keys=(), params={"changed": "yes"})
    store.alter_table(CAT, "d", "t", changed)
    assert store.get_table(CAT, "d", "t").parameters["changed"] == "yes"
    renamed = _table("d", "u", part_keys=(), params={"changed": "yes"})
    renamed.sd.location = table.sd.location
    store.alter_table(CAT, "d", "t", renamed)
    assert store.get_table_names(CAT, "d") == ["u"]
    with pytest.raises(hms.NoSuchObjectException):
        store.get_table(CAT, "d", "t")
    assert store.get_table(CAT, "d", "u").parameters["changed"] == "yes"


def test_a_compare_and_set_alter_applies_only_when_the_parameter_is_as_expected(store: RawStore,
                                                                               store_kind: str) -> None:
    """A store that cannot compare and set atomically (an upstream Hive before 4) refuses every such alter
    with a MetaException and changes nothing."""
    _with_table(store, part_keys=())
    store.alter_table(CAT, "d", "t", _table("d", "t", part_keys=(), params={"metadata_location": "v1"}))
    with pytest.raises(hms.MetaException):
        store.alter_table(CAT, "d", "t", _table("d", "t", part_keys=(), params={"metadata_location": "v3"}),
                          expected_parameter=("metadata_location", "v2"))
    assert store.get_table(CAT, "d", "t").parameters["metadata_location"] == "v1"
    as_expected = _table("d", "t", part_keys=(), params={"metadata_location": "v2"})
    if store_kind in REFUSES_COMPARE_AND_SET:
        with pytest.raises(hms.MetaException):
            store.alter_table(CAT, "d", "t", as_expected, expected_parameter=("metadata_location", "v1"))
        assert store.get_table(CAT, "d", "t").parameters["metadata_location"] == "v1"
    else:
        store.alter_table(CAT, "d", "t", as_expected, expected_parameter=("metadata_location", "v1"))
        assert store.get_table(CAT, "d", "t").parameters["metadata_location"] == "v2"


def test_dropping_a_table_reports_it_and_its_partition_locations(store: RawStore) -> None:
    parent = _with_table(store)
    _parts(store, parent, "1")
    dropped = store.drop_table(CAT, "d", "t")
    assert dropped.table.tableName == "t"
    assert dropped.partition_locations == [f"{WAREHOUSE}/d.db/t/ds=1"]
    assert store.get_table_names(CAT, "d") == []


# ---- partitions ------------------------------------------------------------------------------------


def test_partitions_are_added_and_read_in_name_order(store: RawStore) -> None:
    parent = _with_table(store)
    added = _parts(store, parent, "2", "1", "3")
    assert sorted(p.values[0] for p in added) == ["1", "2", "3"]
    assert [p.values for p in store.get_partitions(CAT, "d", "t")] == [["1"], ["2"], ["3"]]
    assert len(store.get_partitions(CAT, "d", "t", max_parts=2)) == 2
    assert store.get_partition_names(CAT, "d", "t") == ["ds=1", "ds=2", "ds=3"]
    assert store.get_partition_values(CAT, "d", "t") == [("ds=1", ["1"]), ("ds=2", ["2"]), ("ds=3", ["3"])]
    assert [p.values for p in store.get_partitions_by_names(CAT, "d", "t", ["ds=3", "ds=9", "ds=1"])] == \
        [["1"], ["3"]]
    one = store.get_partition(CAT, "d", "t", ["2"])
    assert (one.values, one.dbName, one.tableName, one.sd.location) == \
        (["2"], "d", "t", f"{WAREHOUSE}/d.db/t/ds=2")


def test_partitions_are_selected_by_a_filter_in_name_order(store: RawStore) -> None:
    parent = _with_table(store, part_keys=(("ds", "string"), ("hr", "int")))
    store.add_partitions(CAT, "d", "t", [partition(hms, parent, [ds, hr]) for ds, hr in
                                         [("b", "1"), ("a", "10"), ("a", "2"), ("c", "x")]])

    def names(text: str) -> list[str]:
        return store.get_partition_names_by_filter(CAT, "d", "t", compile_partition_filter(
            text, [("ds", "string"), ("hr", "int")]))

    assert names("ds = 'a'") == ["ds=a/hr=10", "ds=a/hr=2"]
    assert names("hr > 1") == ["ds=a/hr=10", "ds=a/hr=2"]       # as integers; "x" is no integer
    assert names("ds like 'b.*' or hr >= 10") == ["ds=a/hr=10", "ds=b/hr=1"]
    assert names("hr != 2") == ["ds=a/hr=10", "ds=b/hr=1"]
    assert names("") == ["ds=a/hr=10", "ds=a/hr=2", "ds=b/hr=1", "ds=c/hr=x"]
    assert names("ds = 'z'") == []


def test_a_filter_answers_what_its_predicate_answers_over_every_partition(store: RawStore) -> None:
    """A database store narrows a filter's candidates in SQL first (equalities on string keys): values a MariaDB
    collation finds equal (case, trailing spaces), an int key stored as "07", characters beyond the BMP and the
    empty string must still come out exactly as the predicate alone decides."""
    keys = [("ds", "string"), ("hr", "int")]
    parent = _with_table(store, part_keys=tuple(keys))
    store.add_partitions(CAT, "d", "t", [partition(hms, parent, [ds, hr]) for ds, hr in [
        ("a", "1"), ("A", "1"), ("a ", "2"), ("b", "07"), ("b", "7"), ("\U0001F600", "3"), ("", "4"), ("c", "x")]])
    everything = store.get_partition_values(CAT, "d", "t")
    for text in ["ds = 'a'", "ds = 'A'", "ds = 'a '", "ds = 'a' and hr = 1", "ds = 'b' and hr = 7",
                 "(ds) in ('a', 'b')", "ds = 'a' or ds = 'b'", "ds = 'a' or hr = 7", "ds = '\U0001F600'", "ds = ''",
                 "ds = 'b' and hr > 5", "hr = 7", "ds = 'b' and (hr = 7 or ds = 'a')", "ds = 'z'"]:
        compiled = compile_partition_filter(text, keys)
        assert store.get_partition_names_by_filter(CAT, "d", "t", compiled) == \
            names_matching(everything, compiled), text


def test_a_partition_that_exists_or_does_not_is_refused_and_nothing_of_the_batch_is_added(store: RawStore) -> None:
    parent = _with_table(store)
    _parts(store, parent, "1")
    with pytest.raises(hms.AlreadyExistsException):
        _parts(store, parent, "2", "1")
    assert store.get_partition_names(CAT, "d", "t") == ["ds=1"]   # "2" was not added either
    assert [p.values for p in store.add_partitions(
        CAT, "d", "t", [partition(hms, parent, ["1"]), partition(hms, parent, ["2"])], if_not_exists=True)] == [["2"]]
    with pytest.raises(hms.NoSuchObjectException):
        store.get_partition(CAT, "d", "t", ["9"])


def test_partitions_are_altered_renamed_and_dropped(store: RawStore) -> None:
    parent = _with_table(store)
    _parts(store, parent, "1", "2")
    changed = store.get_partition(CAT, "d", "t", ["1"])
    changed.parameters = {**changed.parameters, "k": "v"}
    store.alter_partitions(CAT, "d", "t", [changed])
    assert store.get_partition(CAT, "d", "t", ["1"]).parameters["k"] == "v"
    renamed = store.get_partition(CAT, "d", "t", ["2"])
    renamed.values = ["5"]
    store.rename_partition(CAT, "d", "t", ["2"], renamed)
    assert store.get_partition_names(CAT, "d", "t") == ["ds=1", "ds=5"]
    store.update_partition_column_statistics(CAT, _stats("t", "id", "ds=1", 1, 2), ["1"])
    dropped = store.drop_partitions(CAT, "d", "t", ["ds=1"])
    assert [p.values for p in dropped] == [["1"]]
    assert store.get_partition_names(CAT, "d", "t") == ["ds=5"]
    _parts(store, parent, "1")   # a partition of the same name is a new one: without the old one's statistics
    assert store.get_partition_column_statistics(CAT, "d", "t", ["ds=1"], ["id"]) == {}
    store.drop_partitions(CAT, "d", "t", ["ds=1"])
    with pytest.raises(hms.NoSuchObjectException):
        store.drop_partitions(CAT, "d", "t", ["ds=1"])
    assert store.drop_partitions(CAT, "d", "t", ["ds=1"], if_exists=True) == []


def test_a_table_bundle_holds_the_table_its_partitions_and_statistics(store: RawStore) -> None:
    parent = _with_table(store)
    _parts(store, parent, "1", "2")
    store.update_table_column_statistics(CAT, _stats("t", "id", None, 1, 9))
    store.update_partition_column_statistics(CAT, _stats("t", "id", "ds=1", 1, 5), ["1"])
    bundle: TableBundle = store.get_table_bundle(CAT, "d", "t")
    assert bundle.table.tableName == "t"
    assert sorted(p.values[0] for p in bundle.partitions) == ["1", "2"]
    assert bundle.table_stats["id"].statsData.longStats.highValue == 9
    assert bundle.partition_stats["ds=1"]["id"].statsData.longStats.highValue == 5
    assert bundle.write_ids is None   # not transactional
    chunks: list[list[object]] = []
    streamed = store.get_table_bundle(CAT, "d", "t", partition_sink=lambda table, chunk, ids: chunks.append(chunk))
    assert streamed.partitions == [] and sorted(p.values[0] for c in chunks for p in c) == ["1", "2"]


def _by_name(partitions: list[object]) -> dict[str, object]:
    return {"/".join(p.values): p for p in partitions}


def test_bundles_read_together_equal_bundles_read_one_by_one(store: RawStore) -> None:
    """What prewarm reads for many tables at once is exactly what it would read table by table: tables,
    partitions with every field (odd values and parameters included), statistics, write ids and versions."""
    store.create_database(_database("d"))
    store.create_database(_database("e"))
    store.create_table(_table("d", "t", part_keys=(("ds", "string"), ("hr", "int"))))
    store.create_table(_table("d", "plain", params={"k": "v"}))
    store.create_table(_table("e", "u", part_keys=(("ds", "string"),), params={"owner": "e"}))
    store.create_table(_table("e", "acid", part_keys=(("ds", "string"),),
                              params={"transactional": "true", "transactional_properties": "insert_only"}))
    odd = {"quote\"s": "back\\slash", "ünï": "日本", "empty": "", "json": '{"a": [1, "2"]}'}
    t, u = store.get_table(CAT, "d", "t"), store.get_table(CAT, "e", "u")
    parts = [partition(hms, t, [f"2024-01-0{i}", str(i)], params={"i": str(i), **odd},
                       location=f"{WAREHOUSE}/d.db/t/p{i}") for i in range(1, 6)]
    parts[2].sd.bucketCols, parts[2].sd.numBuckets = ["name", "id"], 4
    parts[2].sd.sortCols = [hms.Order(col="name", order=0), hms.Order(col="id", order=1)]
    parts[2].sd.parameters = {"sd": "ü", "other": "2"}
    parts[2].sd.serdeInfo.parameters = {"serialization.format": "1", "field.delim": ",", "escape.delim": "\\"}
    store.add_partitions(CAT, "d", "t", parts)
    store.add_partitions(CAT, "e", "u", [partition(hms, u, [v], location=f"{WAREHOUSE}/e.db/u/{v}")
                                         for v in ("a/b", "c=d", "%")])
    store.update_table_column_statistics(CAT, _stats("t", "id", None, 1, 9))
    store.update_partition_column_statistics(CAT, _stats("t", "id", "ds=2024-01-01/hr=1", 1, 5),
                                             ["2024-01-01", "1"])
    names = [("d", "t"), ("d", "plain"), ("e", "u"), ("e", "acid"), ("d", "missing")]
    together = {(b.table.dbName, b.table.tableName): b for b in store.get_table_bundles(CAT, names)}
    assert sorted(together) == sorted(names[:4])   # the missing table is left out
    for db, name in names[:4]:
        alone, bundle = store.get_table_bundle(CAT, db, name), together[(db, name)]
        assert bundle.table == alone.table
        assert _by_name(bundle.partitions) == _by_name(alone.partitions)
        assert (bundle.table_stats, bundle.partition_stats) == (alone.table_stats, alone.partition_stats)
        assert str(bundle.write_ids) == str(alone.write_ids) and bundle.version == alone.version
    assert _by_name(together[("d", "t")].partitions)["2024-01-01/1"].parameters.items() >= {"i": "1", **odd}.items()
    assert sorted(_by_name(together[("e", "u")].partitions)) == ["%", "a/b", "c=d"]
    rich = _by_name(together[("d", "t")].partitions)["2024-01-03/3"].sd
    assert (rich.bucketCols, rich.sortCols, rich.parameters) == (["name", "id"], [
        hms.Order(col="name", order=0), hms.Order(col="id", order=1)], {"sd": "ü", "other": "2"})
    assert rich.serdeInfo.parameters == {"serialization.format": "1", "field.delim": ",", "escape.delim": "\\"}
    assert rich.numBuckets == 4 and rich.location == f"{WAREHOUSE}/d.db/t/p3"
    assert together[("d", "t")].partition_stats["ds=2024-01-01/hr=1"]["id"].statsData.longStats.highValue == 5
    counts = store.partition_counts(CAT)
    assert counts is None or {key: n for key, n in counts.items() if n} == {("d", "t"): 5, ("e", "u"): 3}


# ---- functions -------------------------------------------------------------------------------------


def _function(name: str, class_name: str = "org.example.Upper") -> object:
    return hms.Function(functionName=name, dbName="d", className=class_name, ownerName="alice",
                        ownerType=hms.PrincipalType.USER, createTime=1_700_000_002, functionType=hms.FunctionType.JAVA,
                        resourceUris=[hms.ResourceUri(resourceType=hms.ResourceType.JAR, uri="file:/lib/u.jar")],
                        catName=CAT)


def test_functions_are_created_read_listed_altered_and_dropped(store: RawStore) -> None:
    store.create_database(_database("d"))
    store.create_function(_function("upper"))
    store.create_function(_function("lower"))
    got = store.get_function(CAT, "d", "upper")
    assert (got.className, got.resourceUris[0].uri) == ("org.example.Upper", "file:/lib/u.jar")
    assert [f.functionName for f in store.get_functions(CAT, "d")] == ["lower", "upper"]
    with pytest.raises(hms.AlreadyExistsException):
        store.create_function(_function("upper"))
    store.alter_function(CAT, "d", "upper", _function("upper", "org.example.Upper2"))
    assert store.get_function(CAT, "d", "upper").className == "org.example.Upper2"
    store.drop_function(CAT, "d", "lower")
    with pytest.raises(hms.NoSuchObjectException):
        store.get_function(CAT, "d", "lower")


# ---- column statistics -----------------------------------------------------------------------------


def _stats(table: str, column: str, part_name: str | None, low: int, high: int) -> object:
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName="d", tableName=table,
                                           partName=part_name, lastAnalyzed=1_700_000_003),
        statsObj=[hms.ColumnStatisticsObj(colName=column, colType="int", statsData=hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=low, highValue=high, numNulls=0, numDVs=high - low + 1)))])


def test_column_statistics_are_written_read_and_deleted(store: RawStore) -> None:
    parent = _with_table(store)
    _parts(store, parent, "1", "2")
    store.update_table_column_statistics(CAT, _stats("t", "id", None, 1, 9))
    [table_stats] = store.get_table_column_statistics(CAT, "d", "t", ["id", "name"])
    assert (table_stats.colName, table_stats.statsData.longStats.lowValue) == ("id", 1)
    store.update_partition_column_statistics(CAT, _stats("t", "id", "ds=2", 3, 4), ["2"])
    by_partition = store.get_partition_column_statistics(CAT, "d", "t", ["ds=1", "ds=2"], ["id"])
    assert list(by_partition) == ["ds=2"] and by_partition["ds=2"][0].statsData.longStats.highValue == 4
    store.delete_partition_column_statistics(CAT, "d", "t", "ds=2", "id")
    assert store.get_partition_column_statistics(CAT, "d", "t", ["ds=2"], ["id"]) == {}
    store.delete_table_column_statistics(CAT, "d", "t", None)
    assert store.get_table_column_statistics(CAT, "d", "t", ["id"]) == []


def test_statistics_of_a_missing_table_are_refused(store: RawStore) -> None:
    store.create_database(_database("d"))
    with pytest.raises((hms.NoSuchObjectException, hms.InvalidObjectException)):
        store.update_table_column_statistics(CAT, _stats("missing", "id", None, 1, 2))


# ---- transactions, write ids and locks -------------------------------------------------------------


def test_transactions_open_commit_and_abort(store: RawStore) -> None:
    first, second, third = store.open_txns(3, "alice", "host", "agent", None)
    assert first < second < third
    store.commit_txn(first)
    store.abort_txns([second])
    high, txns = store.get_open_txns()
    states = {t.id: t.state for t in txns}
    assert high >= third
    assert first not in states and states[second] == hms.TxnState.ABORTED and states[third] == hms.TxnState.OPEN
    snapshot = store.current_txn_list()
    assert not snapshot.is_valid(third) and not snapshot.is_valid(second) and snapshot.is_valid(first)
    with pytest.raises(hms.TxnAbortedException):
        store.commit_txn(second)
    with pytest.raises(hms.NoSuchTxnException):
        store.commit_txn(third + 1000)


def test_write_ids_are_allocated_per_table_and_seen_in_snapshots(store: RawStore) -> None:
    assert store.keeps_write_ids  # every kind here has a schema (or an upstream) with Hive's write id tables
    _with_table(store, part_keys=())
    txn, other = store.open_txns(2, "alice", "host", None, None)
    [(got_txn, write_id)] = store.allocate_write_ids("d", "t", [txn])
    assert got_txn == txn and write_id == 1
    assert store.allocate_write_ids("d", "t", [txn]) == [(txn, 1)]   # the one it already has
    assert store.allocate_write_ids("d", "t", [other]) == [(other, 2)]
    [before] = store.valid_write_ids(["d.t"], store.current_txn_list())
    assert before.high_watermark == 2 and set(before.open_ids) == {1, 2}
    store.commit_txn(txn)
    [after] = store.valid_write_ids(["d.t"], store.current_txn_list())
    assert after.is_valid(1) and not after.is_valid(2)


def _exclusive(table: str) -> object:
    return hms.LockComponent(type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname="d", tablename=table)


def test_a_conflicting_lock_waits_until_the_holder_releases_it(store: RawStore) -> None:
    _with_table(store, part_keys=())
    held = store.lock([_exclusive("t")], None, "alice", "host", None)
    waiting = store.lock([_exclusive("t")], None, "bob", "host", None)
    assert held.state == hms.LockState.ACQUIRED and waiting.state == hms.LockState.WAITING
    assert store.lock([_exclusive("other")], None, "carol", "host", None).state == hms.LockState.ACQUIRED
    shown = store.show_locks("d", "t", None, None)
    assert [(lock.lockid, lock.state) for lock in shown] == \
        [(held.lock_id, hms.LockState.ACQUIRED), (waiting.lock_id, hms.LockState.WAITING)]
    assert store.check_lock(waiting.lock_id).state == hms.LockState.WAITING
    store.unlock(held.lock_id)
    assert store.check_lock(waiting.lock_id).state == hms.LockState.ACQUIRED
    with pytest.raises(hms.NoSuchLockException):
        store.check_lock(held.lock_id)


def test_heartbeats_reach_live_transactions_and_report_the_others(store: RawStore) -> None:
    live, aborted = store.open_txns(2, "alice", "host", None, None)
    store.abort_txns([aborted])
    store.heartbeat(None, live)
    with pytest.raises(hms.TxnAbortedException):
        store.heartbeat(None, aborted)
    aborted_ids, missing_ids = store.heartbeat_txn_range(live, aborted + 1)
    assert aborted_ids == {aborted} and missing_ids == {aborted + 1}


# ---- the notification log --------------------------------------------------------------------------


def test_events_are_appended_in_order_and_read_back_with_filters(store: RawStore, store_kind: str) -> None:
    parent = _with_table(store)
    start = store.current_event_id()
    events_to_add = [messages.insert(parent, None, ["file:/x"]), messages.create_database(_database("e"))]
    if store_kind in LOG_WRITTEN_ELSEWHERE:
        with pytest.raises(hms.MetaException):
            store.add_events(events_to_add)
        assert store.current_event_id() == start
        return
    ids = store.add_events(events_to_add)
    assert ids == [start + 1, start + 2] and store.current_event_id() == start + 2
    events = store.get_events(start)
    assert [(e.eventId, e.eventType, e.dbName) for e in events] == \
        [(start + 1, messages.INSERT, "d"), (start + 2, messages.CREATE_DATABASE, "e")]
    assert [e.eventId for e in store.get_events(start, db="d")] == [start + 1]
    assert [e.eventId for e in store.get_events(start, skip_types=[messages.INSERT])] == [start + 2]
    assert len(store.get_events(start, limit=1)) == 1
    assert store.count_events(start, "d") == 1
    assert store.table_version("d", "t") == start + 1
    oldest = store.oldest_event_id()
    assert oldest is not None and oldest <= start + 1


def test_the_log_holds_an_event_for_each_write_made_through_the_metastore(store: RawStore) -> None:
    """Writes the handler makes emit their events; a store in front of another metastore sees the events
    that metastore logs for the writes it is sent (here an hmsproxy upstream logs every write)."""
    start = store.current_event_id()
    store.create_database(_database("d"), journal=Journal.of(messages.create_database(_database("d"))))
    events = store.get_events(start)
    assert [(e.eventType, e.dbName) for e in events] == [(messages.CREATE_DATABASE, "d")]
    assert store.current_event_id() == events[-1].eventId
