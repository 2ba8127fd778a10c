"""The HMS table that holds an Iceberg table: what Iceberg's HiveCatalog writes, so that HiveCatalog clients and the
REST catalog read and commit the same table.

Its parameters name the format (`table_type=ICEBERG`) and the current metadata file (`metadata_location`, with
`previous_metadata_location`); the columns are the current schema's in Hive's types, so that a Hive 2.3 client
listing the table sees its columns."""
from __future__ import annotations

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from hmsproxy.handler.common import now
from hmsproxy.idl import hms
from hmsproxy.store.reader import shallow_copy

TABLE_TYPE, ICEBERG = "table_type", "ICEBERG"
METADATA_LOCATION, PREVIOUS_METADATA_LOCATION = "metadata_location", "previous_metadata_location"

# Hive 2.3's names; a timestamp with a zone is `timestamp` to a Hive 2 reader (pyiceberg's hive2-compatible mode)
HIVE_PRIMITIVES: dict[type[IcebergType], str] = {
    BooleanType: "boolean", IntegerType: "int", LongType: "bigint", FloatType: "float", DoubleType: "double",
    DateType: "date", TimeType: "string", TimestampType: "timestamp", TimestamptzType: "timestamp",
    StringType: "string", UUIDType: "string", BinaryType: "binary", FixedType: "binary",
}


def is_iceberg(table: hms.Table) -> bool:
    return (table.parameters or {}).get(TABLE_TYPE, "").upper() == ICEBERG


def hive_type(field_type: IcebergType) -> str:
    if isinstance(field_type, ListType):
        return f"array<{hive_type(field_type.element_type)}>"
    if isinstance(field_type, MapType):
        return f"map<{hive_type(field_type.key_type)},{hive_type(field_type.value_type)}>"
    if isinstance(field_type, StructType):
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.field_type)}" for f in field_type.fields) + ">"
    if isinstance(field_type, DecimalType):
        return f"decimal({field_type.precision},{field_type.scale})"
    return HIVE_PRIMITIVES.get(type(field_type), "string")


def columns(metadata: TableMetadata) -> list[hms.FieldSchema]:
    return [hms.FieldSchema(name=f.name, type=hive_type(f.field_type), comment=f.doc)
            for f in metadata.schema().fields]


def iceberg_parameters(metadata: TableMetadata, metadata_location: str, previous: str | None) -> dict[str, str]:
    """The parameters the commit sets: the table's Iceberg properties, then the pointers (which win)."""
    parameters = {key: str(value) for key, value in metadata.properties.items()}
    parameters.update({"EXTERNAL": "TRUE", TABLE_TYPE: ICEBERG, METADATA_LOCATION: metadata_location})
    if previous:
        parameters[PREVIOUS_METADATA_LOCATION] = previous
    return parameters


def new_hms_table(db_name: str, name: str, metadata: TableMetadata, metadata_location: str,
                  owner: str) -> hms.Table:
    return hms.Table(
        tableName=name, dbName=db_name, owner=owner, createTime=now(), lastAccessTime=0, retention=0,
        sd=hms.StorageDescriptor(
            cols=columns(metadata), location=metadata.location,
            inputFormat="org.apache.hadoop.mapred.FileInputFormat",
            outputFormat="org.apache.hadoop.mapred.FileOutputFormat", compressed=False, numBuckets=-1,
            serdeInfo=hms.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                                    parameters={}),
            bucketCols=[], sortCols=[], parameters={}),
        # the marker keeps the create from listing the table's directory for quick stats (removed, never stored)
        partitionKeys=[], parameters={**iceberg_parameters(metadata, metadata_location, None),
                                      "DO_NOT_UPDATE_STATS": "true"},
        tableType="EXTERNAL_TABLE", ownerType=hms.PrincipalType.USER)


def committed_hms_table(current: hms.Table, base: TableMetadata, metadata: TableMetadata, metadata_location: str,
                        previous: str) -> hms.Table:
    """The HMS table after a commit: the parameters other writers set stay, the Iceberg properties the commit
    removed go, the pointers and the columns follow the new metadata."""
    parameters = dict(current.parameters or {})
    for removed in base.properties.keys() - metadata.properties.keys():
        parameters.pop(removed, None)
    parameters.update(iceberg_parameters(metadata, metadata_location, previous))
    sd = shallow_copy(current.sd or hms.StorageDescriptor(), cols=columns(metadata), location=metadata.location)
    return shallow_copy(current, parameters=parameters, sd=sd)
