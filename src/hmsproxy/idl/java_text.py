"""How Java prints a Thrift object, for the messages in which Hive prints one.

Hive builds some exception messages by concatenating a whole Thrift object (e.g. "Partition already exists: "
+ the partition as the client sent it), so the text is Java Thrift's generated toString: `Name(field:value,
...)` in field-id order, optional fields only when set, `null` for an unset object, Java's zero for an unset
number, lists as `[a, b]`, maps as `{k=v}` in the iteration order of the HashMap Thrift decoded them into,
enums by name, binary as hex bytes. Checked against the reference HMS 2.3.10 (tests/api/test_hive_answers.py).
"""
from __future__ import annotations

import re
from functools import cache
from typing import Any

from thriftpy2.thrift import TPayload, TType

from hmsproxy.idl import THRIFT_DIR
from hmsproxy.idl.java_map_order import java_hashmap_order
from hmsproxy.idl.specs import FieldSpec, TypeSpec

_NUMBERS = {TType.BOOL: "false", TType.BYTE: "0", TType.I16: "0", TType.I32: "0", TType.I64: "0",
            TType.DOUBLE: "0.0"}
_BINARY_SHOWN = 128  # TBaseHelper.toString prints at most this many bytes, then "..."


def java_text(struct: TPayload) -> str:
    """`struct` as Java's Thrift toString prints it."""
    optional = _optional_fields().get(type(struct).__name__, frozenset())
    parts = []
    for field_id in sorted(struct.thrift_spec):
        spec = struct.thrift_spec[field_id]
        name = spec[1]
        value = getattr(struct, name)
        if name in optional and (value is None or value == struct.default_spec[field_id - 1][1]):
            continue  # Java prints an optional field only when it was set; unset, thriftpy2 holds its default
        parts.append(f"{name}:{_value_text(spec, value)}")
    return f"{type(struct).__name__}({', '.join(parts)})"


def _value_text(spec: FieldSpec, value: Any) -> str:
    ttype = spec[0]
    if value is None:
        return _NUMBERS.get(ttype, "null")
    if ttype == TType.BOOL:
        return "true" if value else "false"
    if ttype == TType.I32 and len(spec) > 3 and isinstance(spec[2], type):  # an enum field
        return str(spec[2]._VALUES_TO_NAMES.get(value, value))  # type: ignore[attr-defined]  # generated at run time
    if ttype == TType.STRUCT:
        return java_text(value)
    if ttype == TType.STRING and isinstance(value, bytes):
        shown = " ".join(f"{b:02X}" for b in value[:_BINARY_SHOWN])
        return shown + (" ..." if len(value) > _BINARY_SHOWN else "")
    if ttype in (TType.LIST, TType.SET):
        return "[" + ", ".join(_element_text(spec[2], item) for item in value) + "]"
    if ttype == TType.MAP:
        key_spec, value_spec = spec[2]
        return "{" + ", ".join(f"{_element_text(key_spec, k)}={_element_text(value_spec, v)}"
                               for k, v in _received_order(value).items()) + "}"
    return str(value)


def _element_text(element_spec: TypeSpec, item: Any) -> str:
    """A container's element: its spec is a bare TType, or (TType, argument) for structs and containers."""
    if isinstance(element_spec, tuple):
        return _value_text((element_spec[0], None, element_spec[1], False), item)
    return _value_text((element_spec, None), item)


def _received_order(mapping: dict[Any, Any]) -> dict[Any, Any]:
    """Thrift's Java decoder fills a HashMap of capacity 2 x size in wire order; string keys only are modelled."""
    if not all(isinstance(key, str) for key in mapping):
        return mapping
    return java_hashmap_order(mapping, _table_size(2 * len(mapping)))


def _table_size(wanted: int) -> int:
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return capacity


_STRUCT = re.compile(r"^(?:struct|exception|union)\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
_OPTIONAL_FIELD = re.compile(r"^\s*\d+\s*:\s*optional\s+.+?\s(\w+)\s*(?:=[^,;]*)?[,;]?\s*(?://.*)?$", re.M)


@cache
def _optional_fields() -> dict[str, frozenset[str]]:
    """Field names declared `optional`, per struct: thriftpy2 does not keep that distinction."""
    idl = (THRIFT_DIR / "hive_metastore.thrift").read_text()
    return {match[1]: frozenset(_OPTIONAL_FIELD.findall(match[2])) for match in _STRUCT.finditer(idl)}
