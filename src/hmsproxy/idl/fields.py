"""Reading and setting the IDL's optional fields: one that the value at hand always has, a union's one field."""
from __future__ import annotations

from typing import TypeVar

from thriftpy2.thrift import TPayload

from hmsproxy.idl import hms

T = TypeVar("T")


def present(value: T | None) -> T:
    """The field, which every object that reaches the caller has set although the IDL makes it optional (a
    stored table's name and storage descriptor, a database's location, a partition key's name, ...)."""
    if value is None:
        raise ValueError("an IDL object lacks a field that is always set where it comes from")
    return value


def stats_data(kind: str, stats: TPayload) -> hms.ColumnStatisticsData:
    """The ColumnStatisticsData union with its field `kind` ("longStats", ...) set to `stats`."""
    data = hms.ColumnStatisticsData()
    setattr(data, kind, stats)
    return data
