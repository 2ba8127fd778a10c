"""The Hive Metastore Thrift IDL, loaded once with thriftpy2.

Everything in hmsproxy that needs a Thrift type imports it from here::

    from hmsproxy.idl import hms
    hms.Table, hms.ThriftHiveMetastore, hms.NoSuchObjectException, ...

Why a module of its own: thriftpy2 builds the types by parsing the .thrift files at run time;
doing that once, under one fixed module name ("hive_metastore_thrift"), makes the classes
picklable and identical everywhere, and gives one place for the fix-up below.

The fix-up (SkewedInfo.skewedColValueLocationMaps)
--------------------------------------------------
Hive declares that field as ``map<list<string>, string>``. thriftpy2 decodes a Thrift list
as a Python ``list``, which cannot be a dict key, so decoding any non-empty such map raises
``TypeError`` and the whole request fails. Both of thriftpy2's decoders do this:

* the compiled one (``thriftpy2.protocol.cybin``) builds the map in C (a dict comprehension
  in ``c_read_val``); nothing there can be patched or hooked from Python;
* the pure-Python one (``thriftpy2.protocol.binary.read_val``) is an ordinary module
  function that calls itself through the module's globals, so it can be replaced.

So, keeping the IDL wire-identical to Hive's, :func:`_install_skewed_map_fix`

1. replaces the pure-Python ``read_val`` with one that turns list (and set) map keys into
   (nested) tuples -- it behaves exactly like the original for every other value; and
2. gives every generated class whose fields can (transitively) contain a ``SkewedInfo`` a
   ``read()`` that, when handed the compiled protocol, decodes through the pure-Python
   protocol on the *same* transport instead. thriftpy2 always decodes a message's args and
   results, and ``thriftpy2.utils.deserialize``, through ``obj.read(proto)``, so servers
   and clients pick this up without any change. The pure-Python decoder is slower (about
   4x), but only payloads that carry a storage descriptor take that path -- table and
   partition writes, and replies carrying tables/partitions on the client side; the
   server's hot read path (get_table args etc.) stays compiled. Encoding is unaffected:
   both encoders write tuple keys correctly.

Result: such maps round-trip, with keys as tuples of strings, e.g.
``{("a", "1"): "hdfs://.../a=1"}``. Code that builds a SkewedInfo must use tuple keys.
Code that decodes bytes itself must call ``obj.read(protocol)`` (not
``protocol.read_struct(obj)``) to get the fix.

The second fix-up (a field that is a set in Hive 2.3 and a list since)
----------------------------------------------------------------------
Hive 3 turned ``GetOpenTxnsResponse.open_txns`` (field 2) from ``set<i64>`` into
``list<i64>`` (:data:`LEGACY_CONTAINER_KINDS` lists every such field; tests/test_idl_wire.py
checks the list against Hive 2.3's IDL). Both decoders skip a field whose wire type is not
the declared one, so a Hive 2.3 server's answer would lose the field. Reading: the
pure-Python ``read_struct`` is replaced by one that also reads a list field sent as a set
and a set field sent as a list (the two are encoded alike after the type byte), and the
classes that can carry such a field decode through it, as above. Writing: the server sends
such a field in both kinds (dispatch.py), so Hive 2.3 and Hive 3/4 clients each read one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import thriftpy2
from thriftpy2.protocol import binary as _pybinary
from thriftpy2.protocol.base import TProtocolBase
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TPayload, TType

from hmsproxy.idl.specs import InBuffer, TypeSpec, Value

try:  # the compiled protocol is optional in thriftpy2 (absent on some platforms)
    # From the compiled module itself: it has no type stubs, so to mypy the class is Any.
    from thriftpy2.protocol.cybin.cybin import TCyBinaryProtocol
except ImportError:  # pragma: no cover - always present in our venv
    TCyBinaryProtocol = None

__all__ = ["LEGACY_CONTAINER_KINDS", "MODULE_NAME", "THRIFT_DIR", "fb303", "hms"]

MODULE_NAME = "hive_metastore_thrift"

_CONTAINER_TYPES = (TType.LIST, TType.SET)

#: Fields whose container kind Hive changed after 2.3: struct name -> field id -> the kind Hive 2.3 declares
#: (ours follows Hive 4). Written in both kinds, read in either (module docstring).
LEGACY_CONTAINER_KINDS: dict[str, dict[int, int]] = {"GetOpenTxnsResponse": {2: TType.SET}}


def _find_thrift_dir() -> Path:
    """Locate the .thrift files: packaged next to this module, else the source checkout."""
    here = Path(__file__).parent.parent / "thrift"
    if (here / "hive_metastore.thrift").is_file():
        return here
    return Path(__file__).resolve().parents[3] / "thrift"


THRIFT_DIR: Path = _find_thrift_dir()


# --- the pure-Python decoder, taught to accept container map keys -------------------------

# getattr(): on a re-import, wrap thriftpy2's own function again, not our wrapper.
_original_read_val: Callable[..., Value] = getattr(_pybinary.read_val, "hmsproxy_original",
                                                 _pybinary.read_val)
# The other steps of its map branch, with the types thriftpy2 leaves unannotated.
_check_depth: Callable[[int, str], None] = _pybinary.check_depth
_read_map_begin: Callable[[InBuffer], tuple[int, int, int]] = _pybinary.read_map_begin
_skip: Callable[[InBuffer, int, int], None] = _pybinary.skip


def _freeze(value: Value) -> Value:
    """Make a decoded container usable as a dict key (lists -> tuples, recursively)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _split_spec(spec: TypeSpec) -> tuple[int, TypeSpec]:
    """thriftpy2 container specs are either a bare ttype or (ttype, nested spec)."""
    if isinstance(spec, int):
        return spec, None
    return spec[0], spec[1]


