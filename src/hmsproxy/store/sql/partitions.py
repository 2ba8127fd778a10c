"""Partitions in PARTITIONS / PARTITION_KEY_VALS / PARTITION_PARAMS with their storage descriptors.

Listings are sorted by partition name, as HMS answers. Reads of many partitions use a fixed number of
queries (by table id, or by chunks of partition ids).
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    Join,
    Row,
    ScalarSelect,
    and_,
    func,
    literal_column,
    select,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.sql.elements import NamedColumn

from hmsproxy.events import messages
from hmsproxy.events.journal import Journal
from hmsproxy.hive.names import (
    make_partition_name,
    parse_partition_name,
    partition_exists_message,
    partition_missing_message,
)
from hmsproxy.hive.partition_filter import PartitionFilter, names_matching
from hmsproxy.hive.partitions_to_add import check_new_and_distinct
from hmsproxy.idl import hms
from hmsproxy.idl.codec import encode
from hmsproxy.idl.fields import present
from hmsproxy.idl.partition_bytes import EncodedPartitions, descriptor_tail, location_field, needs_tolerant
from hmsproxy.store.canonical import write_id
from hmsproxy.store.domain import PartitionBatch, batch_scan, cut_batch
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.descriptors import (
    Fields,
    column_rows,
    delete_descriptors,
    descriptor_columns,
    descriptor_from_row,
    descriptor_rows,
    in_chunks,
    load_columns,
    load_skew,
    params_rows,
)
from hmsproxy.store.sql.event_log import StalePlan
from hmsproxy.store.sql.filter_sql import narrowing
from hmsproxy.store.sql.json_rows import Cell, Packed, as_dict, json_rows, json_text, ordered_values, rows_of
from hmsproxy.store.sql.layout import Layout
from hmsproxy.store.sql.lookups import TableRef, locked_table_ref, no_such_object, table_ref
from hmsproxy.store.sql.remembered_tables import Remembered, RememberedTables
from hmsproxy.store.sql.row_deletes import Deletions
from hmsproxy.store.sql.row_inserts import Inserts, insert_at_commit, insert_rows
from hmsproxy.store.sql.schema import hive_flag
from hmsproxy.store.sql.tables import column_tuples

LOAD_CHUNK = 10_000  # partitions read per step when a whole table is loaded


class PartitionStore:
    db: Database
    layout: Layout
    _load_tables: Callable[[Connection, str, str, Sequence[str]], list[hms.Table]]   # TableStore
    remembered_tables: RememberedTables

    # ---- writes ------------------------------------------------------------------------------------

    def add_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[hms.Partition],
                       if_not_exists: bool = False, journal: Journal | None = None) -> list[hms.Partition]:
        """Adds all partitions or none. A duplicate inside the request is a MetaException; an existing
        partition is AlreadyExistsException, or skipped with if_not_exists. Returns what was added.

        With if_not_exists only this write learns which partitions it adds (another writer may add some of them
        meanwhile), so it adds their ADD_PARTITION event to the journal itself; without, the caller's journal
        announces `parts`. If another writer's add of some of them commits while this one inserts, the duplicate key
        fails this one and the store repeats it (retrying_conflicts): those partitions exist then, and are skipped.

        A plain add of distinct partitions does not ask which exist: the table's unique key on partition names
        refuses one that does (or that another call added meanwhile), and only then are they looked up, to
        refuse the call as Hive does.

        The table stays as the add found it until the add commits, and a drop of it waits: on MySQL/MariaDB the add
        holds the table unchanged in the query that appends its events (remembered_tables.py), which lets it plan
        from the table as this process last read it; elsewhere its read of the table is a locking one."""
        key = (cat, db_name, tbl_name)
        remembered = self.remembered_tables.get(key) if self._holding(journal) is not None else None
        if remembered is not None and not all(_fits(remembered.ref, part) for part in parts):
            remembered = None   # refused only on what the database holds
        try:
            try:
                return self._add_partitions(cat, db_name, tbl_name, parts, if_not_exists, journal, remembered)
            except StalePlan:   # again, from the table's row read and held at once: no one can change it now
                self.remembered_tables.forget(key)
                return self._add_partitions(cat, db_name, tbl_name, parts, if_not_exists, journal, None,
                                            share_lock=True)
        except StalePlan:   # only another program's write (the Java HMS's alter) can do that: try again later
            raise hms.MetaException(message=f"{db_name}.{tbl_name} changed while partitions were added to it; "
                                            f"nothing was added, try again") from None
        except sa_exc.IntegrityError:
            if if_not_exists:
                raise
            with self.db.transaction() as conn:
                ref = table_ref(conn, cat, db_name, tbl_name)
                names = [make_partition_name(ref.partition_keys, present(p.values)) for p in parts]
                existing = self._existing_names(conn, ref.tbl_id, names)
            check_new_and_distinct(names, parts, existing, False)
            raise

    def _add_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[hms.Partition],
                        if_not_exists: bool, journal: Journal | None, remembered: Remembered | None,
                        share_lock: bool = False) -> list[hms.Partition]:
        """`remembered`: the table as an earlier write read it, to plan from without reading it; `share_lock`: the
        table is read with a locking read (always where the write's query does not hold it unchanged)."""
        holding = self._holding(journal)
        with self.db.transaction(write=True, journal=journal) as conn:
            if remembered is None:
                ref = table_ref(conn, cat, db_name, tbl_name, with_columns=True,
                                share_lock=share_lock or holding is None)
                if holding is not None:
                    remembered = self.remembered_tables.remember(conn, (cat, db_name, tbl_name), ref)
            else:
                ref = remembered.ref
            if holding is not None and remembered is not None:
                holding.held = remembered.unchanged
            for part in parts:
                if not _fits(ref, part):
                    raise hms.MetaException(message=f"partition values {part.values} do not match the partition "
                                                    f"keys {list(ref.partition_keys)} of {db_name}.{tbl_name}")
            names = [make_partition_name(ref.partition_keys, present(p.values)) for p in parts]
            must_ask = if_not_exists or len(set(names)) < len(names)
            existing = self._existing_names(conn, ref.tbl_id, names) if must_ask else set()
            check_new_and_distinct(names, parts, existing, if_not_exists)
            to_add = [(n, p) for n, p in zip(names, parts) if n not in existing]
            ids = self._insert_partitions(conn, ref, to_add, journal)
            added = [p for _, p in to_add]
            if journal is not None:
                journal.partition_ids.update(zip((n for n, _ in to_add), ids))
                if if_not_exists and added:
                    [table] = self._load_tables(conn, cat, db_name, [tbl_name])
                    journal.add(messages.add_partition(table, added))
            return added

    def _holding(self, journal: Journal | None) -> Journal | None:
        """The journal whose query holds the add's table unchanged (MySQL/MariaDB, with events to append), else
        None."""
        return journal if journal is not None and journal.unwritten() and self.db.engine.dialect.name == "mysql" \
            else None

    def _existing_names(self, conn: Connection, tbl_id: int, names: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for chunk in in_chunks(list(names)):
            found.update(conn.execute(select(s.PARTITIONS.c.PART_NAME).where(
                s.PARTITIONS.c.TBL_ID == tbl_id, s.PARTITIONS.c.PART_NAME.in_(chunk))).scalars())
        return found

    def _insert_partitions(self, conn: Connection, ref: TableRef, named: Sequence[tuple[str, hms.Partition]],
                           journal: Journal | None = None) -> list[int]:
        """Writes the partitions (with a journal: leaves their rows to go with its events, at the commit); returns
        the ids they were given, in order."""
        if not named:
            return []
        cd_ids, columns = self._column_descriptors(conn, ref, [present(part.sd).cols for _, part in named])
        sd_ids, descriptors = descriptor_rows(self.db, conn, [present(p.sd) for _, p in named], cd_ids)
        first = self.db.allocate_ids(conn, "MPartition", len(named))
        rows, values, params = [], [], []
        for i, ((name, part), sd_id) in enumerate(zip(named, sd_ids)):
            part_id = first + i
            rows.append(self.layout.values(s.PARTITIONS, {
                "PART_ID": part_id, "TBL_ID": ref.tbl_id, "SD_ID": sd_id, "PART_NAME": name,
                "CREATE_TIME": part.createTime or 0, "LAST_ACCESS_TIME": part.lastAccessTime or 0,
                "WRITE_ID": write_id(part.writeId)}))
            values += [{"PART_ID": part_id, "PART_KEY_VAL": v, "INTEGER_IDX": j}
                       for j, v in enumerate(present(part.values))]
            params += params_rows("PART_ID", part_id, part.parameters)
        insert_at_commit(conn, [*columns, *descriptors, (s.PARTITIONS, rows), (s.PARTITION_KEY_VALS, values),
                                  (s.PARTITION_PARAMS, params)], journal)
        return [first + i for i in range(len(named))]

    def _column_descriptors(self, conn: Connection, ref: TableRef,
                            column_lists: Sequence[Sequence[hms.FieldSchema] | None]) -> tuple[list[int], Inserts]:
        """As Hive: each partition's column descriptor is the table's where its columns are the table's, else one of
        its own; with the rows that write those, to go with the partitions' other rows."""
        assert ref.columns is not None, "the table is read with its columns to write partitions"
        table_cd = ref.cd_id
        shared = [table_cd is not None and column_tuples(cols) == ref.columns for cols in column_lists]
        own_ids, rows = column_rows(self.db, conn, [cols or [] for cols, is_shared in zip(column_lists, shared)
                                                    if not is_shared])
        own = iter(own_ids)
        return [table_cd if is_shared and table_cd is not None else next(own) for is_shared in shared], rows

    def alter_partitions(self, cat: str, db_name: str, tbl_name: str, parts: Sequence[hms.Partition],
                         journal: Journal | None = None) -> None:
        """Replaces each partition's definition (matched by its values), keeping its id. The table's row is read with
        a locking read: a drop of the table or of these partitions commits wholly before (they are missing) or after
        (it drops what this wrote), never between this read and the rows written."""
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = table_ref(conn, cat, db_name, tbl_name, with_columns=True, share_lock=True)
            self._replace_partitions(conn, ref, [(list(present(p.values)), p) for p in parts], journal)

    def rename_partition(self, cat: str, db_name: str, tbl_name: str, old_values: Sequence[str], part: hms.Partition,
                         journal: Journal | None = None) -> None:
        """Gives the partition new values and definition, keeping its id; locks as alter_partitions does."""
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = table_ref(conn, cat, db_name, tbl_name, with_columns=True, share_lock=True)
            new_values = present(part.values)
            new_name = make_partition_name(ref.partition_keys, new_values)
            if self._existing_names(conn, ref.tbl_id, [new_name]):
                raise hms.InvalidOperationException(message=partition_exists_message(db_name, tbl_name, new_values))
            self._replace_partitions(conn, ref, [(list(old_values), part)], journal)

    def _replace_partitions(self, conn: Connection, ref: TableRef, changes: Sequence[tuple[list[str], hms.Partition]],
                            journal: Journal | None) -> None:
        old_names = [make_partition_name(ref.partition_keys, old) for old, _ in changes]
        found = {r.PART_NAME: r for r in self._rows_by_names(conn, ref.tbl_id, old_names)}
        missing = [n for n in old_names if n not in found]
        if missing:
            raise hms.InvalidOperationException(message=f"partition does not exist: {missing[0]}")
        for old_name, (_, part) in zip(old_names, changes):
            row = found[old_name]
            sd = present(part.sd)
            cd_ids, columns = self._column_descriptors(conn, ref, [sd.cols])
            [sd_id], descriptors = descriptor_rows(self.db, conn, [sd], cd_ids)
            insert_rows(conn, [*columns, *descriptors])
            new_name = make_partition_name(ref.partition_keys, present(part.values))
            conn.execute(update(s.PARTITIONS).where(s.PARTITIONS.c.PART_ID == row.PART_ID).values(
                self.layout.values(s.PARTITIONS, {
                    "PART_NAME": new_name, "SD_ID": sd_id, "CREATE_TIME": part.createTime or 0,
                    "LAST_ACCESS_TIME": part.lastAccessTime or 0, "WRITE_ID": write_id(part.writeId)})))
            delete_descriptors(conn, [row.SD_ID], first=[(s.PARTITION_PARAMS.c.PART_ID, [row.PART_ID]),
                                                         (s.PARTITION_KEY_VALS.c.PART_ID, [row.PART_ID])],
                               in_use=cd_ids)
            insert_at_commit(conn, [
                (s.PARTITION_KEY_VALS, [{"PART_ID": row.PART_ID, "PART_KEY_VAL": v, "INTEGER_IDX": j}
                                        for j, v in enumerate(present(part.values))]),
                (s.PARTITION_PARAMS, params_rows("PART_ID", row.PART_ID, part.parameters))], journal)
            if new_name != old_name:
                conn.execute(update(s.PART_COL_STATS).where(s.PART_COL_STATS.c.PART_ID == row.PART_ID)
                             .values(PARTITION_NAME=new_name))

    def drop_partitions(self, cat: str, db_name: str, tbl_name: str, names: Sequence[str],
                        if_exists: bool = False, journal: Journal | None = None) -> list[hms.Partition]:
        """Drops the named partitions, all or none: a missing one is NoSuchObjectException unless if_exists. The
        table's row is locked first, as a drop of the table does: the table cannot go meanwhile, and statistics
        written to the partitions commit wholly before or after."""
        journal = journal if journal is not None else Journal()
        with self.db.transaction(write=True, journal=journal) as conn:
            ref = locked_table_ref(conn, cat, db_name, tbl_name)
            rows = self._rows_by_names(conn, ref.tbl_id, list(dict.fromkeys(names)))
            found = {r.PART_NAME for r in rows}
            missing = [n for n in names if n not in found]
            if missing and not if_exists:
                raise no_such_object(partition_missing_message(_values_in(missing[0])))
            dropped = self._load_partitions(conn, cat, db_name, tbl_name, ref, [r.PART_ID for r in rows])
            self._delete_partition_rows(conn, [r.PART_ID for r in rows], [r.SD_ID for r in rows], ())
            if dropped:  # the event names what was dropped here, whatever a cache thought was there
                [table] = self._load_tables(conn, cat, db_name, [tbl_name])
                journal.add(messages.drop_partition(table, dropped))
            return dropped

    @staticmethod
    def _delete_partition_rows(conn: Connection, part_ids: Sequence[int], sd_ids: Sequence[int | None],
                               more: Deletions) -> None:
        """Deletes the partitions, then `more` (a dropped table's rows, its descriptor among `sd_ids`), then the
        descriptors, in one query where it can."""
        delete_descriptors(conn, sd_ids, first=[*((column, list(part_ids)) for column in (
            s.PART_COL_STATS.c.PART_ID, s.PARTITION_PARAMS.c.PART_ID, s.PARTITION_KEY_VALS.c.PART_ID,
            s.PARTITIONS.c.PART_ID)), *more])

    # ---- reads -------------------------------------------------------------------------------------

    def get_partition_batch(self, cat: str, db_name: str, tbl_name: str, from_id: int, to_id: int, size: int,
                            predicate: Callable[[Sequence[str]], bool] | None, names_only: bool) -> PartitionBatch:
        """Up to `size` partitions (or names) in id order from `from_id`, those matching `predicate`, by the
        rule of domain.cut_batch."""
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            low, high = conn.execute(select(func.min(s.PARTITIONS.c.PART_ID), func.max(s.PARTITIONS.c.PART_ID))
                                     .where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)).one()
            scan = batch_scan(size, predicate is not None)
            window = _batch_window(conn, ref, from_id, to_id, scan + 1, with_values=predicate is not None)
            keep = None
            if predicate is not None:
                keep = lambda row: predicate(ordered_values(row.PART_VALUES))  # noqa: E731
            chosen, next_id = cut_batch(window, size, scan, keep, lambda row: row.PART_ID)
            if names_only:
                items = [row.PART_NAME for row in chosen]
            else:
                loaded = self._load_partitions(conn, cat, db_name, tbl_name, ref, [row.PART_ID for row in chosen])
                by_name = {make_partition_name(ref.partition_keys, present(p.values)): p for p in loaded}   # read: set
                items = [by_name[row.PART_NAME] for row in chosen]
        return PartitionBatch(items, next_id, -1 if low is None else low, -1 if high is None else high)

    def _rows_by_names(self, conn: Connection, tbl_id: int, names: Sequence[str]) -> list[Row[int, str, int]]:
        rows: list[Row[int, str, int]] = []
        for chunk in in_chunks(list(names)):
            rows += conn.execute(select(s.PARTITIONS.c.PART_ID, s.PARTITIONS.c.PART_NAME, s.PARTITIONS.c.SD_ID)
                                 .where(s.PARTITIONS.c.TBL_ID == tbl_id, s.PARTITIONS.c.PART_NAME.in_(chunk))).all()
        return rows

    def get_partitions(self, cat: str, db_name: str, tbl_name: str, max_parts: int = -1) -> Sequence[hms.Partition]:
        """Sorted by name, read encoded (partition_bytes.py): a listing is sent as those bytes, as from the cache."""
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            chunks: list[ColumnElement[bool]]
            if max_parts is not None and max_parts >= 0:
                names = self._names(conn, ref)[:max_parts]
                ids = [r.PART_ID for r in self._rows_by_names(conn, ref.tbl_id, names)]
                chunks = [s.PARTITIONS.c.PART_ID.in_(chunk) for chunk in in_chunks(ids)]
            else:
                chunks = [s.PARTITIONS.c.TBL_ID == ref.tbl_id]
            named = {ref.tbl_id: (db_name, tbl_name)}
            read = [self._read_encoded_partitions(conn, cat, named, chunk, False)[ref.tbl_id][0] for chunk in chunks]
        return EncodedPartitions.joined(read).listing()

    def get_partitions_by_names(self, cat: str, db_name: str, tbl_name: str,
                                names: Sequence[str]) -> list[hms.Partition]:
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            ids = [r.PART_ID for r in self._rows_by_names(conn, ref.tbl_id, list(dict.fromkeys(names)))]
            return self._load_partitions(conn, cat, db_name, tbl_name, ref, ids)

    def get_partition(self, cat: str, db_name: str, tbl_name: str, values: Sequence[str]) -> hms.Partition:
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            name = make_partition_name(ref.partition_keys, values)
            ids = [r.PART_ID for r in self._rows_by_names(conn, ref.tbl_id, [name])]
            found = self._load_partitions(conn, cat, db_name, tbl_name, ref, ids) if ids else []
        if not found:
            raise no_such_object(partition_missing_message(values))
        return found[0]

    def get_partition_names(self, cat: str, db_name: str, tbl_name: str) -> list[str]:
        with self.db.transaction() as conn:
            return self._names(conn, table_ref(conn, cat, db_name, tbl_name))

    def get_partition_values(self, cat: str, db_name: str, tbl_name: str) -> list[tuple[str, list[str]]]:
        """(name, values) of every partition, sorted by name: the input of filter and spec matching."""
        return self._names_and_values(cat, db_name, tbl_name, None)

    def get_partition_names_by_filter(self, cat: str, db_name: str, tbl_name: str,
                                      partition_filter: PartitionFilter) -> list[str]:
        """The filter's predicate decides, over the values of the partitions its plan's SQL condition keeps."""
        kept = self._names_and_values(cat, db_name, tbl_name, narrowing(partition_filter.plan))
        return names_matching(kept, partition_filter)

    def _names_and_values(self, cat: str, db_name: str, tbl_name: str, condition: ColumnElement[bool] | None
                          ) -> list[tuple[str, list[str]]]:
        """(name, values) of the table's partitions that meet `condition` (None: all), sorted by name."""
        with self.db.transaction() as conn:
            ref = table_ref(conn, cat, db_name, tbl_name)
            kept = [s.PARTITIONS.c.TBL_ID == ref.tbl_id] + ([] if condition is None else [condition])
            rows = conn.execute(select(s.PARTITIONS.c.PART_NAME, _values_of_each()).where(*kept)).all()
        return sorted((name, ordered_values(part_values)) for name, part_values in rows)

    @staticmethod
    def _names(conn: Connection, ref: TableRef) -> list[str]:
        return sorted(conn.execute(select(s.PARTITIONS.c.PART_NAME)
                                   .where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)).scalars())

    @staticmethod
    def _partition_id_ranges(conn: Connection, ref: TableRef) -> list[ColumnElement[bool]]:
        """The table's partitions as conditions on consecutive id ranges of LOAD_CHUNK partitions each."""
        ids = sorted(conn.execute(select(s.PARTITIONS.c.PART_ID).where(s.PARTITIONS.c.TBL_ID == ref.tbl_id)).scalars())
        return [and_(s.PARTITIONS.c.TBL_ID == ref.tbl_id,
                     s.PARTITIONS.c.PART_ID.between(ids[i], ids[min(i + LOAD_CHUNK, len(ids)) - 1]))
                for i in range(0, len(ids), LOAD_CHUNK)]

    def _load_partitions(self, conn: Connection, cat: str, db_name: str, tbl_name: str, ref: TableRef,
                         part_ids: ColumnElement[bool] | Sequence[int] | None) -> list[hms.Partition]:
        """Partitions by id (a condition on PARTITIONS, a list of ids, or None = all of the table), sorted by name."""
        if part_ids is None:
            batches: list[ColumnElement[bool]] = [s.PARTITIONS.c.TBL_ID == ref.tbl_id]
        elif isinstance(part_ids, ColumnElement):
            batches = [part_ids]
        else:
            batches = [s.PARTITIONS.c.PART_ID.in_(chunk) for chunk in in_chunks(list(part_ids))]
        named = {ref.tbl_id: (db_name, tbl_name)}
        result = [row for kept in batches for row in self._read_partitions(conn, cat, named, kept)]
        result.sort(key=lambda row: row.name)
        return [row.partition for row in result]

    def _read_partitions(self, conn: Connection, cat: str, table_names: dict[int, tuple[str, str]],
                         kept: ColumnElement[bool]) -> list[PartitionRow]:
        """The partitions meeting `kept` (a condition on PARTITIONS) as objects, in a fixed number of queries
        whatever the number of partitions and tables (_partition_rows). `table_names` gives each table's
        (database, table) names."""
        rows, values, columns, skew = _partition_rows(conn, kept, packed=False)
        result = []
        for m in rows:
            part = _own_fields(m, values.get(m["PART_ID"]))
            part.dbName, part.tableName = table_names[m["TBL_ID"]]
            part.catName = cat
            part.sd = None if m["SD_ID"] is None else descriptor_from_row(m, columns, skew)
            result.append(PartitionRow(m["TBL_ID"], m["PART_ID"], m["PART_NAME"], part))
        return result

    def _read_encoded_partitions(self, conn: Connection, cat: str, table_names: dict[int, tuple[str, str]],
                                 kept: ColumnElement[bool], packed: bool
                                 ) -> dict[int, tuple[EncodedPartitions, list[int]]]:
        """The partitions meeting `kept` as the cache keeps them (partition_bytes.py), with their ids, by table (every
        table of `table_names`, those without any too). A storage descriptor is built and encoded once for the
        partitions of a table whose descriptors are equal but for the location (most often all of them), instead of
        once per partition. `packed`: read in packs (_partition_rows says when that pays)."""
        rows, values, columns, skew = _partition_rows(conn, kept, packed)
        tails: dict[tuple[int, tuple[object, ...]], bytes] = {}
        by_table = {tbl_id: (EncodedPartitions.none(), list[int]()) for tbl_id in table_names}
        for m in rows:
            tbl_id, sd_id = m["TBL_ID"], m["SD_ID"]
            parts, ids = by_table[tbl_id]
            part = _own_fields(m, values.get(m["PART_ID"]))
            own = encode(part)[:-1]
            db_name, tbl_name = table_names[tbl_id]
            tail: bytes | None
            if sd_id is None:
                tail = descriptor_tail(None, db_name, tbl_name, cat)
            else:
                own += location_field(m["LOCATION"])
                key = None if sd_id in skew else (tbl_id, _descriptor_but_location(m))
                tail = tails.get(key) if key is not None else None
                if tail is None:
                    tail = self._descriptor_tail(m, columns, skew, (db_name, tbl_name, cat), parts.tolerant)
                    if key is not None:
                        tails[key] = tail
            parts.pieces += (own, tail)
            parts.values.append(present(part.values))   # _own_fields sets them
            parts.names.append(m["PART_NAME"])
            ids.append(m["PART_ID"])
        return by_table

    @staticmethod
    def _descriptor_tail(m: Fields, columns: dict[int, list[hms.FieldSchema]], skew: dict[int, hms.SkewedInfo],
                         names: tuple[str, str, str], tolerant: set[bytes]) -> bytes:
        """The tail of the row's partition (partition_bytes.py), added to `tolerant` if it needs that decoder."""
        sd = descriptor_from_row(m, columns, skew)
        sd.location = None
        tail = descriptor_tail(sd, *names)
        if needs_tolerant(sd):
            tolerant.add(tail)
        return tail


