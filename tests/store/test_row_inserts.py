"""A write's rows for several tables go in as few round trips as the database allows (one query on MySQL and
MariaDB, rendered as literals): every value arrives as given, a statement that fails in the middle of the query
fails the call and leaves nothing, and a plain add asks nothing about existing partitions (the unique key on
partition names refuses one that exists, also when two processes add it at once)."""
import multiprocessing

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DataError

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.idl import hms
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.row_inserts import joined_queries
from hmsproxy.store.sql.store import SqlStore
from support.databases import BACKENDS
from support.processes import run_at_once
from support.sql_stores import add_table_t, fresh_store
from support.statements import statements_sent

# Text a renderer could get wrong: quotes, backslashes (MySQL escapes with them unless NO_BACKSLASH_ESCAPES), the
# driver's own placeholders, a semicolon between statements, control characters, characters beyond ASCII.
AWKWARD = ["it's", 'say "hi"', "back\\slash\\", "\\'", "%s %(x)s %%", "a; DROP TABLE TBLS; --", "tab\tnew\nline",
           "\x01\x1f", "Zürich 東京 🙂", "", " trailing "]

OWNED_ROWS = (s.SDS, s.SERDES, s.SERDE_PARAMS, s.SD_PARAMS, s.BUCKETING_COLS, s.SORT_COLS, s.PARTITIONS,
              s.PARTITION_KEY_VALS, s.PARTITION_PARAMS, s.NOTIFICATION_LOG)


def _sd(location: str, text: str = "x", flag: bool = False) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="id", type="int")], location=location, inputFormat=text, outputFormat="out",
        compressed=flag, storedAsSubDirectories=not flag, numBuckets=3 if flag else -1,
        bucketCols=["id"] if flag else [], sortCols=[hms.Order(col="id", order=1)] if flag else [],
        serdeInfo=hms.SerDeInfo(name=text or None, serializationLib="lib", parameters={"p": text}),
        parameters={"sd": text} if flag else {})


def _partition(root: str, i: int, text: str = "x", param: str | None = None) -> hms.Partition:
    """Partition k=i, `text` in its descriptor's fields and parameters, `param` (else `text`) in its own."""
    return hms.Partition(values=[str(i)], dbName="d", tableName="t", sd=_sd(f"{root}/k={i}", text, i % 2 == 0),
                         parameters={"n": str(i), "text": text if param is None else param}, createTime=1,
                         lastAccessTime=0)


