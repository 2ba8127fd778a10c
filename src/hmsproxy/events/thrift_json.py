"""Apache Thrift's TJSONProtocol for thriftpy2 objects: ``encode(obj)`` and ``decode(cls, text)``.

Hive embeds metadata objects in its notification messages as ``TSerializer(new TJSONProtocol.Factory())``
output, so this writes the bytes *Java's* TJSONProtocol writes (Hive is Java), driven by thriftpy2's
``thrift_spec`` rather than generated code::

    struct  {"1":{"str":"t"},"4":{"i32":5}}        fields in field-id order, unset (None) fields left out
    list    ["rec",2,{...},{...}]                  set: the same with its element type
    map     ["str","i64",1,{"k":7}]                numbers and bools in key position are quoted: {"3":"x"}
    bool 1/0, binary base64, double as Java's Double.toString

Where Apache's Python TJSONProtocol differs from Java's we follow Java: doubles (Java writes ``1.0``,
``0.1``, ``1.0E20`` and ``"NaN"``; Python writes ``1``, ``0.10000000000000001``, ``1e+20`` and a bare
``nan``), base64 without ``=`` padding, and control characters other than ``\\b\\t\\n\\f\\r`` as
``\\u00xx`` (Python writes them raw). Both Apache readers accept what we write, and we read both.

Container map keys (Hive's ``SkewedInfo.skewedColValueLocationMaps: map<list<string>,string>``):
Apache's TJSONProtocol (Java and Python alike) writes the key list as a JSON array in key position,
``{["str",2,"a","1"]:"loc"}`` -- not valid JSON, but it is what Hive stores and reads back, so we
write and read the same. Decoded list (and set) keys become tuples, as in :mod:`hmsproxy.idl`.
"""
from __future__ import annotations

import base64
import binascii
import keyword
import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from json.decoder import scanstring  # type: ignore[attr-defined]  # undocumented, so typeshed leaves it out
from json.encoder import encode_basestring
from typing import NoReturn, TypeAlias, TypeVar, cast

from thriftpy2.thrift import TPayload, TType

from hmsproxy.idl.specs import FieldSpec, TypeSpec, Value

T = TypeVar("T", bound=TPayload)
Writer: TypeAlias = Callable[[TPayload], str]

_NAMES = {
    TType.BOOL: "tf", TType.BYTE: "i8", TType.I16: "i16", TType.I32: "i32", TType.I64: "i64",
    TType.DOUBLE: "dbl", TType.STRING: "str", TType.BINARY: "str", TType.STRUCT: "rec",
    TType.MAP: "map", TType.SET: "set", TType.LIST: "lst",
}
_TYPES = {name: ttype for ttype, name in _NAMES.items() if ttype != TType.BINARY}
_INT_BITS = {TType.BYTE: 8, TType.I16: 16, TType.I32: 32, TType.I64: 64}

_NUMBER = re.compile(r"[-+.0-9Ee]+")


def _split(spec: TypeSpec) -> tuple[int, TypeSpec]:
    """thriftpy2 element specs are a bare ttype or (ttype, nested spec / struct class)."""
    return (spec, None) if isinstance(spec, int) else (spec[0], spec[1])


def _field_spec(field: FieldSpec) -> tuple[int, str, TypeSpec]:
    """(ttype, name, type argument) from a thrift_spec entry (ttype, name, [arg,] required)."""
    return field[0], field[1], field[2] if len(field) == 4 else None


# --- encoding -------------------------------------------------------------------------------------------------------

def encode(obj: TPayload) -> str:
    """TJSONProtocol text of a thriftpy2 struct, as Java's ``TSerializer.toString`` returns it."""
    return _WRITERS[obj.__class__](obj)