def _partition_rows(conn: Connection, kept: ColumnElement[bool], packed: bool
                    ) -> tuple[Sequence[Fields], dict[int, list[list[Cell]]], dict[int, list[hms.FieldSchema]],
                               dict[int, hms.SkewedInfo]]:
    """(rows, values by PART_ID, columns by CD_ID, skew by SD_ID) of the partitions meeting `kept`: each partition
    as a mapping of its fields (_partition_fields' names: its parameters and storage descriptor), its values as
    (index, value) rows (_values_by_partition), then the descriptors' columns and skew.

    `packed`: the partitions come PACKED_PARTITIONS of a table to a row, as one JSON text (json_rows of their
    fields). A pure-Python driver spends most of a large read on its per-row and per-column work, which JSON
    parsing in C does at a fraction; the database spends more building packs than sending rows (MariaDB about a
    quarter more CPU, for a prewarm's reading process a fifth less), and sends nothing of a pack until it is
    built. So reads of many tables at once (prewarm's), where the database works beside the readers, take packs;
    a listing, which waits for the database, takes rows."""
    fields = _partition_fields()
    rows = _packed_rows(conn, kept, fields) if packed else _one_row_each(conn, kept, fields)
    if not rows:
        return rows, {}, {}, {}
    columns = load_columns(conn, (row["CD_ID"] for row in rows))
    return rows, _values_by_partition(conn, kept), columns, load_skew(conn, select(s.PARTITIONS.c.SD_ID).where(kept))


