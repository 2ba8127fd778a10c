"""A cached entry never goes back in time: a randomized coherence check of two cached instances on one database.

Client processes (spawned, each with its own RNG seeded from one master seed) run random DDL through either
of two hmsproxy instances on one database: create databases, each followed by a burst of table creates
through both instances at once (the failure seen in the field), create, drop, rename and alter tables, add,
drop and alter partitions. A process works only on its own table names (w<i>_...) inside shared databases and
makes its calls one after another, so its acknowledged calls define the exact final state of its objects:
the model it keeps. A call refused with a declared Thrift exception must change nothing.

Along the way every process checks, per instance, that the instance shows a write it has just acknowledged
(read your writes), and never shows an object older than it showed it before (monotonic reads). At the end,
once the instances have had time to catch up, every instance must answer exactly what a --no-cache instance
on the same database (the oracle) answers, and the oracle must hold exactly the union of the models.

Replay with HMSPROXY_COHERENCE_SEED=<seed>: the operation choices repeat, the interleaving does not.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import thriftpy2.rpc
from thriftpy2.thrift import TException

from hmsproxy.idl import hms
from support.builders import placeholder_sd
from support.hmsproxy_server import start_hmsproxy_process
from support.instances import connect, instances_on_one_database

SEED_ENV = "HMSPROXY_COHERENCE_SEED"
WORKERS = 4
OPS = 90                    # random operations per worker, after its first database and burst
BURST_THREADS, BURST_PER_THREAD = 4, 3
SYNC_DEADLINE_S = 15.0      # the instances must equal the oracle within this after the writers stop
WORKER_DEADLINE_S = 240.0
EXTERNAL_ROOT = "s3a://coherence/"   # external tables live here: stored as given, no file-system work
VALUES = [f"v{n}" for n in range(12)]
DECLARED = (hms.MetaException, hms.NoSuchObjectException, hms.AlreadyExistsException,
            hms.InvalidOperationException, hms.InvalidObjectException)
WEIGHTS = {"create_table": 20, "alter_table": 16, "add_partitions": 14, "alter_partition": 10,
           "drop_partition": 7, "drop_table": 7, "rename_table": 8, "read": 14, "create_database": 4}

Key = tuple[str, str]   # database, table


# ---- requests ---------------------------------------------------------------------------------------


@dataclass
class TableModel:
    managed: bool
    location: str     # managed: the last path component (moves with renames); external: the URI after the root
    born: int         # op number since which this table has this name (create or rename)
    gen: int          # op number of the last write of its parameters (>= born)
    parts: dict[str, tuple[int, int]] = field(default_factory=dict)   # "p=v1" -> (born, gen)


def _table(db: str, name: str, model: TableModel, writer: str) -> Any:
    params = {"gen": str(model.gen), "writer": writer}
    if not model.managed:
        params["EXTERNAL"] = "TRUE"
    location = None if model.managed else EXTERNAL_ROOT + model.location
    return hms.Table(tableName=name, dbName=db, sd=placeholder_sd(location),
                     partitionKeys=[hms.FieldSchema(name="p", type="string")], parameters=params,
                     tableType="MANAGED_TABLE" if model.managed else "EXTERNAL_TABLE")


def _partition(db: str, table: str, part: str, gen: int) -> Any:
    return hms.Partition(values=[part.removeprefix("p=")], dbName=db, tableName=table, sd=placeholder_sd(),
                         parameters={"gen": str(gen)})


# ---- what one client sees of one table --------------------------------------------------------------

Observation = tuple[bool, int | None, list[str] | None, dict[str, int] | None]   # listed, gen, names, part gens


def _observe(client: Any, db: str, name: str) -> Observation:
    listed = name in client.get_all_tables(db)
    try:
        table = client.get_table(db, name)
        names = sorted(client.get_partition_names(db, name, -1))
        parts = {f"p={p.values[0]}": int(p.parameters.get("gen", -1)) for p in client.get_partitions(db, name, -1)}
    except hms.NoSuchObjectException:
        return listed, None, None, None
    return listed, int(table.parameters.get("gen", -1)), names, parts


def _expected(model: TableModel | None) -> Observation:
    if model is None:
        return False, None, None, None
    return True, model.gen, sorted(model.parts), {p: gen for p, (_, gen) in model.parts.items()}


def _unmet(observed: Observation, model: TableModel | None, wrote: tuple[str, ...]) -> bool:
    """Whether the observation misses what a write just did: ("whole",) the whole table (created, renamed to,
    dropped or renamed away: the instance has nothing older to show), ("table",) its parameters, or
    ("parts", name, ...) those partitions."""
    expected = _expected(model)
    if wrote[0] == "whole" or model is None or observed[1] is None:
        return observed != expected
    if wrote[0] == "table":
        return observed[:2] != expected[:2]
    names, parts = observed[2] or [], observed[3] or {}
    return any((p in names, parts.get(p)) != (p in model.parts, model.parts.get(p, (0, None))[1]) for p in wrote[1:])


# ---- one client process -----------------------------------------------------------------------------

@dataclass
class WorkerReport:
    tables: dict[Key, TableModel]
    databases: list[str]
    anomalies: list[str]
    rejections: list[str]
    ops: int
    stopped: str | None = None   # why the worker stopped early (an undeclared error), if it did


class Worker:
    def __init__(self, index: int, addresses: list[tuple[str, int]], seed: str, shared_dbs: Any,
                 journal: Path) -> None:
        self.index, self.addresses, self.shared_dbs = index, addresses, shared_dbs
        self.journal = journal.open("w")   # every write call and its outcome, to read next to the server logs
        self.journal_lock = threading.Lock()
        self.rng = random.Random(seed)
        self.clients = [self._client(k) for k in range(len(addresses))]
        self.tables: dict[Key, TableModel] = {}
        self.gone: set[Key] = set()        # own names removed (dropped or renamed away)
        self.databases: list[str] = []
        self.anomalies: list[str] = []
        self.rejections: list[str] = []
        self.op = 0
        self.names = 0
        # monotonic reads, per instance: newest gen seen of a table or partition, and the incarnation seen listed
        self.seen: list[dict[Any, int]] = [{} for _ in addresses]
        self.listed: list[dict[Key, int]] = [{} for _ in addresses]

    def _client(self, k: int) -> Any:
        host, port = self.addresses[k]
        return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, host, port, timeout=60000)

    def _fresh_name(self) -> str:
        self.names += 1
        return f"w{self.index}_t{self.names}"

    def _name_in(self, db: str) -> str:
        """A fresh name, or now and then one of this worker's removed names (a re-creation)."""
        reusable = sorted(n for d, n in self.gone if d == db and (d, n) not in self.tables)
        if reusable and self.rng.random() < 0.3:
            return self.rng.choice(reusable)
        return self._fresh_name()

    def _pick_db(self) -> str:
        databases = ["default", *self.shared_dbs[:]]
        return databases[-1] if self.rng.random() < 0.4 else self.rng.choice(databases)

    def _pick_table(self, with_parts: bool = False) -> Key | None:
        keys = sorted(k for k, m in self.tables.items() if m.parts or not with_parts)
        return self.rng.choice(keys) if keys else None

    # ---- checks ----

    def check(self, k: int, key: Key, wrote: tuple[str, ...] = ()) -> None:
        """Reads one table through instance k: what this worker just wrote through k must show (`wrote`,
        see _unmet), and nothing may be older than what k showed this worker before. Other parts of the
        table may lag behind writes made through the other instance."""
        db, name = key
        observed = _observe(self.clients[k], db, name)
        model = self.tables.get(key)
        where = f"op {self.op} instance {k} {db}.{name}"
        if wrote and _unmet(observed, model, wrote):
            self.anomalies.append(f"{where}: read after own write {wrote}: expected {_expected(model)}, "
                                  f"got {observed}")
        listed, gen, _, parts = observed
        seen, listed_seen = self.seen[k], self.listed[k]
        if gen is not None and gen < seen.get(key, -1):
            self.anomalies.append(f"{where}: went back: gen {gen} after gen {seen[key]}")
        if model is not None and gen is None and seen.get(key, -1) >= model.born:
            self.anomalies.append(f"{where}: went back: missing after gen {seen[key]} was seen")
        if model is not None and not listed and listed_seen.get(key, -1) >= model.born:
            self.anomalies.append(f"{where}: went back: no longer listed by get_all_tables")
        if gen is not None:
            seen[key] = max(gen, seen.get(key, -1))
        if model is not None and listed and seen.get(key, -1) >= model.born:
            listed_seen[key] = model.born
        if parts is None or model is None:
            return
        # A partition's generations compare within one table under this name (since `model.born`): a table renamed
        # to a name brings its partitions' older generations, and the table-level check above catches a read of
        # the table that had the name before.
        for part, (born, _) in model.parts.items():
            if part not in parts and seen.get((db, name, model.born, part), -1) >= max(born, model.born):
                self.anomalies.append(f"{where}: went back: partition {part} missing after it was seen")
        for part, part_gen in parts.items():
            part_key = (db, name, model.born, part)
            if part_gen < seen.get(part_key, -1):
                self.anomalies.append(f"{where}: went back: partition {part} gen {part_gen} after {seen[part_key]}")
            seen[part_key] = max(part_gen, seen.get(part_key, -1))

    def note(self, line: str) -> None:
        with self.journal_lock:
            self.journal.write(f"{time.time():.3f} {line}\n")

    def call(self, k: int, what: str, fn: Any, *args: Any, op: int | None = None) -> bool:
        """Makes a write call; True if acknowledged, False if refused with a declared exception."""
        what = f"op {self.op if op is None else op} instance {k} {what}"
        try:
            fn(*args)
            self.note(f"{what}: ok")
            return True
        except DECLARED as exc:
            self.rejections.append(f"{what}: {type(exc).__name__}: {exc.message}")
            self.note(f"{what}: refused {type(exc).__name__}: {exc.message}")
            return False

    # ---- operations ----

    def create_database(self, k: int) -> None:
        """Creates a database through instance k and, at once, tables in it from several threads through both
        instances (connected beforehand, so they race the other instance's poller, as in the field)."""
        db, op = f"w{self.index}_db{len(self.databases)}", self.op
        planned: list[list[tuple[int, Key, TableModel]]] = []
        for thread in range(BURST_THREADS):
            batch = []
            for _ in range(BURST_PER_THREAD):
                self.op += 1
                name = self._fresh_name()
                managed = self.rng.random() < 0.5
                model = TableModel(managed, name if managed else f"{db}/{name}", self.op, self.op)
                batch.append(((k + thread) % len(self.clients), (db, name), model))
            planned.append(batch)
        acknowledged: list[tuple[int, Key, TableModel]] = []
        errors: list[str] = []
        go, created = threading.Event(), [False]

        def create(batch: list[tuple[int, Key, TableModel]], clients: list[Any]) -> None:
            try:
                go.wait()
                if not created[0]:
                    return
                for j, key, model in batch:
                    if self.call(j, f"burst create_table {key}", clients[j].create_table,
                                 _table(*key, model, f"w{self.index}"), op=model.born):
                        acknowledged.append((j, key, model))
            except Exception as exc:
                errors.append(f"burst create: {type(exc).__name__}: {exc}")
            finally:
                for client in clients:
                    client.close()

        threads = [threading.Thread(target=create, args=(batch, [self._client(j) for j in range(len(self.clients))]))
                   for batch in planned]
        for thread in threads:
            thread.start()
        try:
            created[0] = self.call(k, f"create_database {db}", self.clients[k].create_database,
                                   hms.Database(name=db, parameters={"writer": f"w{self.index}"}), op=op)
            if created[0]:
                self.databases.append(db)
                self.shared_dbs.append(db)   # the other workers may create tables in it from now on
        finally:
            go.set()
            for thread in threads:
                thread.join()
        if not created[0]:
            return
        if errors:
            raise RuntimeError("; ".join(errors))
        for _, key, model in acknowledged:
            self.tables[key] = model
        if db not in self.clients[k].get_all_databases():
            self.anomalies.append(f"op {self.op} instance {k}: database {db} not listed after creating it")
        for j, key, _ in acknowledged:
            self.check(j, key, ("whole",))

    def create_table(self, k: int) -> None:
        db = self._pick_db()
        name = self._name_in(db)
        managed = self.rng.random() < 0.5
        model = TableModel(managed, name if managed else f"{db}/{name}.{self.op}", self.op, self.op)
        if self.call(k, f"create_table {db}.{name}", self.clients[k].create_table,
                     _table(db, name, model, f"w{self.index}")):
            self.tables[(db, name)] = model
            self.check(k, (db, name), ("whole",))

    def drop_table(self, k: int, key: Key) -> None:
        if self.call(k, f"drop_table {key}", self.clients[k].drop_table, *key, self.rng.random() < 0.5):
            del self.tables[key]
            self.gone.add(key)
            self.check(k, key, ("whole",))

    def rename_table(self, k: int, key: Key) -> None:
        db, old = key
        new = self._name_in(db)
        model = self.tables[key]
        moved = TableModel(model.managed, new if model.managed else model.location, self.op, self.op,
                           {part: (self.op, gen) for part, (_, gen) in model.parts.items()})
        if self.call(k, f"rename {db}.{old} to {new}", self.clients[k].alter_table, db, old,
                     _table(db, new, moved, f"w{self.index}")):
            del self.tables[key]
            self.gone.add(key)
            self.tables[(db, new)] = moved
            self.check(k, key, ("whole",))
            self.check(k, (db, new), ("whole",))

    def alter_table(self, k: int, key: Key) -> None:
        model = self.tables[key]
        altered = TableModel(model.managed, model.location, model.born, self.op, model.parts)
        if self.call(k, f"alter_table {key}", self.clients[k].alter_table, *key,
                     _table(*key, altered, f"w{self.index}")):
            self.tables[key] = altered
            self.check(k, key, ("table",))

    def add_partitions(self, k: int, key: Key) -> None:
        model = self.tables[key]
        free = [f"p={v}" for v in VALUES if f"p={v}" not in model.parts]
        if not free:
            return self.drop_partition(k, key)
        adding = self.rng.sample(free, min(len(free), self.rng.randint(1, 3)))
        if self.call(k, f"add_partitions {key} {adding}", self.clients[k].add_partitions,
                     [_partition(*key, part, self.op) for part in adding]):
            model.parts.update({part: (self.op, self.op) for part in adding})
            self.check(k, key, ("parts", *adding))

    def drop_partition(self, k: int, key: Key) -> None:
        model = self.tables[key]
        part = self.rng.choice(sorted(model.parts))
        if self.call(k, f"drop_partition {key} {part}", self.clients[k].drop_partition_by_name, *key, part,
                     self.rng.random() < 0.5):
            del model.parts[part]
            self.check(k, key, ("parts", part))

    def alter_partition(self, k: int, key: Key) -> None:
        model = self.tables[key]
        part = self.rng.choice(sorted(model.parts))
        if self.call(k, f"alter_partition {key} {part}", self.clients[k].alter_partition, *key,
                     _partition(*key, part, self.op)):
            model.parts[part] = (model.parts[part][0], self.op)
            self.check(k, key, ("parts", part))

    def read(self, k: int) -> None:
        keys = sorted(set(self.tables) | self.gone)
        if keys:
            self.check(k, self.rng.choice(keys))

    def step(self) -> None:
        """One random operation through a random instance (a table operation with no table to work on
        creates one instead)."""
        self.op += 1
        kind = self.rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
        k = self.rng.randrange(len(self.clients))
        if kind in ("create_table", "create_database", "read"):
            return getattr(self, kind)(k)
        key = self._pick_table(with_parts=kind in ("drop_partition", "alter_partition"))
        if key is None:
            return self.create_table(k)
        getattr(self, kind)(k, key)

    def run(self, ops: int, deadline: float) -> WorkerReport:
        stopped = None
        try:
            self.op += 1
            self.create_database(self.rng.randrange(len(self.clients)))
            for _ in range(ops):
                if time.monotonic() > deadline:
                    stopped = f"deadline passed at op {self.op}"
                    break
                self.step()
        except TException as exc:  # undeclared (internal error, transport): the model is unsure from here on
            stopped = f"op {self.op}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        finally:
            for client in self.clients:
                client.close()
            self.journal.close()
        return WorkerReport(self.tables, self.databases, self.anomalies, self.rejections, self.op, stopped)


