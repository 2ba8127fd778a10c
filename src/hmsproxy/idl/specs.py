"""The parts of thriftpy2's generated classes that thriftpy2 leaves untyped, named once for the modules that walk
them (the binary decoder's fix-ups, the TJSONProtocol codec, Java's text of a value)."""
from __future__ import annotations

from typing import Any, TypeAlias

from thriftpy2.thrift import TPayload

# A field's type argument in a thrift_spec: None for a scalar, a struct or enum class, a container's element spec
# (a bare ttype, or (ttype, its own argument)), a map's (key spec, value spec). Plain tuples that the walkers take
# apart by the ttype beside them: a union would need a check at each step, where the ttype already says the shape.
TypeSpec: TypeAlias = Any
# A thrift_spec entry: (ttype, name, [type argument,] required).
FieldSpec: TypeAlias = tuple[TypeSpec, ...]
# A decoded value: a struct's field, a container's element (a list or set key of a map is a tuple: map keys must be
# hashable).
Value: TypeAlias = (bool | int | float | str | bytes | TPayload | list["Value"] | tuple["Value", ...]
                    | dict["Value", "Value"] | None)
# The input buffer thriftpy2's pure-Python binary decoder reads from (its functions leave it unannotated).
InBuffer: TypeAlias = Any