def _values_by_partition(conn: Connection, kept: ColumnElement[bool]) -> dict[int, list[list[Cell]]]:
    """The (index, value) rows of the partitions meeting `kept`, by PART_ID, read packed: PACKED_PARTITIONS
    partitions' values to a row, one JSON parse per pack. Read as a correlated subquery of the partitions' query,
    they took MariaDB about 100 of a 5,000-partition prewarm query's 320 ms of CPU (this query: 65-85 ms), and
    the server a parse per partition, of a JSON string inside the pack's JSON. On a busy machine the server and
    the database share the cores, so the CPU of both is the time. A pack cut short (_packed_rows) is read
    again, a row per value."""
    values, parts = s.PARTITION_KEY_VALS.c, s.PARTITIONS
    pack = parts.c.PART_ID // literal_column(str(PACKED_PARTITIONS), Integer)
    joined = s.PARTITION_KEY_VALS.join(parts, parts.c.PART_ID == values.PART_ID)
    by_part: dict[int, list[list[Cell]]] = {}
    for pack_no, count, value in conn.execute(
            select(pack, func.count(), json_rows(values.PART_ID, values.INTEGER_IDX, values.PART_KEY_VAL))
            .select_from(joined).where(kept).group_by(pack)).all():
        rows = _whole_pack(value, count)
        if rows is None:
            rows = [list(row) for row in conn.execute(select(values.PART_ID, values.INTEGER_IDX, values.PART_KEY_VAL)
                                                      .select_from(joined).where(kept, pack == pack_no))]
        for part_id, index, part_value in rows:
            by_part.setdefault(part_id, []).append([index, part_value])
    return by_part


