"""The IDL's type stubs: they match a fresh rendering of thrift/ (so they cannot go stale) and type what
thriftpy2 builds."""
from __future__ import annotations

import ast

from hmsproxy.idl import hms, stubgen


def test_committed_stubs_match_a_fresh_rendering() -> None:
    stale = [path.name for path, text in stubgen.stubs().items()
             if not path.is_file() or path.read_text() != text]
    assert stale == [], f"regenerate with `python -m hmsproxy.idl.stubgen`: {stale}"


def _classes(source: str) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}


def _fields(cls: ast.ClassDef) -> dict[str, str]:
    return {node.target.id: ast.unparse(node.annotation) for node in cls.body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}


def _stub() -> dict[str, ast.ClassDef]:
    return _classes(stubgen.render(hms, "hive_metastore.thrift"))


def test_structs_have_their_fields_typed_by_element() -> None:
    classes = _stub()
    table = _fields(classes["Table"])
    assert table["tableName"] == "str | None"
    assert table["partitionKeys"] == "list[FieldSchema] | None"
    assert table["parameters"] == "dict[str, str] | None"
    assert table["sd"] == "StorageDescriptor | None"
    assert _fields(classes["SkewedInfo"])["skewedColValueLocationMaps"] == "dict[tuple[str, ...], str] | None"
    assert _fields(classes["HeartbeatTxnRangeResponse"])["aborted"] == "list[int] | set[int]"   # required
    assert _fields(classes["ColumnStatisticsObj"]) == {   # all three required: typed as set
        "colName": "str", "colType": "str", "statsData": "ColumnStatisticsData"}
    assert [base.id for base in classes["Table"].bases] == ["TPayload"]
    assert [base.id for base in classes["NoSuchObjectException"].bases] == ["TException"]


def test_every_struct_field_and_init_argument_is_declared() -> None:
    classes = _stub()
    for cls in hms.__thrift_meta__["structs"] + hms.__thrift_meta__["exceptions"]:
        names = [spec[1] for _, spec in sorted(cls.thrift_spec.items())]
        stub = classes[cls.__name__]
        assert list(_fields(stub)) == names, cls.__name__
        init = [[a.arg for a in node.args.args] for node in stub.body
                if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
        assert init == ([["self", *names]] if names else []), cls.__name__


def test_enums_and_client_methods() -> None:
    classes = _stub()
    values = {node.target.id: ast.literal_eval(node.value) for node in classes["PrincipalType"].body
              if isinstance(node, ast.AnnAssign) and node.value is not None}
    assert values == {"USER": hms.PrincipalType.USER, "ROLE": hms.PrincipalType.ROLE,
                      "GROUP": hms.PrincipalType.GROUP}
    client = classes["ThriftHiveMetastoreClient"]
    get_table = next(node for node in client.body if isinstance(node, ast.FunctionDef) and node.name == "get_table")
    assert ast.unparse(get_table.args) == "self, dbname: str, tbl_name: str"
    assert ast.unparse(get_table.returns) == "Table"
    methods = {node.name for node in client.body if isinstance(node, ast.FunctionDef)}
    own = set(hms.ThriftHiveMetastore.thrift_services) - set(hms.fb303.FacebookService.thrift_services)
    assert methods == own