def _worker(index: int, addresses: list[tuple[str, int]], seed: str, shared_dbs: Any, results: Any,
            journal: Path) -> None:
    try:
        worker = Worker(index, addresses, seed, shared_dbs, journal)
        report = worker.run(OPS, time.monotonic() + WORKER_DEADLINE_S)
    except BaseException:
        report = WorkerReport({}, [], [], [], 0, f"crashed: {traceback.format_exc()}")
    results.put((index, report))


# ---- final comparison -------------------------------------------------------------------------------

def _view(client: Any, probe: dict[str, set[str]]) -> dict[str, Any]:
    """All a client shows of the databases it lists or is asked about, and of their listed or probed tables."""
    listed_dbs = set(client.get_all_databases())
    view: dict[str, Any] = {}
    for db in sorted(listed_dbs | set(probe)):
        try:
            listed = set(client.get_all_tables(db))
        except hms.NoSuchObjectException:
            listed = set()
        tables = {name: _table_view(client, db, name, name in listed) for name in sorted(listed | probe.get(db, set()))}
        view[db] = {"listed": db in listed_dbs, "tables": tables}
    return view


def _table_view(client: Any, db: str, name: str, listed: bool) -> dict[str, Any]:
    try:
        table = client.get_table(db, name)
        names = sorted(client.get_partition_names(db, name, -1))
        parts = client.get_partitions(db, name, -1)
    except hms.NoSuchObjectException:
        return {"listed": listed, "exists": False}
    return {"listed": listed, "exists": True, "id": table.id, "type": table.tableType,
            "createTime": table.createTime, "parameters": dict(table.parameters or {}), "location": table.sd.location,
            "partition_names": names,
            "partitions": {"p=" + p.values[0]: {"parameters": dict(p.parameters or {}), "location": p.sd.location,
                                                "createTime": p.createTime} for p in parts}}