def _one_row_each(conn: Connection, kept: ColumnElement[bool], fields: list[NamedColumn[Any]]) -> list[Fields]:
    """The `fields` of the partitions meeting `kept`, a row per partition."""
    return [row._mapping for row in conn.execute(select(*fields).select_from(_partitions_joined()).where(kept))]


def _packed_rows(conn: Connection, kept: ColumnElement[bool], fields: list[NamedColumn[Any]]) -> list[Fields]:
    """The `fields` of the partitions meeting `kept`, read packed (_partition_rows). A pack the database could not
    make whole (MySQL/MariaDB cut one at max_allowed_packet, 16 MB by default) is read again, a row per
    partition."""
    names = [field.name for field in fields]
    packed = [json_text(field) if field.name in _AS_TEXT else field for field in fields]
    parts = s.PARTITIONS
    pack = parts.c.PART_ID // literal_column(str(PACKED_PARTITIONS), Integer)
    rows: list[Fields] = []
    for tbl_id, pack_no, count, value in conn.execute(
            select(parts.c.TBL_ID, pack, func.count(), json_rows(*packed)).select_from(_partitions_joined())
            .where(kept).group_by(parts.c.TBL_ID, pack)).all():
        unpacked = _whole_pack(value, count)
        if unpacked is not None:
            rows += [_unpacked(names, row) for row in unpacked]
        else:
            rows += _one_row_each(conn, and_(kept, parts.c.TBL_ID == tbl_id, pack == pack_no), fields)
    return rows