def _read_val(inbuf: InBuffer, ttype: int, spec: TypeSpec = None, decode_response: bool = True,
              strict_decode: bool = False, budget: int = _pybinary.DEFAULT_MAX_DEPTH) -> Value:
    """Drop-in for thriftpy2.protocol.binary.read_val that freezes list/set map keys."""
    if ttype != TType.MAP or _split_spec(spec[0])[0] not in _CONTAINER_TYPES:
        return _original_read_val(inbuf, ttype, spec, decode_response, strict_decode, budget)

    # Same steps as thriftpy2's own map branch, plus _freeze() on the key.
    k_type, k_spec = _split_spec(spec[0])
    v_type, v_spec = _split_spec(spec[1])
    _check_depth(budget, " while reading a Thrift container")
    budget -= 1
    sk_type, sv_type, size = _read_map_begin(inbuf)
    if sk_type in _pybinary.BIN_TYPES:
        sk_type = k_type
    if sv_type in _pybinary.BIN_TYPES:
        sv_type = v_type
    if sk_type != k_type or sv_type != v_type:
        for _ in range(size):
            _skip(inbuf, sk_type, budget)
            _skip(inbuf, sv_type, budget)
        return {}
    result = {}
    for _ in range(size):
        key = _freeze(_pybinary.read_val(inbuf, k_type, k_spec, decode_response,
                                         strict_decode, budget))
        result[key] = _pybinary.read_val(inbuf, v_type, v_spec, decode_response,
                                         strict_decode, budget)
    return result


_read_val.hmsproxy_original = _original_read_val  # type: ignore[attr-defined]

_read_field_begin: Callable[[InBuffer], tuple[int, int]] = _pybinary.read_field_begin


def _read_as(wire_type: int, declared: int) -> int | None:
    """The type a field sent as `wire_type` is read as (its declared one), or None: it is skipped.
    thriftpy2 reads string/binary as whatever was declared; a list and a set are encoded alike after the type
    byte, so each is read as the other too."""
    if wire_type == declared or wire_type in _pybinary.BIN_TYPES:
        return declared
    if wire_type in _CONTAINER_TYPES and declared in _CONTAINER_TYPES:
        return declared
    return None


def _read_struct(inbuf: InBuffer, obj: TPayload, decode_response: bool = True, strict_decode: bool = False,
                 budget: int = _pybinary.DEFAULT_MAX_DEPTH) -> None:
    """Drop-in for thriftpy2.protocol.binary.read_struct that reads a list field sent as a set and the other way
    round (Hive 2.3 <-> 3+, see LEGACY_CONTAINER_KINDS)."""
    _check_depth(budget, " while reading a Thrift struct")
    budget -= 1
    fields = obj.thrift_spec
    while True:
        wire_type, fid = _read_field_begin(inbuf)
        if wire_type == TType.STOP:
            return
        field = fields.get(fid)
        read_type = None if field is None else _read_as(wire_type, field[0])
        if field is None or read_type is None:
            _skip(inbuf, wire_type, budget)
            continue
        spec = field[2] if len(field) > 3 else None
        setattr(obj, field[1], _pybinary.read_val(inbuf, read_type, spec, decode_response, strict_decode, budget))