def _abstract(view: dict[str, Any]) -> dict[str, Any]:
    """The oracle's view in the terms of the models."""
    out: dict[str, Any] = {}
    for db, entry in view.items():
        if not entry["listed"]:
            continue
        out[db] = {}
        for name, t in entry["tables"].items():
            if not t["exists"]:
                out[db][name] = "listed but missing"
                continue
            location = t["location"]
            out[db][name] = {
                "listed": t["listed"], "type": t["type"], "gen": t["parameters"].get("gen"),
                "location": location.removeprefix(EXTERNAL_ROOT) if location.startswith(EXTERNAL_ROOT)
                else location.rsplit("/", 1)[-1],
                "partition_names": t["partition_names"],
                "partitions": {part: {"gen": p["parameters"].get("gen"),
                                      "location": p["location"].removeprefix(location + "/")}
                               for part, p in t["partitions"].items()}}
    return out


def _model_view(reports: list[WorkerReport]) -> dict[str, Any]:
    out: dict[str, Any] = {"default": {}}
    for report in reports:
        for db in report.databases:
            out.setdefault(db, {})
    for report in reports:
        for (db, name), m in report.tables.items():
            out.setdefault(db, {})[name] = {
                "listed": True, "type": "MANAGED_TABLE" if m.managed else "EXTERNAL_TABLE", "gen": str(m.gen),
                "location": m.location, "partition_names": sorted(m.parts),
                "partitions": {part: {"gen": str(gen), "location": part} for part, (_, gen) in m.parts.items()}}
    return out