# Partitions per packed row of _partition_rows: about 0.5 MB of JSON for partitions with a few parameters each,
# well within MySQL/MariaDB's max_allowed_packet.
PACKED_PARTITIONS = 1000
_FLAGS = ("IS_COMPRESSED", "IS_STOREDASSUBDIRECTORIES")
# Packed as JSON strings (json_text): the flags and the fields that are json_rows themselves.
_AS_TEXT = frozenset({*_FLAGS, "PART_PARAMETERS", "SD_PARAMETERS", "SERDE_PARAMETERS",
                      "BUCKET_COLUMNS", "SORT_COLUMNS"})


def _whole_pack(value: Packed, count: int) -> list[list[Cell]] | None:
    """The `count` partitions packed in `value`; None when the database could not pack them all."""
    try:
        unpacked = rows_of(value)
    except ValueError:   # cut short
        return None
    return unpacked if len(unpacked) == count else None


def _unpacked(names: Sequence[str], values: Sequence[Cell]) -> dict[str, Cell]:
    """A packed partition's fields by name, its flags read as HiveFlag reads the columns."""
    row = dict(zip(names, values))
    for flag in _FLAGS:
        row[flag] = hive_flag(row[flag])
    return row


def _partition_fields() -> list[NamedColumn[Any]]:
    """What _partition_rows reads of each partition, each field labelled with its name."""
    parts = s.PARTITIONS
    params = select(json_rows(s.PARTITION_PARAMS.c.PARAM_KEY, s.PARTITION_PARAMS.c.PARAM_VALUE)).where(
        s.PARTITION_PARAMS.c.PART_ID == parts.c.PART_ID).scalar_subquery()
    return [parts.c.PART_ID, parts.c.TBL_ID, parts.c.PART_NAME, parts.c.CREATE_TIME, parts.c.LAST_ACCESS_TIME,
            parts.c.WRITE_ID, params.label("PART_PARAMETERS"),
            *descriptor_columns()]


