"""Objects exactly as SqlStore reads them back after writing them.

The cache updates itself from what was written (no re-read), so it needs the same object the database
round trip would give: defaults filled, booleans coerced, null parameter values as "", ids attached.
Property tests compare the cache with the database read by read; keep this in step with store/sql/.
"""
from __future__ import annotations

from collections.abc import Mapping

from hmsproxy.idl import hms
from hmsproxy.idl.fields import present
from hmsproxy.idl.java_map_order import in_java_hashmap_order


def _params(params: Mapping[str, str | None] | None) -> dict[str, str]:
    return {k: ("" if v is None else v) for k, v in (params or {}).items()}


def _owner_type(value: int | None) -> int | None:
    return value if value in hms.PrincipalType._VALUES_TO_NAMES else None


def _columns(cols: list[hms.FieldSchema] | None) -> list[hms.FieldSchema]:
    return [hms.FieldSchema(name=c.name, type=c.type, comment=c.comment) for c in cols or []]


def storage_descriptor(sd: hms.StorageDescriptor) -> hms.StorageDescriptor:
    serde = sd.serdeInfo or hms.SerDeInfo()
    skew = sd.skewedInfo
    return hms.StorageDescriptor(
        cols=_columns(sd.cols), location=sd.location, inputFormat=sd.inputFormat, outputFormat=sd.outputFormat,
        compressed=bool(sd.compressed), numBuckets=sd.numBuckets if sd.numBuckets is not None else -1,
        serdeInfo=hms.SerDeInfo(
            name=serde.name, serializationLib=serde.serializationLib,
            parameters=in_java_hashmap_order(_params(serde.parameters)),
            description=serde.description, serializerClass=serde.serializerClass,
            deserializerClass=serde.deserializerClass, serdeType=serde.serdeType),
        bucketCols=list(sd.bucketCols or []),
        sortCols=[hms.Order(col=o.col, order=o.order) for o in sd.sortCols or []],
        parameters=_params(sd.parameters),
        skewedInfo=hms.SkewedInfo(
            skewedColNames=list(skew.skewedColNames or []) if skew else [],
            skewedColValues=[list(v) for v in skew.skewedColValues or []] if skew else [],
            skewedColValueLocationMaps={tuple(k): v for k, v in (skew.skewedColValueLocationMaps or {}).items()}
            if skew else {}),
        storedAsSubDirectories=bool(sd.storedAsSubDirectories),
    )


def table(tbl: hms.Table, tbl_id: int, cat: str) -> hms.Table:
    return hms.Table(
        tableName=tbl.tableName, dbName=tbl.dbName, owner=tbl.owner, createTime=tbl.createTime or 0,
        lastAccessTime=tbl.lastAccessTime or 0, retention=tbl.retention or 0,
        sd=storage_descriptor(tbl.sd) if tbl.sd is not None else None, partitionKeys=_columns(tbl.partitionKeys),
        parameters=_params(tbl.parameters), viewOriginalText=tbl.viewOriginalText,
        viewExpandedText=tbl.viewExpandedText, tableType=tbl.tableType, temporary=False,
        rewriteEnabled=bool(tbl.rewriteEnabled), catName=cat, ownerType=_owner_type(tbl.ownerType),
        writeId=write_id(tbl.writeId), id=tbl_id,
    )


def partition(part: hms.Partition, cat: str, db_name: str, tbl_name: str) -> hms.Partition:
    return hms.Partition(
        values=list(present(part.values)), dbName=db_name, tableName=tbl_name, createTime=part.createTime or 0,
        lastAccessTime=part.lastAccessTime or 0, sd=storage_descriptor(part.sd) if part.sd is not None else None,
        parameters=_params(part.parameters), catName=cat, writeId=write_id(part.writeId),
    )


def database(db: hms.Database) -> hms.Database:
    return hms.Database(
        name=db.name, description=db.description, locationUri=db.locationUri, parameters=_params(db.parameters),
        ownerName=db.ownerName, ownerType=_owner_type(db.ownerType), catalogName=db.catalogName,
        createTime=db.createTime, managedLocationUri=db.managedLocationUri,
    )


def function(func: hms.Function, cat: str) -> hms.Function:
    return hms.Function(
        functionName=func.functionName, dbName=func.dbName, className=func.className, ownerName=func.ownerName,
        ownerType=_owner_type(func.ownerType), createTime=func.createTime or 0,
        functionType=func.functionType or 1,
        resourceUris=[hms.ResourceUri(resourceType=r.resourceType, uri=r.uri) for r in func.resourceUris or []],
        catName=cat,
    )


def write_id(value: int | None) -> int:
    """WRITE_ID columns hold 0 for "none"; the IDL's -1 default is stored as 0."""
    return max(value or 0, 0)