def _differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in sorted(expected.keys() | actual.keys(), key=str):
            if key not in actual:
                out.append(f"{path}/{key}: missing (expected {str(expected[key])[:300]})")
            elif key not in expected:
                out.append(f"{path}/{key}: unexpected {str(actual[key])[:300]}")
            else:
                out += _differences(expected[key], actual[key], f"{path}/{key}")
        return out
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


def _converge(servers: list[Any], oracle: dict[str, Any], probe: dict[str, set[str]]) -> list[tuple[list[str], float]]:
    """Polls the instances until each answers as the oracle does or the sync deadline passes; per instance,
    the differences left and the seconds it took."""
    clients = [connect(server) for server in servers]
    started = time.monotonic()
    outcome: list[tuple[list[str], float] | None] = [None] * len(clients)
    try:
        while True:
            late = time.monotonic() - started > SYNC_DEADLINE_S
            for k, client in enumerate(clients):
                if outcome[k] is None:
                    differences = _differences(oracle, _view(client, probe))
                    if not differences or late:
                        outcome[k] = (differences, time.monotonic() - started)
            if all(outcome):
                return [o for o in outcome if o is not None]
            time.sleep(0.1)  # polling the instances' state until the deadline
    finally:
        for client in clients:
            client.close()


def _master_seed() -> int:
    given = os.environ.get(SEED_ENV)
    return int(given) if given else random.SystemRandom().randrange(1, 10**9)