def _partitions_joined() -> Join:
    """PARTITIONS with each one's storage descriptor and serde."""
    sds = s.SDS
    return s.PARTITIONS.outerjoin(sds, sds.c.SD_ID == s.PARTITIONS.c.SD_ID).outerjoin(
        s.SERDES, s.SERDES.c.SERDE_ID == sds.c.SERDE_ID)


def _values_of_each() -> ScalarSelect[str]:
    """Each selected partition's values (json_rows of index and value), for a query of PARTITIONS."""
    values = s.PARTITION_KEY_VALS.c
    return select(json_rows(values.INTEGER_IDX, values.PART_KEY_VAL)).where(
        values.PART_ID == s.PARTITIONS.c.PART_ID).scalar_subquery()


def _own_fields(m: Fields, values: list[list[Cell]] | None) -> hms.Partition:
    """The Partition of a row of _partition_rows and its values' rows with its own fields only: no storage
    descriptor, no names."""
    return hms.Partition(values=ordered_values(values), createTime=m["CREATE_TIME"],
                         lastAccessTime=m["LAST_ACCESS_TIME"], parameters=as_dict(m["PART_PARAMETERS"]),
                         writeId=m["WRITE_ID"] or 0)


# The values of the columns of descriptor_columns that make a descriptor what it is, but for its location (and its
# own ids), of a row's mapping.
_descriptor_but_location = operator.itemgetter(*(c.name for c in descriptor_columns()
                                                 if c.name not in ("SD_ID", "SERDE_ID", "LOCATION")))


