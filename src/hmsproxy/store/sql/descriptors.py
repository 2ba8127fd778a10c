"""Storage descriptors in bulk: write many at once, read many with a fixed number of queries.

A storage descriptor spans SDS, SERDES, CDS/COLUMNS_V2, their parameter tables, bucketing, sort and
skew tables. Reads take a subquery that selects SD ids (e.g. all partitions of a table), so listing 100k
partitions costs a handful of queries, not one per partition: one row per descriptor, its parameters, serde
parameters, bucketing and sort columns aggregated into it (json_rows.py), then the shared columns and the
skew tables. Partitions that have the same columns as their table share the table's column descriptor, as
in Hive.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    Case,
    Column,
    ColumnElement,
    Connection,
    Select,
    Table,
    case,
    cast,
    delete,
    exists,
    literal,
    null,
    select,
)
from sqlalchemy.sql.elements import NamedColumn

from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.idl.java_map_order import in_java_hashmap_order
from hmsproxy.store.sql import schema as s
from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.json_rows import as_dict, as_items, json_rows, ordered, ordered_values
from hmsproxy.store.sql.row_deletes import Deletions, delete_rows
from hmsproxy.store.sql.row_inserts import Inserts, RowValues, insert_rows

ID_CHUNK = 900  # ids per IN list, within SQLite's oldest limit of 999 bound parameters per statement
T = TypeVar("T")


def in_chunks(items: Sequence[T]) -> list[Sequence[T]]:
    """`items` in slices of ID_CHUNK: one IN list each."""
    return [items[i:i + ID_CHUNK] for i in range(0, len(items), ID_CHUNK)]


# A row's fields by name: a row's mapping (SQLAlchemy's RowMapping, whose values are Any) or a dict of a packed one
# (partitions.py).
Fields = Mapping[Any, Any]


def params_rows(key_col: str, owner_id: int, params: dict[str, str] | None) -> list[RowValues]:
    return [{key_col: owner_id, "PARAM_KEY": k, "PARAM_VALUE": v} for k, v in (params or {}).items()]


def insert_columns(db: Database, conn: Connection, cols: Sequence[hms.FieldSchema]) -> int:
    [cd_id], rows = column_rows(db, conn, [cols])
    insert_rows(conn, rows)
    return cd_id


def column_rows(db: Database, conn: Connection, column_lists: Sequence[Sequence[hms.FieldSchema]]
                ) -> tuple[list[int], Inserts]:
    """New column descriptors, one per list of columns: their ids (allocated here) and the rows that write them,
    for the caller to insert with its own rows in one go."""
    first = db.allocate_ids(conn, "MColumnDescriptor", len(column_lists))
    cd_ids = [first + i for i in range(len(column_lists))]
    columns = [{"CD_ID": cd_id, "COLUMN_NAME": c.name, "TYPE_NAME": c.type, "COMMENT": c.comment, "INTEGER_IDX": i}
               for cd_id, cols in zip(cd_ids, column_lists) for i, c in enumerate(cols)]
    return cd_ids, [(s.CDS, [{"CD_ID": cd_id} for cd_id in cd_ids]), (s.COLUMNS_V2, columns)]


def insert_descriptors(db: Database, conn: Connection, sds: Sequence[hms.StorageDescriptor],
                       cd_ids: Sequence[int]) -> list[int]:
    """Writes the storage descriptors (with serdes, params, bucketing, sort and skew); returns their ids."""
    sd_ids, rows = descriptor_rows(db, conn, sds, cd_ids)
    insert_rows(conn, rows)
    return sd_ids


def descriptor_rows(db: Database, conn: Connection, sds: Sequence[hms.StorageDescriptor], cd_ids: Sequence[int]
                    ) -> tuple[list[int], Inserts]:
    """The storage descriptors' ids (allocated here) and the rows that write them, for the caller to insert with
    its own rows in one go."""
    count = len(sds)
    first_sd = db.allocate_ids(conn, "MStorageDescriptor", count)
    first_serde = db.allocate_ids(conn, "MSerDeInfo", count)
    sd_rows, serde_rows = [], []
    sd_params, serde_params, buckets, sorts, skew_names = [], [], [], [], []
    skewed: list[tuple[int, hms.SkewedInfo]] = []
    for i, (sd, cd_id) in enumerate(zip(sds, cd_ids)):
        sd_id, serde_id = first_sd + i, first_serde + i
        serde = sd.serdeInfo or hms.SerDeInfo()
        serde_rows.append(db.layout.values(s.SERDES, {
            "SERDE_ID": serde_id, "NAME": serde.name, "SLIB": serde.serializationLib,
            "DESCRIPTION": serde.description, "SERIALIZER_CLASS": serde.serializerClass,
            "DESERIALIZER_CLASS": serde.deserializerClass, "SERDE_TYPE": serde.serdeType,
        }))
        serde_params += params_rows("SERDE_ID", serde_id, serde.parameters)
        sd_rows.append({
            "SD_ID": sd_id, "CD_ID": cd_id, "INPUT_FORMAT": sd.inputFormat, "OUTPUT_FORMAT": sd.outputFormat,
            "IS_COMPRESSED": bool(sd.compressed), "IS_STOREDASSUBDIRECTORIES": bool(sd.storedAsSubDirectories),
            "LOCATION": sd.location, "NUM_BUCKETS": sd.numBuckets if sd.numBuckets is not None else -1,
            "SERDE_ID": serde_id,
        })
        sd_params += params_rows("SD_ID", sd_id, sd.parameters)
        buckets += [{"SD_ID": sd_id, "BUCKET_COL_NAME": c, "INTEGER_IDX": j} for j, c in enumerate(sd.bucketCols or [])]
        sorts += [{"SD_ID": sd_id, "COLUMN_NAME": o.col, "ORDER": o.order, "INTEGER_IDX": j}
                  for j, o in enumerate(sd.sortCols or [])]
        if sd.skewedInfo is not None:
            skew_names += [{"SD_ID": sd_id, "SKEWED_COL_NAME": c, "INTEGER_IDX": j}
                           for j, c in enumerate(sd.skewedInfo.skewedColNames or [])]
            skewed.append((sd_id, sd.skewedInfo))
    rows: list[tuple[Table, Sequence[RowValues]]] = [
        (s.SERDES, serde_rows), (s.SDS, sd_rows), (s.SERDE_PARAMS, serde_params), (s.SD_PARAMS, sd_params),
        (s.BUCKETING_COLS, buckets), (s.SORT_COLS, sorts), (s.SKEWED_COL_NAMES, skew_names)]
    if skewed:
        rows += _skew_value_rows(db, conn, skewed)
    return [first_sd + i for i in range(count)], rows


def _skew_value_rows(db: Database, conn: Connection, skewed: list[tuple[int, hms.SkewedInfo]]
                     ) -> list[tuple[Table, Sequence[RowValues]]]:
    lists: list[tuple[int, Sequence[str], str | None, bool]] = []  # (sd, values, location, is_skewed_value)
    for sd_id, info in skewed:
        lists += [(sd_id, values, None, True) for values in info.skewedColValues or []]
        lists += [(sd_id, list(key), loc, False) for key, loc in (info.skewedColValueLocationMaps or {}).items()]
    if not lists:
        return []
    first = db.allocate_ids(conn, "MStringList", len(lists))
    list_rows, value_rows, skew_value_rows, loc_rows = [], [], [], []
    value_index: dict[int, int] = defaultdict(int)
    for i, (sd_id, values, location, is_value) in enumerate(lists):
        list_id = first + i
        list_rows.append({"STRING_LIST_ID": list_id})
        value_rows += [{"STRING_LIST_ID": list_id, "STRING_LIST_VALUE": v, "INTEGER_IDX": j}
                       for j, v in enumerate(values)]
        if is_value:
            skew_value_rows.append({"SD_ID_OID": sd_id, "STRING_LIST_ID_EID": list_id,
                                    "INTEGER_IDX": value_index[sd_id]})
            value_index[sd_id] += 1
        else:
            loc_rows.append({"SD_ID": sd_id, "STRING_LIST_ID_KID": list_id, "LOCATION": location})
    return [(s.SKEWED_STRING_LIST, list_rows), (s.SKEWED_STRING_LIST_VALUES, value_rows),
            (s.SKEWED_VALUES, skew_value_rows), (s.SKEWED_COL_VALUE_LOC_MAP, loc_rows)]


def descriptor_columns() -> list[NamedColumn[Any]]:
    """What a query joining SDS to SERDES (outer) selects for descriptor_from_row: one row per descriptor."""
    sds, serdes = s.SDS, s.SERDES

    def rows(owner: ColumnElement[bool], *columns: Column[Any]) -> Case[str]:
        # Most of these tables are empty in most metastores (bucketing, sort columns, descriptor parameters): the
        # database checks that once per query rather than looking up each descriptor's rows (10% of a listing).
        table = columns[0].table
        return case((exists(select(literal(1)).select_from(table)),
                     select(json_rows(*columns)).where(owner).scalar_subquery()))

    return [
        *sds.c, serdes.c.NAME, serdes.c.SLIB, serdes.c.DESCRIPTION, serdes.c.SERIALIZER_CLASS,
        serdes.c.DESERIALIZER_CLASS, serdes.c.SERDE_TYPE,
        rows(s.SD_PARAMS.c.SD_ID == sds.c.SD_ID, s.SD_PARAMS.c.PARAM_KEY,
             s.SD_PARAMS.c.PARAM_VALUE).label("SD_PARAMETERS"),
        rows(s.SERDE_PARAMS.c.SERDE_ID == sds.c.SERDE_ID, s.SERDE_PARAMS.c.PARAM_KEY,
             s.SERDE_PARAMS.c.PARAM_VALUE).label("SERDE_PARAMETERS"),
        rows(s.BUCKETING_COLS.c.SD_ID == sds.c.SD_ID, s.BUCKETING_COLS.c.INTEGER_IDX,
             s.BUCKETING_COLS.c.BUCKET_COL_NAME).label("BUCKET_COLUMNS"),
        rows(s.SORT_COLS.c.SD_ID == sds.c.SD_ID, s.SORT_COLS.c.INTEGER_IDX, s.SORT_COLS.c.COLUMN_NAME,
             s.SORT_COLS.c.ORDER).label("SORT_COLUMNS"),
    ]


def descriptor_from_row(m: Fields, columns: dict[int, list[hms.FieldSchema]], skew: dict[int, hms.SkewedInfo]
                        ) -> hms.StorageDescriptor:
    """The StorageDescriptor of a row selected with descriptor_columns (a mapping); `columns` by CD_ID and
    `skew` by SD_ID from load_columns and load_skew."""
    serde = hms.SerDeInfo(
        name=m["NAME"], serializationLib=m["SLIB"],
        parameters=dict(as_items(m["SERDE_PARAMETERS"], in_java_hashmap_order)),
        description=m["DESCRIPTION"], serializerClass=m["SERIALIZER_CLASS"],
        deserializerClass=m["DESERIALIZER_CLASS"], serdeType=m["SERDE_TYPE"],
    )
    sd_id = m["SD_ID"]
    return hms.StorageDescriptor(
        cols=list(columns.get(m["CD_ID"], [])), location=m["LOCATION"], inputFormat=m["INPUT_FORMAT"],
        outputFormat=m["OUTPUT_FORMAT"], compressed=bool(m["IS_COMPRESSED"]), numBuckets=m["NUM_BUCKETS"],
        serdeInfo=serde, bucketCols=ordered_values(m["BUCKET_COLUMNS"]),
        sortCols=[hms.Order(col=col, order=order) for col, order in ordered(m["SORT_COLUMNS"])],
        parameters=as_dict(m["SD_PARAMETERS"]),
        skewedInfo=skew.get(sd_id) or hms.SkewedInfo(skewedColNames=[], skewedColValues=[],
                                                      skewedColValueLocationMaps={}),
        storedAsSubDirectories=bool(m["IS_STOREDASSUBDIRECTORIES"]),
    )


def load_columns(conn: Connection, cd_ids: Iterable[int | None]) -> dict[int, list[hms.FieldSchema]]:
    """The columns of the column descriptors `cd_ids` (None, a descriptor without, is passed over), by CD_ID.
    The ids come from rows already read: a subquery here would join the partitions to their descriptors again."""
    wanted = sorted({cd_id for cd_id in cd_ids if cd_id is not None})
    columns: dict[int, list[hms.FieldSchema]] = defaultdict(list)
    for chunk in in_chunks(wanted):
        for cd_id, name, type_name, comment in conn.execute(
            select(s.COLUMNS_V2.c.CD_ID, s.COLUMNS_V2.c.COLUMN_NAME, s.COLUMNS_V2.c.TYPE_NAME, s.COLUMNS_V2.c.COMMENT)
            .where(s.COLUMNS_V2.c.CD_ID.in_(chunk))
            .order_by(s.COLUMNS_V2.c.CD_ID, s.COLUMNS_V2.c.INTEGER_IDX)
        ):
            columns[cd_id].append(hms.FieldSchema(name=name, type=type_name, comment=comment))
    return columns


def load_descriptors(conn: Connection, sd_ids: Select[int]) -> dict[int, hms.StorageDescriptor]:
    """All storage descriptors whose ids `sd_ids` (a one-column select) yields, keyed by SD id."""
    rows = conn.execute(select(*descriptor_columns()).select_from(s.SDS.outerjoin(
        s.SERDES, s.SERDES.c.SERDE_ID == s.SDS.c.SERDE_ID)).where(s.SDS.c.SD_ID.in_(sd_ids))).all()
    if not rows:
        return {}
    columns = load_columns(conn, (row.CD_ID for row in rows))
    skew = load_skew(conn, sd_ids)
    return {row.SD_ID: descriptor_from_row(row._mapping, columns, skew) for row in rows}


def _ordered_lists(conn: Connection, table: Table, value_col: Column[str], sd_ids: Select[int]) -> dict[int, list[str]]:
    result: dict[int, list[str]] = defaultdict(list)
    for sd_id, value in conn.execute(
        select(table.c.SD_ID, value_col).where(table.c.SD_ID.in_(sd_ids)).order_by(table.c.SD_ID, table.c.INTEGER_IDX)
    ):
        result[sd_id].append(value)
    return result


def load_skew(conn: Connection, sd_ids: Select[int]) -> dict[int, hms.SkewedInfo]:
    names = _ordered_lists(conn, s.SKEWED_COL_NAMES, s.SKEWED_COL_NAMES.c.SKEWED_COL_NAME, sd_ids)
    values_rows = conn.execute(
        select(s.SKEWED_VALUES.c.SD_ID_OID, s.SKEWED_VALUES.c.STRING_LIST_ID_EID)
        .where(s.SKEWED_VALUES.c.SD_ID_OID.in_(sd_ids))
        .order_by(s.SKEWED_VALUES.c.SD_ID_OID, s.SKEWED_VALUES.c.INTEGER_IDX)
    ).all()
    loc_rows = conn.execute(
        select(s.SKEWED_COL_VALUE_LOC_MAP.c.SD_ID, s.SKEWED_COL_VALUE_LOC_MAP.c.STRING_LIST_ID_KID,
               s.SKEWED_COL_VALUE_LOC_MAP.c.LOCATION).where(s.SKEWED_COL_VALUE_LOC_MAP.c.SD_ID.in_(sd_ids))
    ).all()
    if not names and not values_rows and not loc_rows:
        return {}
    strings: dict[int, list[str]] = defaultdict(list)
    values = s.SKEWED_STRING_LIST_VALUES
    for list_ids in (select(s.SKEWED_VALUES.c.STRING_LIST_ID_EID).where(s.SKEWED_VALUES.c.SD_ID_OID.in_(sd_ids)),
                     select(s.SKEWED_COL_VALUE_LOC_MAP.c.STRING_LIST_ID_KID)
                     .where(s.SKEWED_COL_VALUE_LOC_MAP.c.SD_ID.in_(sd_ids))):
        for list_id, value in conn.execute(
            select(values.c.STRING_LIST_ID, values.c.STRING_LIST_VALUE).where(values.c.STRING_LIST_ID.in_(list_ids))
            .order_by(values.c.STRING_LIST_ID, values.c.INTEGER_IDX)
        ):
            strings[list_id].append(value)
    result: dict[int, hms.SkewedInfo] = {}

    def info(sd_id: int) -> hms.SkewedInfo:
        if sd_id not in result:
            result[sd_id] = hms.SkewedInfo(skewedColNames=names.get(sd_id, []), skewedColValues=[],
                                           skewedColValueLocationMaps={})
        return result[sd_id]

    for sd_id in names:
        info(sd_id)
    for sd_id, list_id in values_rows:
        present(info(sd_id).skewedColValues).append(strings.get(list_id, []))
    for sd_id, list_id, location in loc_rows:
        present(info(sd_id).skewedColValueLocationMaps)[tuple(strings.get(list_id, []))] = location
    return result


def delete_descriptors(conn: Connection, sd_ids: Iterable[int | None], first: Deletions = (),
                       in_use: Iterable[int] = ()) -> None:
    """Deletes the rows of `first` (those that refer to the descriptors go there), then the storage descriptors
    with their serdes, in one query where the database allows; then any column descriptor they used that nothing
    references any more (`in_use`: ones known to be still referenced, not checked)."""
    deletions, cd_ids = _descriptor_deletions(conn, sd_ids)
    delete_rows(conn, [*first, *deletions])
    remove_unused_columns(conn, cd_ids - set(in_use))


def _descriptor_deletions(conn: Connection, sd_ids: Iterable[int | None]) -> tuple[Deletions, set[int]]:
    """What deleting storage descriptors deletes, in an order their foreign keys allow (to go in one query,
    after the deletions of rows that refer to them), and the column descriptors they used (to remove those
    no longer referenced afterwards)."""
    present = [sd_id for sd_id in sd_ids if sd_id is not None]
    serde_ids: list[int] = []
    cd_ids: set[int] = set()
    list_ids: list[int] = []
    no_id = cast(null(), BigInteger())
    for chunk in in_chunks(present):   # one query: the descriptors' serde and column ids, then their skew lists'
        for serde_id, cd_id, list_id in conn.execute(
                select(s.SDS.c.SERDE_ID, s.SDS.c.CD_ID, no_id).where(s.SDS.c.SD_ID.in_(chunk))
                .union_all(select(no_id, no_id, s.SKEWED_VALUES.c.STRING_LIST_ID_EID)
                           .where(s.SKEWED_VALUES.c.SD_ID_OID.in_(chunk)),
                           select(no_id, no_id, s.SKEWED_COL_VALUE_LOC_MAP.c.STRING_LIST_ID_KID)
                           .where(s.SKEWED_COL_VALUE_LOC_MAP.c.SD_ID.in_(chunk)))):
            if serde_id is not None:
                serde_ids.append(serde_id)
            if cd_id is not None:
                cd_ids.add(cd_id)
            if list_id is not None:
                list_ids.append(list_id)
    owned_by_sd = (s.SD_PARAMS.c.SD_ID, s.BUCKETING_COLS.c.SD_ID, s.SORT_COLS.c.SD_ID, s.SKEWED_COL_NAMES.c.SD_ID,
                   s.SKEWED_VALUES.c.SD_ID_OID, s.SKEWED_COL_VALUE_LOC_MAP.c.SD_ID, s.SDS.c.SD_ID)
    return [*((column, present) for column in owned_by_sd),
            (s.SKEWED_STRING_LIST_VALUES.c.STRING_LIST_ID, list_ids), (s.SKEWED_STRING_LIST.c.STRING_LIST_ID, list_ids),
            (s.SERDE_PARAMS.c.SERDE_ID, serde_ids), (s.SERDES.c.SERDE_ID, serde_ids)], cd_ids


def remove_unused_columns(conn: Connection, cd_ids: Iterable[int | None]) -> None:
    for cd_id in cd_ids:
        if cd_id is None:
            continue
        in_use = conn.execute(select(exists().where(s.SDS.c.CD_ID == cd_id))).scalar()
        if not in_use:
            conn.execute(delete(s.COLUMNS_V2).where(s.COLUMNS_V2.c.CD_ID == cd_id))
            conn.execute(delete(s.CDS).where(s.CDS.c.CD_ID == cd_id))