def _run_workers(servers: list[Any], seed: int, workdir: Path) -> list[WorkerReport]:
    context = multiprocessing.get_context("spawn")
    addresses = [(s.host, s.port) for s in servers]
    with context.Manager() as manager:
        shared_dbs, results = manager.list(), manager.Queue()
        workers = [context.Process(target=_worker, args=(i, addresses, f"{seed}:{i}", shared_dbs, results,
                                                                     workdir / f"worker-{i}.log"))
                   for i in range(WORKERS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=WORKER_DEADLINE_S + 60)
        assert all(w.exitcode == 0 for w in workers), f"seed {seed}: worker exit codes {[w.exitcode for w in workers]}"
        return [report for _, report in sorted(results.get(timeout=10) for _ in workers)]


@pytest.mark.parametrize("backend", ["sqlite", "mariadb", "postgres"])
def test_instances_agree_with_the_database_and_the_acknowledged_writes(backend, tmp_path):
    seed = _master_seed()
    print(f"coherence seed {seed} (replay: {SEED_ENV}={seed})")
    with instances_on_one_database(backend, tmp_path) as (url, servers):
        started = time.monotonic()
        reports = _run_workers(servers, seed, tmp_path)
        ran = time.monotonic() - started
        with start_hmsproxy_process(tmp_path / "oracle", url, "--no-cache") as oracle_server:
            oracle = connect(oracle_server)
            model = _model_view(reports)
            probe = {db: set(tables) for db, tables in model.items()}
            oracle_view = _view(oracle, probe)
            oracle.close()
        problems: list[str] = []
        for report in reports:
            if report.stopped:
                problems.append(f"a worker stopped early: {report.stopped}")
            problems += report.anomalies
        problems += [f"oracle vs acknowledged writes: {d}" for d in _differences(model, _abstract(oracle_view))]
        probe = {db: set(entry["tables"]) for db, entry in oracle_view.items()}
        lags = []
        for k, (differences, lag) in enumerate(_converge(servers, oracle_view, probe)):
            lags.append(round(lag, 2))
            problems += [f"instance {k} ({servers[k].workdir.name}) vs oracle after {lag:.1f} s: {d}"
                         for d in differences]
        ops = sum(r.ops for r in reports)
        rejections = [r for report in reports for r in report.rejections]
        print(f"{backend}: {ops} operations in {ran:.1f} s, {len(rejections)} refused, "
              f"{sum(len(r.tables) for r in reports)} tables, instances caught up in {lags} s")
        for rejection in rejections[:10]:
            print("refused:", rejection)
        assert not problems, (f"seed {seed} (replay: {SEED_ENV}={seed}), {len(problems)} problems (journals of the "
                              f"workers' calls and instance logs under {tmp_path}), first ones:\n"
                              + "\n".join(problems[:25]))