class PartitionRow(NamedTuple):
    """A partition as read, with the ids and name it has in the database."""
    tbl_id: int
    part_id: int
    name: str
    partition: hms.Partition


def _batch_window(conn: Connection, ref: TableRef, from_id: int, to_id: int, limit: int,
                  with_values: bool) -> list[Any]:
    """(PART_ID, PART_NAME, and PART_VALUES if `with_values`: json_rows) of up to `limit` partitions with
    from_id <= id < to_id (to_id < 0: no bound)."""
    values = [_values_of_each().label("PART_VALUES")] if with_values else []
    query = select(s.PARTITIONS.c.PART_ID, s.PARTITIONS.c.PART_NAME, *values).where(
        s.PARTITIONS.c.TBL_ID == ref.tbl_id, s.PARTITIONS.c.PART_ID >= from_id)
    if to_id >= 0:
        query = query.where(s.PARTITIONS.c.PART_ID < to_id)
    return list(conn.execute(query.order_by(s.PARTITIONS.c.PART_ID).limit(limit)).all())


def _values_in(name: str) -> list[str]:
    """The values a partition name gives, for messages; a name that is not one stands for itself."""
    try:
        return [value for _, value in parse_partition_name(name)]
    except ValueError:
        return [name]


def _fits(ref: TableRef, part: hms.Partition) -> bool:
    """The partition has a value for each of the table's partition keys (and the table has keys)."""
    return bool(ref.partition_keys) and len(part.values or []) == len(ref.partition_keys)