def _counts(store: SqlStore) -> dict[str, int]:
    with store.db.transaction() as conn:
        return {table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in OWNED_ROWS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_value_arrives_as_given(backend, tmp_path):
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        written = [_partition(root, i, text) for i, text in enumerate(AWKWARD)]
        store.add_partitions("hive", "d", "t", written)
        read = {int(p.values[0]): p for p in store.get_partitions("hive", "d", "t")}
        assert sorted(read) == list(range(len(AWKWARD)))
        for i, text in enumerate(AWKWARD):
            part, sd = read[i], read[i].sd
            assert part.parameters == {"n": str(i), "text": text}
            assert (sd.inputFormat, sd.serdeInfo.parameters, sd.parameters) == (
                text, {"p": text}, {"sd": text} if i % 2 == 0 else {})
            assert (sd.compressed, sd.storedAsSubDirectories, sd.numBuckets) == (
                i % 2 == 0, i % 2 == 1, 3 if i % 2 == 0 else -1)
            assert sd.bucketCols == (["id"] if i % 2 == 0 else [])
            assert sd.serdeInfo.name == (text or None)
            assert sd.location == f"{root}/k={i}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_plain_add_asks_nothing_first_and_sends_its_rows_in_one_query(backend, tmp_path):
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        store.add_partitions("hive", "d", "t", [_partition(root, 0)])   # reserves the first blocks of ids
        sent, _ = statements_sent(store, lambda: store.add_partitions(
            "hive", "d", "t", [_partition(root, i) for i in range(1, 200)]))
        assert not [statement for statement in sent if "PART_NAME" in statement.split("FROM")[0]
                    and statement.lstrip().upper().startswith("SELECT")]
        inserts = [statement for statement in sent if "INSERT" in statement and "NOTIFICATION_LOG" not in statement]
        if backend != "sqlite":
            quote = "`" if backend == "mariadb" else '"'
            assert len(inserts) == 1
            assert all(f"INSERT INTO {quote}{table}{quote}" in inserts[0] for table in (
                "SERDES", "SDS", "SERDE_PARAMS", "SD_PARAMS", "BUCKETING_COLS", "SORT_COLS", "PARTITIONS",
                "PARTITION_KEY_VALS", "PARTITION_PARAMS"))
        assert len(store.get_partitions("hive", "d", "t")) == 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_its_event_an_add_sends_its_rows_in_the_query_that_appends_the_event(backend, tmp_path):
    """An add handed a journal leaves its rows to the commit: on MySQL they go in the one query that numbers and
    writes the event: one round trip fewer than a query of their own."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        store.add_partitions("hive", "d", "t", [_partition(root, 0)])   # reserves the first blocks of ids
        table = store.get_table("hive", "d", "t")
        parts = [_partition(root, i) for i in range(1, 50)]
        journal = Journal([messages.add_partition(table, parts)])
        sent, _ = statements_sent(store, lambda: store.add_partitions("hive", "d", "t", parts, journal=journal))
        writes = [statement for statement in sent if "INSERT" in statement]
        if backend == "mariadb":
            assert len(writes) == 1
            assert all(f"INSERT INTO `{table}`" in writes[0] for table in ("NOTIFICATION_LOG", "SDS", "PARTITIONS"))
        assert len(journal.event_ids) == 1 and journal.rows == []
        assert len(store.get_partitions("hive", "d", "t")) == 50
        assert _counts(store)["NOTIFICATION_LOG"] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partition_that_exists_fails_the_add_and_leaves_nothing(backend, tmp_path):
    """On MySQL the failing insert (PARTITIONS) comes after the descriptors' inserts in the same query: the
    call must fail there, not commit the rows before it."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        store.add_partitions("hive", "d", "t", [_partition(root, i) for i in range(5)])
        before = _counts(store)
        again = [_partition(root, i) for i in (7, 8, 3, 9)]
        table = store.get_table("hive", "d", "t")
        with pytest.raises(hms.AlreadyExistsException) as refused:
            store.add_partitions("hive", "d", "t", again, journal=Journal([messages.add_partition(table, again)]))
        assert "values:[3]" in refused.value.message
        assert _counts(store) == before
        store.add_partitions("hive", "d", "t", [_partition(root, i) for i in (7, 8, 9)])
        assert sorted(int(p.values[0]) for p in store.get_partitions("hive", "d", "t")) == [0, 1, 2, 3, 4, 7, 8, 9]


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_beyond_one_query_go_in_several(backend, tmp_path):
    root = f"file:{tmp_path}/d/t"
    long_text = "v" * 700
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        sent, _ = statements_sent(store, lambda: store.add_partitions(
            "hive", "d", "t", [_partition(root, i, param=long_text) for i in range(1500)]))
        if backend != "sqlite":   # 1,500 parameters of 700 characters: more than one query holds
            assert sum("PARTITION_PARAMS" in statement for statement in sent if statement.startswith("INSERT")) >= 2
        parts = store.get_partitions("hive", "d", "t")
        assert sorted(int(p.values[0]) for p in parts) == list(range(1500))
        assert {p.parameters["text"] for p in parts} == {long_text}
        assert _counts(store)["PARTITION_PARAMS"] == 2 * 1500


def test_queries_hold_every_row_once_in_order_within_the_limit():
    statements = [("INSERT A ", [f"({i})" for i in range(50)]), ("INSERT B ", ["(" + "x" * 30 + ")"]),
                  ("INSERT C ", [f"({i:03d})" for i in range(20)])]
    for limit in (10, 40, 100, 1000, 10_000):
        queries = joined_queries(statements, limit)
        rows = [(head, row) for query in queries for statement in query.split(";")
                for head in [statement[:9]] for row in statement[9:].split(",")]
        assert rows == [(head, row) for head, rows_of in statements for row in rows_of]
        for query in queries:   # over the limit only where one statement holds a single row
            assert len(query) <= limit or (";" not in query and "," not in query)


def test_statements_without_rows_are_joined_within_the_limit_too():
    """Deletes are whole statements (row_deletes.py): many of them fill several queries, each within the limit."""
    statements = [(f"DELETE FROM T{i} WHERE ID IN (1,2,3)", []) for i in range(30)]
    queries = joined_queries(statements, 100)
    assert [statement for query in queries for statement in query.split(";")] == [head for head, _ in statements]
    assert len(queries) > 1 and all(len(query) <= 100 for query in queries)


def _add_at_once(url: str, root: str, start: "multiprocessing.synchronize.Barrier",
                 results: "multiprocessing.Queue[list[str]]") -> None:
    """One process's adds of the rounds' partitions, each begun with the other process's: its outcomes."""
    from hmsproxy.store.sql.database import Database
    store = SqlStore(Database(url))
    outcomes = []
    for round_ in range(20):
        start.wait()
        try:
            store.add_partitions("hive", "d", "t", [_partition(root, round_ * 10 + i) for i in range(10)])
            outcomes.append("added")
        except hms.AlreadyExistsException:
            outcomes.append("exists")
    store.close()
    results.put(outcomes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_processes_adding_the_same_partitions_at_once_add_them_once(backend, tmp_path):
    """Each round, two processes add the same ten partitions at the same moment: one adds them, the other is
    told they exist (never an internal error, never both), and no row of the loser's is left behind."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        outcomes = run_at_once(_add_at_once, [(str(store.db.url), root)] * 2)
        assert [sorted(pair) for pair in zip(*outcomes)] == [["added", "exists"]] * 20
        counts = _counts(store)
        assert (counts["PARTITIONS"], counts["PARTITION_KEY_VALS"], counts["SDS"], counts["SERDES"]) == (
            200, 200, 201, 201)


@pytest.mark.parametrize("backend", BACKENDS)
def test_partitions_share_the_tables_column_descriptor_only_while_their_columns_are_the_tables(backend, tmp_path):
    """As Hive: a partition whose columns are the table's (names, types, comments, in order) points at the table's
    column descriptor; any other gets its own. What counts is the table's columns when the partition is added."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        same, commented, wider = (_partition(root, i) for i in range(3))
        commented.sd.cols = [hms.FieldSchema(name="id", type="int", comment="the id")]
        wider.sd.cols = [hms.FieldSchema(name="id", type="int"), hms.FieldSchema(name="v", type="string")]
        store.add_partitions("hive", "d", "t", [same, commented, wider])
        first_cd, first_cds = _column_descriptors(store)
        table = store.get_table("hive", "d", "t")
        table.sd.cols = wider.sd.cols
        store.alter_table("hive", "d", "t", table)
        store.add_partitions("hive", "d", "t", [_partition(root, 3)])   # the table's old columns: its own now
        widened = _partition(root, 4)
        widened.sd.cols = wider.sd.cols
        store.add_partitions("hive", "d", "t", [widened])
        table_cd, cds = _column_descriptors(store)
        assert [first_cds[f"k={i}"] == first_cd for i in range(3)] == [True, False, False]
        assert [cds[f"k={i}"] == table_cd for i in range(5)] == [first_cd == table_cd, False, False, False, True]
        assert len({cds["k=1"], cds["k=2"], cds["k=3"], first_cd}) == 4
        read = {p.values[0]: [(c.name, c.type, c.comment) for c in p.sd.cols]
                for p in store.get_partitions("hive", "d", "t")}
        assert read == {"0": [("id", "int", None)], "1": [("id", "int", "the id")],
                        "2": [("id", "int", None), ("v", "string", None)], "3": [("id", "int", None)],
                        "4": [("id", "int", None), ("v", "string", None)]}


def _column_descriptors(store: SqlStore) -> tuple[int, dict[str, int]]:
    """The table's CD_ID and each partition's."""
    with store.db.transaction() as conn:
        table_cd = conn.execute(select(s.SDS.c.CD_ID).join(s.TBLS, s.TBLS.c.SD_ID == s.SDS.c.SD_ID)).scalar_one()
        cds = dict(conn.execute(select(s.PARTITIONS.c.PART_NAME, s.SDS.c.CD_ID).join(
            s.SDS, s.SDS.c.SD_ID == s.PARTITIONS.c.SD_ID)).all())
    return table_cd, cds


@pytest.mark.parametrize("backend", BACKENDS)
def test_text_holding_nul_is_stored_or_refused_as_the_driver_would(backend, tmp_path):
    """PostgreSQL text cannot hold NUL, and a NUL in a literal would end the query there: such rows go as
    parameters, which the driver refuses with nothing written. The other databases store it."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        parts = [_partition(root, 0), _partition(root, 1, param="a\x00'); DROP TABLE TBLS; --")]
        if backend == "postgres":
            with pytest.raises(DataError, match="NUL"):
                store.add_partitions("hive", "d", "t", parts)
            assert _counts(store)["PARTITIONS"] == 0
        else:
            store.add_partitions("hive", "d", "t", parts)
            stored = {p.values[0]: p.parameters["text"] for p in store.get_partitions("hive", "d", "t")}
            assert stored == {"0": "x", "1": "a\x00'); DROP TABLE TBLS; --"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_altered_partition_shares_the_tables_column_descriptor_only_with_the_tables_columns(backend, tmp_path):
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        store.add_partitions("hive", "d", "t", [_partition(root, i) for i in range(3)])
        wider = [hms.FieldSchema(name="id", type="int"), hms.FieldSchema(name="v", type="string")]
        changed = {p.values[0]: p for p in store.get_partitions("hive", "d", "t")}
        changed["0"].sd.cols = wider
        changed["1"].parameters["touched"] = "yes"
        store.alter_partitions("hive", "d", "t", [changed["0"], changed["1"]])
        renamed = changed["2"]
        renamed.values = ["9"]
        renamed.sd.cols = wider
        store.rename_partition("hive", "d", "t", ["2"], renamed)
        table_cd, cds = _column_descriptors(store)
        assert [cds["k=0"] == table_cd, cds["k=1"] == table_cd, cds["k=9"] == table_cd] == [False, True, False]
        assert cds["k=0"] != cds["k=9"]
        read = {p.values[0]: [(c.name, c.type) for c in p.sd.cols] for p in store.get_partitions("hive", "d", "t")}
        assert read == {"0": [("id", "int"), ("v", "string")], "1": [("id", "int")],
                        "9": [("id", "int"), ("v", "string")]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_replacing_and_dropping_partitions_delete_their_old_rows_in_one_query(backend, tmp_path):
    """An alter deletes the partition's old descriptor (its serde, parameters, bucketing and sort columns) and its
    own values and parameters; a drop all of that and the partitions: every row of it, none of another
    partition's, and on MySQL and PostgreSQL in one query (one round trip where there were up to fourteen)."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        parts = [_partition(root, i) for i in range(6)]
        parts[3].sd.skewedInfo = hms.SkewedInfo(skewedColNames=["id"], skewedColValues=[["1"], ["2"]],
                                                skewedColValueLocationMaps={("1",): f"{root}/k=3/id=1"})
        store.add_partitions("hive", "d", "t", parts)
        before = _counts(store)
        assert _skew_counts(store) == {"SKEWED_STRING_LIST": 3, "SKEWED_STRING_LIST_VALUES": 3, "SKEWED_VALUES": 2,
                                       "SKEWED_COL_VALUE_LOC_MAP": 1, "SKEWED_COL_NAMES": 1}
        changed = _partition(root, 2, text="new", param="changed")   # k=2: bucketed, sorted, with SD parameters
        sent, _ = statements_sent(store, lambda: store.alter_partitions("hive", "d", "t", [changed]))
        assert _counts(store) == before
        read = {int(p.values[0]): p for p in store.get_partitions("hive", "d", "t")}
        assert read[2].parameters == {"n": "2", "text": "changed"} and read[2].sd.serdeInfo.parameters == {"p": "new"}
        assert read[4].parameters == {"n": "4", "text": "x"} and read[4].sd.bucketCols == ["id"]
        deletes = [statement for statement in sent if statement.lstrip().upper().startswith("DELETE")]
        if backend != "sqlite":
            assert len(deletes) == 1
        sent, _ = statements_sent(store, lambda: store.drop_partitions("hive", "d", "t", ["k=2", "k=3", "k=4"]))
        after = _counts(store)
        per_partition = {name: (before[name] - after[name]) for name in before}
        assert per_partition == {
            "SDS": 3, "SERDES": 3, "SERDE_PARAMS": 3, "SD_PARAMS": 2, "BUCKETING_COLS": 2, "SORT_COLS": 2,
            "PARTITIONS": 3, "PARTITION_KEY_VALS": 3, "PARTITION_PARAMS": 6, "NOTIFICATION_LOG": -1}   # its event
        assert sorted(int(p.values[0]) for p in store.get_partitions("hive", "d", "t")) == [0, 1, 5]
        assert set(_skew_counts(store).values()) == {0}
        if backend != "sqlite":
            assert len([statement for statement in sent if statement.lstrip().upper().startswith("DELETE")]) == 1


def _skew_counts(store: SqlStore) -> dict[str, int]:
    with store.db.transaction() as conn:
        return {table.name: conn.execute(select(func.count()).select_from(table)).scalar_one() for table in (
            s.SKEWED_STRING_LIST, s.SKEWED_STRING_LIST_VALUES, s.SKEWED_VALUES, s.SKEWED_COL_VALUE_LOC_MAP,
            s.SKEWED_COL_NAMES)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_iceberg_commit_replaces_the_tables_rows_in_few_round_trips(backend, tmp_path):
    """alter_table as Iceberg commits (a compare-and-set of metadata_location, journal given): the old descriptor,
    parameters and keys go in one query, the new parameters with the event, and without a rename no statistics
    row is rewritten (before, every partition's were, on every alter). 27 statements on MariaDB before, 11 now."""
    root = f"file:{tmp_path}/d/t"
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", _sd(root))
        store.add_partitions("hive", "d", "t", [_partition(root, i) for i in range(3)])
        before = _counts(store)
        table = store.get_table("hive", "d", "t")
        table.parameters = {"metadata_location": "m0"}
        store.alter_table("hive", "d", "t", table)
        committed = store.get_table("hive", "d", "t")
        table.parameters = {"metadata_location": "m1", "previous_metadata_location": "m0"}
        table.sd = _sd(root, text="new", flag=True)
        journal = Journal([messages.alter_table(committed, table)])
        sent, _ = statements_sent(store, lambda: store.alter_table(
            "hive", "d", "t", table, expected_parameter=("metadata_location", "m0"), journal=journal))
        assert not [statement for statement in sent if "COL_STATS" in statement]
        assert _counts(store) == {**before, "SD_PARAMS": before["SD_PARAMS"] + 1, "BUCKETING_COLS": before[
            "BUCKETING_COLS"] + 1, "SORT_COLS": before["SORT_COLS"] + 1, "NOTIFICATION_LOG": 1}
        read = store.get_table("hive", "d", "t")
        assert read.parameters["metadata_location"] == "m1" and read.sd.serdeInfo.parameters == {"p": "new"}
        assert [k.name for k in read.partitionKeys] == ["k"]
        if backend == "mariadb":
            assert len([statement for statement in sent if statement.lstrip().upper().startswith("DELETE")]) == 1
            assert len(sent) <= 12