def java_double(value: float) -> str:
    """Java's ``Double.toString`` (JDK 19+: the shortest decimal that round-trips; when that has one
    digit, the closest two-digit one), which TJSONProtocol writes for doubles."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    shortest = Decimal(repr(magnitude)).normalize()
    if len(shortest.as_tuple().digits) == 1:
        exact = Decimal(magnitude)
        shortest = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 1), ROUND_HALF_EVEN).normalize()
    _, digit_tuple, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)  # NaN and infinities were answered above
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # digits before the decimal point
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        return f"{sign}{whole}.{digits[point:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


class _StructWriters(dict[type[TPayload], Writer]):
    """Each struct type's writer, made on its first use. A writer names the writers of the struct types inside it
    through this map when it runs, so a type may contain itself."""

    def __missing__(self, struct_type: type[TPayload]) -> Writer:
        writer = self[struct_type] = _compile_struct_writer(struct_type)
        return writer


_WRITERS = _StructWriters()
MEMO_ENTRIES = 64   # per memoised list type: the column lists of the few tables being written at a time


def _compile_struct_writer(struct_type: type[TPayload]) -> Writer:
    """A writer generated as Python source for this struct type: one step per field, each value written by an
    expression made for its type. Events carry thousands of partitions, and a generic walk over the fields took
    a fifth more time per object. A list of structs with only string fields (a descriptor's columns) is written
    once per distinct content and then found by it: every partition of a table repeats the table's columns."""
    source = _Source()
    lines = ["def write(obj):", "    fields = []"]
    for fid in sorted(struct_type.thrift_spec):
        ttype, name, arg = _field_spec(struct_type.thrift_spec[fid])
        attribute = f"obj.{name}" if name.isidentifier() and not keyword.iskeyword(name) else \
            f"getattr(obj, {name!r})"
        opening = f'"{fid}":{{"{_NAMES[ttype]}":'
        lines += [f"    value = {attribute}", "    if value is not None:",
                  f"        fields.append({opening!r} + {source.expression(ttype, arg, 'value', 0, key=False)} + '}}')"]
    lines.append("    return '{' + ','.join(fields) + '}'")
    return source.compiled(lines, "write")


class _Source:
    """The generated source of one struct writer and the names it uses."""

    def __init__(self) -> None:
        self.names: dict[str, object] = {"W": _WRITERS, "_text": _json_string, "_binary": _binary,
                                      "_double": _double, "_double_key": _double_key, "_out_of_range": _out_of_range}
        self.helpers: list[str] = []

    def bind(self, value: object) -> str:
        name = f"_bound{len(self.names)}"
        self.names[name] = value
        return name

    def expression(self, ttype: int, arg: TypeSpec, value: str, depth: int, key: bool) -> str:
        """Python source of the text of `value`, of Thrift type `ttype`; `key`: in map-key position, where numbers
        are JSON strings."""
        quote = '"' if key else ""
        if ttype == TType.BOOL:
            return f"({quote + '1' + quote!r} if {value} else {quote + '0' + quote!r})"
        if ttype in _INT_BITS:
            bits = _INT_BITS[ttype]
            number = f"str(int({value}))" if not key else f"'\"' + str(int({value})) + '\"'"
            return (f"({number} if {-(1 << (bits - 1))} <= {value} < {1 << (bits - 1)} "
                    f"else _out_of_range({value}, {bits}))")
        if ttype == TType.DOUBLE:
            return f"{'_double_key' if key else '_double'}({value})"
        if ttype == TType.BINARY:
            return f"_binary({value})"
        if ttype == TType.STRING:
            return f"_text({value})"
        if ttype == TType.STRUCT:
            return f"W[{self.bind(arg)}]({value})"
        item = f"x{depth}"
        if ttype in (TType.LIST, TType.SET):
            etype, earg = _split(arg)
            element = self.expression(etype, earg, item, depth + 1, key=False)
            text = (f"('[\"{_NAMES[etype]}\",' + str(len({value})) + "
                    f"''.join([',' + {element} for {item} in {value}]) + ']')")
            if ttype == TType.LIST and etype == TType.STRUCT and _only_strings(earg):
                return f"{self.memoised(earg, text, value, item)}({value})"
            return text
        if ttype == TType.MAP:
            (ktype, karg), (vtype, varg) = _split(arg[0]), _split(arg[1])
            k, v = f"k{depth}", f"v{depth}"
            return (f"('[\"{_NAMES[ktype]}\",\"{_NAMES[vtype]}\",' + str(len({value})) + ',{{' + "
                    f"','.join([{self.expression(ktype, karg, k, depth + 1, key=True)} + ':' + "
                    f"{self.expression(vtype, varg, v, depth + 1, key=False)} for {k}, {v} in {value}.items()]) "
                    f"+ '}}]')")
        raise ValueError(f"unsupported Thrift type {ttype}")

    def memoised(self, struct_type: type[TPayload], text: str, value: str, item: str) -> str:
        """A helper writing such a list (`text`, of `value`) once per content, the content being its elements'
        field values."""
        name = f"_list{len(self.helpers)}"
        fields = ", ".join(f"{item}.{_field_spec(spec)[1]}" for _, spec in sorted(struct_type.thrift_spec.items()))
        memo = self.bind({})
        self.helpers.append("\n".join([
            f"def {name}({value}):",
            f"    content = tuple([({fields},) for {item} in {value}])",
            f"    text = {memo}.get(content)",
            "    if text is None:",
            f"        text = {text}",
            f"        if len({memo}) >= {MEMO_ENTRIES}:",
            f"            {memo}.clear()",
            f"        {memo}[content] = text",
            "    return text"]))
        return name

    def compiled(self, lines: list[str], name: str) -> Writer:
        namespace = dict(self.names)
        exec("\n\n".join([*self.helpers, "\n".join(lines)]), namespace)   # the source made above, from the IDL's specs
        return cast(Writer, namespace[name])


def _only_strings(struct_type: type[TPayload]) -> bool:
    """Whether every field of the struct type is a string (so its values make a hashable key) and is a Python
    identifier (named as an attribute)."""
    return all(spec[0] == TType.STRING and spec[1].isidentifier() and not keyword.iskeyword(spec[1])
               for spec in struct_type.thrift_spec.values())


def _out_of_range(value: int, bits: int) -> NoReturn:
    raise ValueError(f"{value} does not fit a {bits}-bit Thrift integer")


def _double(value: float) -> str:
    text = java_double(float(value))
    return f'"{text}"' if text[-1] in "Ny" else text   # NaN, Infinity, -Infinity: Java quotes these everywhere


def _double_key(value: float) -> str:
    return f'"{java_double(float(value))}"'


def _binary(value: bytes) -> str:
    return '"' + base64.b64encode(bytes(value)).decode("ascii").rstrip("=") + '"'


def _json_string(value: str | bytes) -> str:
    """Java's TJSONProtocol.writeJSONString escapes what JSON requires and nothing more (\\b\\t\\n\\f\\r, \\", \\\\,
    \\u00xx in lower-case hex for the other control characters): what Python's JSON string encoder does, in C."""
    return encode_basestring(value if isinstance(value, str) else value.decode("utf-8"))


# --- decoding -------------------------------------------------------------------------------------------------------

def decode(cls: type[T], text: str) -> T:
    """The ``cls`` object encoded in ``text`` (TJSONProtocol, as written by Java, Python or :func:`encode`).

    Unknown fields and fields of an unexpected type are skipped, as Thrift readers do. Malformed input
    raises ValueError naming the offset.
    """
    if not isinstance(text, str):
        raise ValueError(f"TJSONProtocol text must be str, not {type(text).__name__}")
    reader = _Reader(text)
    obj = cast(T, reader.struct(cls))   # None only without a class
    if reader.pos != len(text):
        reader.fail("end of input")
    return obj


def _freeze(value: Value) -> Value:
    """Decoded containers used as map keys must be hashable: lists -> tuples, recursively."""
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, expected: str) -> NoReturn:
        found = self.text[self.pos:self.pos + 20] or "end of input"
        raise ValueError(f"malformed TJSONProtocol text: expected {expected} at offset {self.pos}, "
                         f"found {found!r}")

    def expect(self, char: str) -> None:
        if not self.text.startswith(char, self.pos):
            self.fail(repr(char))
        self.pos += 1

    def peek(self, char: str) -> bool:
        return self.text.startswith(char, self.pos)

    def string(self) -> str:
        self.expect('"')
        value: str
        try:
            value, self.pos = scanstring(self.text, self.pos, False)
        except ValueError:
            self.fail("a valid JSON string")
        return value

    def number(self, quoted: bool) -> str:
        if quoted:
            self.expect('"')
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            self.fail("a number")
        token = match.group()
        self.pos += len(token)
        if quoted:
            self.expect('"')
        return token

    def integer(self, quoted: bool) -> int:
        start = self.pos
        try:
            return int(self.number(quoted))
        except ValueError:
            self.pos = start
            self.fail("an integer")

    def type_name(self) -> int:
        start = self.pos
        name = self.string()
        if name not in _TYPES:
            self.pos = start
            self.fail("a Thrift type name (tf, i8, i16, i32, i64, dbl, str, rec, lst, set, map)")
        return _TYPES[name]

    def struct(self, cls: type[T] | None) -> T | None:
        """Read a struct; with ``cls`` None (an unknown or mistyped field), read it only to skip it."""
        spec = cls.thrift_spec if cls is not None else {}
        obj = cls() if cls is not None else None
        self.expect("{")
        if self.peek("}"):
            self.pos += 1
            return obj
        while True:
            fid = self.integer(quoted=True)
            self.expect(":")
            self.expect("{")
            wire_type = self.type_name()
            self.expect(":")
            field = spec.get(fid)
            if field is not None and _matches(wire_type, field[0]):
                ttype, name, arg = _field_spec(field)
                setattr(obj, name, self.value(ttype, arg, key=False))
            else:
                self.value(wire_type, None, key=False)
            self.expect("}")
            if self.peek(","):
                self.pos += 1
                continue
            self.expect("}")
            return obj

    def value(self, ttype: int, arg: TypeSpec, key: bool) -> Value:
        if ttype == TType.BOOL:
            return self.integer(quoted=key) != 0
        if ttype in _INT_BITS:
            return self.integer(quoted=key)
        if ttype == TType.DOUBLE:
            start = self.pos
            text = self.string() if self.peek('"') else self.number(quoted=False)
            try:
                return float(text)
            except ValueError:
                self.pos = start
                self.fail("a double")
        if ttype == TType.BINARY:
            start = self.pos
            text = self.string().rstrip("=")
            try:
                return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
            except (binascii.Error, ValueError):
                self.pos = start
                self.fail("base64 data")
        if ttype == TType.STRING:
            return self.string()
        if ttype == TType.STRUCT:
            return self.struct(arg)
        if ttype in (TType.LIST, TType.SET):
            return self.sequence(arg)
        return self.mapping(arg)

    def sequence(self, arg: TypeSpec) -> list[Value]:
        self.expect("[")
        wire_type = self.type_name()
        self.expect(",")
        size = self.integer(quoted=False)
        etype, earg = _split(arg) if arg is not None else (wire_type, None)
        keep = _matches(wire_type, etype)
        if not keep:
            etype, earg = wire_type, None
        items = []
        for _ in range(size):
            self.expect(",")
            items.append(self.value(etype, earg, key=False))
        self.expect("]")
        return items if keep else []

    def mapping(self, arg: TypeSpec) -> dict[Value, Value]:
        self.expect("[")
        wire_k = self.type_name()
        self.expect(",")
        wire_v = self.type_name()
        self.expect(",")
        size = self.integer(quoted=False)
        self.expect(",")
        self.expect("{")
        (ktype, karg), (vtype, varg) = (_split(arg[0]), _split(arg[1])) if arg else ((wire_k, None),
                                                                                     (wire_v, None))
        keep = _matches(wire_k, ktype) and _matches(wire_v, vtype)
        if not keep:
            (ktype, karg), (vtype, varg) = (wire_k, None), (wire_v, None)
        result = {}
        for i in range(size):
            if i:
                self.expect(",")
            k = _freeze(self.value(ktype, karg, key=True))
            self.expect(":")
            result[k] = self.value(vtype, varg, key=False)
        self.expect("}")
        self.expect("]")
        return result if keep else {}


def _matches(wire_type: int, spec_type: int) -> bool:
    """Binary travels as a Thrift string, so "str" on the wire fits a binary field too."""
    return wire_type == spec_type or (wire_type == TType.STRING and spec_type == TType.BINARY)
