"""The parts of thriftpy2's generated classes that thriftpy2 leaves untyped, named once for the modules that walk
them (the binary decoder's fix-ups, the TJSONProtocol codec, Java's text of a value)."""
from __future__ import annotations

from typing import Any, TypeAlias

# A field's type argument in a thrift_spec: None for a scalar, a struct or enum class, a container's element spec
# (a bare ttype, or (ttype, its own argument)), a map's (key spec, value spec). Plain tuples that the walkers take
# apart by the ttype beside them: a union would need a check at each step, where the ttype already says the shape.
TypeSpec: TypeAlias = Any
# A thrift_spec entry: (ttype, name, [type argument,] required).
FieldSpec: TypeAlias = tuple[TypeSpec, ...]