def _tolerant_read(self: TPayload, iprot: TProtocolBase) -> None:
    """TPayload.read that avoids the compiled decoder (it cannot build list-keyed maps, nor read a list field
    sent as a set)."""
    if TCyBinaryProtocol is not None and isinstance(iprot, TCyBinaryProtocol):
        proto: TProtocolBase = TBinaryProtocol(  # type: ignore[no-untyped-call]  # thriftpy2 leaves it unannotated
            iprot.trans, strict_read=iprot.strict_read, decode_response=iprot.decode_response,
            strict_decode=iprot.strict_decode, max_depth=iprot.max_depth)
        try:
            proto.read_struct(self)
        except Exception:
            iprot.trans.clean()  # what the compiled protocol does on a decode error
            raise
        return
    iprot.read_struct(self)


# --- which generated classes need it ------------------------------------------------------

def _spec_classes(spec: TypeSpec) -> list[type]:
    """The struct classes named by one thrift_spec entry's type spec (any nesting)."""
    if isinstance(spec, type):
        return [spec]
    if isinstance(spec, tuple):
        found: list[type] = []
        for part in spec:
            found.extend(_spec_classes(part))
        return found
    return []


def _has_container_keyed_map(spec: tuple[int, TypeSpec]) -> bool:
    """True if a field's (ttype, spec) declares a map with list/set keys, at any depth."""
    ttype, sub = spec
    if ttype == TType.MAP:
        k_type, k_spec = _split_spec(sub[0])
        if k_type in _CONTAINER_TYPES:
            return True
        return (_has_container_keyed_map((k_type, k_spec))
                or _has_container_keyed_map(_split_spec(sub[1])))
    if ttype in _CONTAINER_TYPES:
        return _has_container_keyed_map(_split_spec(sub))
    return False


def _generated_classes(module: ModuleType) -> list[type[TPayload]]:
    """Every struct/union/exception of the module, and every service's _args/_result."""
    meta = module.__thrift_meta__
    classes: list[type[TPayload]] = []
    for kind in ("structs", "unions", "exceptions"):
        classes.extend(meta.get(kind, []))
    for service in meta.get("services", []):
        for name in service.thrift_services:
            for suffix in ("_args", "_result"):
                cls = getattr(service, name + suffix, None)
                if cls is not None:
                    classes.append(cls)
    return classes


def _direct_fields(cls: type) -> list[tuple[int, TypeSpec]]:
    """(ttype, type spec) of every field of a generated class."""
    return [(f[0], f[2] if len(f) > 3 else None)
            for f in getattr(cls, "thrift_spec", {}).values()]


def _compiled_decoder_fails(cls: type) -> bool:
    """True if the compiled decoder cannot read one of the class's own fields (both fix-ups)."""
    return (cls.__name__ in LEGACY_CONTAINER_KINDS
            or any(_has_container_keyed_map(f) for f in _direct_fields(cls)))


def _classes_needing_fix(classes: list[type[TPayload]]) -> list[type[TPayload]]:
    """Classes whose decoding can meet a list/set-keyed map or a LEGACY_CONTAINER_KINDS field, directly or
    through fields.

    A fixed-point iteration, so reference cycles (Table -> CreationMetadata -> SourceTable
    -> Table) need no special care.
    """
    bad = {cls for cls in classes if _compiled_decoder_fails(cls)}
    grew = True
    while grew:
        grew = False
        for cls in classes:
            if cls not in bad and any(c in bad for f in _direct_fields(cls)
                                      for c in _spec_classes(f[1])):
                bad.add(cls)
                grew = True
    return [cls for cls in classes if cls in bad]


def _install_decoding_fixes(module: ModuleType) -> list[type[TPayload]]:
    """Apply the fix-ups described in the module docstring; returns the classes it changed."""
    _pybinary.read_val = _read_val
    _pybinary.read_struct = _read_struct
    changed = _classes_needing_fix(_generated_classes(module))
    for cls in changed:
        cls.read = _tolerant_read  # type: ignore[method-assign]
    return changed


def _load() -> ModuleType:
    module = thriftpy2.load(str(THRIFT_DIR / "hive_metastore.thrift"),
                            module_name=MODULE_NAME, include_dirs=[str(THRIFT_DIR)])
    _install_decoding_fixes(module)
    return module


if TYPE_CHECKING:  # to mypy, the stubs generated from the same .thrift files (stubgen.py)
    from hmsproxy.idl import fb303_thrift as fb303
    from hmsproxy.idl import hive_metastore_thrift as hms
else:
    #: The generated Hive Metastore module (types, exceptions, enums, ThriftHiveMetastore).
    hms = _load()
    #: The included fb303 module (FacebookService, fb_status).
    fb303 = hms.fb303
