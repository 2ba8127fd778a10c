"""TJSONProtocol encoding of thriftpy2 objects, checked against Apache Thrift's own Python TJSONProtocol.

Two Apache writers are used: hmsclient's generated classes (Hive 2 IDL, real generated write() code) and
Apache's generic spec-driven ``TProtocolBase.writeStruct`` over classes built from our Hive 4 IDL, which
covers the fields hmsclient lacks. Where Java's TJSONProtocol (what Hive runs) differs from Apache's Python
one -- doubles, base64 padding, control characters -- the expected text is Java's, spelled out below, and
Apache's Python reader must still read what we write.
"""
import math

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as apache_hms
from hypothesis import given, settings
from hypothesis import strategies as st
from thrift.protocol.TJSONProtocol import TJSONProtocol
from thrift.Thrift import TType as ATType
from thrift.transport.TTransport import TMemoryBuffer
from thriftpy2.thrift import TType

from hmsproxy.events import thrift_json
from hmsproxy.events.thrift_json import decode, encode, java_double
from hmsproxy.idl import hms

# --- Apache writers -------------------------------------------------------------------------------------------------


def apache_encode(obj) -> str:
    buf = TMemoryBuffer()
    obj.write(TJSONProtocol(buf))
    return buf.getvalue().decode("utf-8")


def apache_decode(cls, text: str):
    obj = cls()
    obj.read(TJSONProtocol(TMemoryBuffer(text.encode("utf-8"))))
    return obj


def apache_generic_decode(cls, text: str):
    """Read ``text`` with Apache's spec-driven reader into the Apache view of our class ``cls``."""
    return apache_decode(generic_class(cls), text)


def to_hmsclient(value, ttype=TType.STRUCT, arg=None):
    """The same value as hmsclient's generated (Hive 2) classes; fails on a set field hmsclient lacks."""
    if value is None:
        return None
    if ttype == TType.STRUCT:
        cls = getattr(apache_hms, type(value).__name__)
        out = cls()
        for field in value.thrift_spec.values():
            v = getattr(value, field[1])
            if v is not None:
                assert hasattr(out, field[1]), f"hmsclient's {cls.__name__} has no {field[1]}"
                setattr(out, field[1], to_hmsclient(v, field[0], field[2] if len(field) == 4 else None))
        return out
    if ttype in (TType.LIST, TType.SET):
        et, ea = (arg, None) if isinstance(arg, int) else arg
        return [to_hmsclient(v, et, ea) for v in value]
    if ttype == TType.MAP:
        (_kt, _ka), (vt, va) = [(a, None) if isinstance(a, int) else a for a in arg]
        return {k: to_hmsclient(v, vt, va) for k, v in value.items()}
    return value


_generic_classes: dict[type, type] = {}


def _apache_spec(ttype, arg):
    """Our thriftpy2 (ttype, arg) as Apache's generic spec (ttype, arg)."""
    if ttype == TType.BINARY:
        return ATType.STRING, "BINARY"
    if ttype == TType.STRING:
        return ATType.STRING, "UTF8"
    if ttype == TType.STRUCT:
        return ATType.STRUCT, [generic_class(arg), None]
    if ttype in (TType.LIST, TType.SET):
        et, ea = _apache_spec(*((arg, None) if isinstance(arg, int) else arg))
        return ttype, (et, ea, False)
    if ttype == TType.MAP:
        (kt, ka), (vt, va) = [_apache_spec(*((a, None) if isinstance(a, int) else a)) for a in arg]
        return ttype, (kt, ka, vt, va, False)
    return ttype, None


def generic_class(cls):
    """An Apache 'dynamic' class for one of our structs: written by Apache's spec-driven writeStruct."""
    if cls not in _generic_classes:
        gen = type(cls.__name__, (), {
            "write": lambda self, oprot: oprot.writeStruct(self, self.thrift_spec),
            "read": lambda self, iprot: iprot.readStruct(self, self.thrift_spec),
            **{field[1]: None for field in cls.thrift_spec.values()}})
        _generic_classes[cls] = gen
        spec = [None] * (max(cls.thrift_spec) + 1)
        for fid, field in cls.thrift_spec.items():
            ttype, arg = _apache_spec(field[0], field[2] if len(field) == 4 else None)
            spec[fid] = (fid, ttype, field[1], arg, None)
        gen.thrift_spec = tuple(spec)
    return _generic_classes[cls]


def to_generic(value):
    if hasattr(value, "thrift_spec") and isinstance(value.thrift_spec, dict):
        out = generic_class(type(value))()
        for field in value.thrift_spec.values():
            setattr(out, field[1], to_generic(getattr(value, field[1])))
        return out
    if isinstance(value, list):
        return [to_generic(v) for v in value]
    if isinstance(value, dict):
        return {k: to_generic(v) for k, v in value.items()}
    return value


# --- realistic objects ----------------------------------------------------------------------------------------------

def hive2(obj):
    """Clear the Hive 4 fields our classes default and hmsclient's lack (Table.ownerType/writeId, ...)."""
    apache = getattr(apache_hms, type(obj).__name__)()
    for name in ("ownerType", "writeId"):
        if hasattr(obj, name) and not hasattr(apache, name):
            setattr(obj, name, None)
    return obj


def storage(location="file:/wh/db.db/t", skewed=True):
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="id", type="bigint", comment="the \"key\""),
              hms.FieldSchema(name="naïve", type="string", comment=None),
              hms.FieldSchema(name="m", type="map<string,array<int>>", comment="tab\there\\slash\nline")],
        location=location, inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat", compressed=False, numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                                parameters={"field.delim": ",", "serialization.format": "1"}),
        bucketCols=[], sortCols=[hms.Order(col="id", order=1)], parameters={},
        skewedInfo=hms.SkewedInfo(
            skewedColNames=["id", "naïve"], skewedColValues=[["1", "a"], ["2", "b"]],
            skewedColValueLocationMaps={("1", "a"): "file:/wh/t/id=1/x=a", ("2", "b"): "file:/wh/t/id=2/x=b"},
        ) if skewed else hms.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={}),
        storedAsSubDirectories=skewed)


def table():
    return hive2(hms.Table(
        tableName="events", dbName="sales", owner="анна", createTime=1700000000, lastAccessTime=0, retention=0,
        sd=storage(), partitionKeys=[hms.FieldSchema(name="ds", type="string", comment="日付")],
        parameters={"EXTERNAL": "FALSE", "comment": "emoji 🎉 and \"quotes\"", "transient_lastDdlTime": "1700000000",
                    "": ""},
        viewOriginalText=None, viewExpandedText=None, tableType="MANAGED_TABLE",
        privileges=hms.PrincipalPrivilegeSet(
            userPrivileges={"anna": [hms.PrivilegeGrantInfo(privilege="SELECT", createTime=1, grantor="admin",
                                                            grantorType=1, grantOption=True)]},
            groupPrivileges={}, rolePrivileges=None),
        temporary=False, rewriteEnabled=None))


def partition():
    return hive2(hms.Partition(values=["2024-01-01"], dbName="sales", tableName="events", createTime=1700000001,
                               lastAccessTime=0, sd=storage("file:/wh/t/ds=2024-01-01", skewed=False),
                               parameters={"numFiles": "3"}, privileges=None))


def database():
    return hms.Database(name="sales", description="Sales — 2024", locationUri="file:/wh/sales.db",
                        parameters={"owner.team": "bi"}, privileges=None, ownerName="anna", ownerType=1)


def function():
    return hms.Function(functionName="my_upper", dbName="sales", className="com.example.Upper", ownerName="anna",
                        ownerType=1, createTime=1700000002, functionType=1,
                        resourceUris=[hms.ResourceUri(resourceType=1, uri="file:/jars/u.jar")])


def column_statistics():
    """Doubles and binaries chosen so Apache's Python and Java write them alike (see module docstring)."""
    def obj(name, type_, **data):
        return hms.ColumnStatisticsObj(colName=name, colType=type_, statsData=hms.ColumnStatisticsData(**data))
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(isTblLevel=False, dbName="sales", tableName="events",
                                           partName="ds=2024-01-01", lastAnalyzed=1700000003),
        statsObj=[
            obj("id", "bigint", longStats=hms.LongColumnStatsData(lowValue=-9223372036854775808,
                                                                  highValue=9223372036854775807, numNulls=0,
                                                                  numDVs=42)),
            obj("price", "double", doubleStats=hms.DoubleColumnStatsData(lowValue=-3.75, highValue=1234.5,
                                                                         numNulls=1, numDVs=7)),
            obj("naïve", "string", stringStats=hms.StringColumnStatsData(maxColLen=12, avgColLen=4.25,
                                                                          numNulls=0, numDVs=3)),
            obj("blob", "binary", binaryStats=hms.BinaryColumnStatsData(maxColLen=9, avgColLen=0.5, numNulls=2)),
            obj("ok", "boolean", booleanStats=hms.BooleanColumnStatsData(numTrues=5, numFalses=0, numNulls=0)),
            obj("amount", "decimal(10,2)", decimalStats=hms.DecimalColumnStatsData(
                lowValue=hms.Decimal(scale=2, unscaled=b"\x00\x01\x02"),
                highValue=hms.Decimal(scale=2, unscaled=b"\x7f\xff\xff"), numNulls=0, numDVs=2)),
            obj("day", "date", dateStats=hms.DateColumnStatsData(lowValue=hms.Date(daysSinceEpoch=19000),
                                                                 highValue=None, numNulls=0, numDVs=1)),
        ])


SAMPLES = {"table": table, "partition": partition, "database": database, "function": function,
           "column_statistics": column_statistics}


# --- byte-for-byte with Apache --------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", SAMPLES.values(), ids=SAMPLES.keys())
def test_same_text_as_apache_generated_code(make):
    obj = make()
    assert encode(obj) == apache_encode(to_hmsclient(obj))


@pytest.mark.parametrize("make", SAMPLES.values(), ids=SAMPLES.keys())
def test_same_text_as_apache_generic_writer(make):
    obj = make()
    assert encode(obj) == apache_encode(to_generic(obj))


@pytest.mark.parametrize("make", SAMPLES.values(), ids=SAMPLES.keys())
def test_reads_apache_output(make):
    obj = make()
    assert hive2(decode(type(obj), apache_encode(to_hmsclient(obj)))) == obj


def test_hive4_fields_match_apache_and_round_trip():
    t = table()
    t.catName, t.ownerType, t.writeId, t.isStatsCompliant, t.id = "hive", 1, 17, True, 99
    t.requiredReadCapabilities = ["HIVEFULLACIDREAD"]
    t.colStats = column_statistics()
    t.colStats.engine = "hive"
    t.colStats.statsObj[0].statsData.longStats.bitVectors = b"HLL\x00\xff\x10"  # a string in hmsclient's IDL
    t.creationMetadata = hms.CreationMetadata(catName="hive", dbName="sales", tblName="mv",
                                              tablesUsed=["sales.events"], validTxnList=None)
    assert encode(t) == apache_encode(to_generic(t))
    assert decode(hms.Table, encode(t)) == t
    db = database()
    db.catalogName, db.createTime, db.managedLocationUri, db.type = "hive", 5, "file:/managed", 1
    assert decode(hms.Database, encode(db)) == db


def test_exact_text_of_a_small_table():
    t = hms.Table(tableName="t", dbName="d", parameters={"k": "v"}, partitionKeys=[], writeId=5, catName="hive")
    assert encode(t) == ('{"1":{"str":"t"},"2":{"str":"d"},"8":{"lst":["rec",0]},'
                         '"9":{"map":["str","str",1,{"k":"v"}]},"14":{"tf":0},"17":{"str":"hive"},'
                         '"18":{"i32":1},"19":{"i64":5}}')


def test_empty_struct_and_empty_containers():
    assert encode(hms.SerDeInfo()) == "{}"
    empty = hms.SkewedInfo(skewedColNames=[], skewedColValues=[], skewedColValueLocationMaps={})
    assert encode(empty) == '{"1":{"lst":["str",0]},"2":{"lst":["lst",0]},"3":{"map":["lst","str",0,{}]}}'
    assert decode(hms.SkewedInfo, encode(empty)) == empty


def test_column_lists_are_written_by_their_content_not_their_identity():
    """Column lists are remembered by content (thrift_json.MEMO_ENTRIES of them per type): a list changed in place,
    an equal list, and more distinct lists than are remembered are each written as Apache writes them."""
    columns = [hms.FieldSchema(name="a", type="int"), hms.FieldSchema(name="b", type="string", comment="c")]
    sd = hms.StorageDescriptor(cols=columns, location="file:/t")
    first = encode(sd)
    columns[1].type = "bigint"
    columns.append(hms.FieldSchema(name="c\u00e9", type="x"))
    changed = encode(sd)
    assert first != changed and changed == apache_encode(to_hmsclient(sd))
    sd.cols = [hms.FieldSchema(name=f.name, type=f.type, comment=f.comment) for f in columns]
    assert encode(sd) == changed
    for i in range(thrift_json.MEMO_ENTRIES + 5):
        sd.cols = [hms.FieldSchema(name=f"col{i}", type="int")]
        assert encode(sd) == apache_encode(to_hmsclient(sd))
    sd.cols = columns
    assert encode(sd) == changed


# --- container map keys ---------------------------------------------------------------------------------------------

def test_list_map_keys_are_written_as_arrays_like_apache():
    info = hms.SkewedInfo(skewedColNames=["a"], skewedColValues=[["1"]],
                          skewedColValueLocationMaps={("1",): "loc1", ("x\"y",): "loc2"})
    text = encode(info)
    assert '{["str",1,"1"]:"loc1",["str",1,"x\\"y"]:"loc2"}' in text  # not valid JSON, as in Hive
    assert text == apache_encode(to_hmsclient(info)) == apache_encode(to_generic(info))
    assert decode(hms.SkewedInfo, text) == info


# --- where Java's TJSONProtocol differs from Apache's Python one ----------------------------------------------------

@pytest.mark.parametrize("value, java", [
    (0.0, "0.0"), (-0.0, "-0.0"), (1.0, "1.0"), (-2.0, "-2.0"), (0.1, "0.1"), (100.0, "100.0"),
    (123.25, "123.25"), (0.001, "0.001"), (0.0001, "1.0E-4"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
    (1e20, "1.0E20"), (1.5e-5, "1.5E-5"), (0.30000000000000004, "0.30000000000000004"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (5e-324, "4.9E-324"), (2.2250738585072014e-308,
                                                                               "2.2250738585072014E-308"),
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
])
def test_doubles_are_written_as_java_double_to_string(value, java):
    assert java_double(value) == java


def test_special_doubles_are_quoted_and_everything_reads_back_in_apache():
    stats = hms.DoubleColumnStatsData(lowValue=float("-inf"), highValue=0.1, numNulls=0, numDVs=0)
    text = encode(stats)
    assert text == '{"1":{"dbl":"-Infinity"},"2":{"dbl":0.1},"3":{"i64":0},"4":{"i64":0}}'
    back = apache_decode(apache_hms.DoubleColumnStatsData, text)
    assert (back.lowValue, back.highValue) == (float("-inf"), 0.1)
    assert math.isnan(decode(hms.DoubleColumnStatsData, encode(hms.DoubleColumnStatsData(lowValue=math.nan)))
                      .lowValue)


def test_binary_is_base64_without_padding_like_java():
    data = hms.BinaryColumnStatsData(maxColLen=1, avgColLen=1.5, numNulls=0, bitVectors=b"ab")
    text = encode(data)
    assert '"4":{"str":"YWI"}' in text
    assert apache_generic_decode(hms.BinaryColumnStatsData, text).bitVectors == b"ab"
    padded = apache_encode(to_generic(data))
    assert '"YWI="' in padded and decode(hms.BinaryColumnStatsData, padded) == data


def test_control_characters_are_escaped_like_java():
    schema = hms.FieldSchema(name="a\x01b\x1f\x7f", type="\b\t\n\f\r", comment="\u2028")
    text = encode(schema)
    assert text == '{"1":{"str":"a\\u0001b\\u001f\x7f"},"2":{"str":"\\b\\t\\n\\f\\r"},"3":{"str":"\u2028"}}'
    back = apache_decode(apache_hms.FieldSchema, text)
    assert (back.name, back.type, back.comment) == (schema.name, schema.type, schema.comment)
    assert decode(hms.FieldSchema, text) == schema


def test_integer_out_of_range_is_refused():
    with pytest.raises(ValueError, match="32-bit"):
        encode(hms.Table(createTime=2**31))


# --- decoding: tolerance and errors ---------------------------------------------------------------------------------

def test_unknown_and_mistyped_fields_are_skipped():
    text = ('{"1":{"str":"n"},"99":{"map":["i32","lst",1,{"7":["rec",1,{"1":{"dbl":"NaN"}}]}]},'
            '"2":{"i32":5},"3":{"str":"c"}}')
    assert decode(hms.FieldSchema, text) == hms.FieldSchema(name="n", type=None, comment="c")


def test_reads_escapes_java_may_write():
    assert decode(hms.FieldSchema, '{"1":{"str":"\\/\\u00e9\\ud83c\\udf89"}}').name == "/é🎉"


@pytest.mark.parametrize("text, where", [
    ("", "expected '{' at offset 0"),
    ("[]", "expected '{' at offset 0"),
    ('{"1":{"str":"t"}', "expected '}' at offset 16"),
    ('{"1":{"str":"t"}}x', "expected end of input at offset 17"),
    ('{"1":{"xyz":"t"}}', "Thrift type name"),
    ('{1:{"str":"t"}}', "expected an integer at offset 1"),
    ('{"4":{"i32":"5"}}', "expected an integer at offset 12"),
    ('{"4":{"i32":1.5}}', "an integer"),
    ('{"9":{"map":["str","str",2,{"a":"b"}]}}', "expected ','"),
    ('{"1":{"str":"unterminated}}', "a valid JSON string"),
    ('{"7":{"rec":{"11":{"rec":{"3":{"map":["lst","str",1,{"a":"b"}]}}}}}}', "expected '['"),
])
def test_malformed_text_raises_value_error_naming_the_offset(text, where):
    with pytest.raises(ValueError, match="malformed TJSONProtocol text") as exc:
        decode(hms.Table, text)
    assert where in str(exc.value)


def test_bad_base64_raises_value_error():
    with pytest.raises(ValueError, match="base64"):
        decode(hms.BinaryColumnStatsData, '{"4":{"str":"@@@"}}')


# --- properties -----------------------------------------------------------------------------------------------------

# Text Apache's Python and Java both write alike: no control characters but the short-escaped ones.
plain_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\b\t\n\f\r\"\\"),
                     max_size=12)
i32 = st.integers(-2**31, 2**31 - 1)


def tables(text=plain_text):
    return st.builds(
        lambda name, owner, created, params, cols, skew: hive2(hms.Table(
            tableName=name, dbName="db", owner=owner, createTime=created, parameters=params,
            sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name=c, type="string") for c in cols],
                                     skewedInfo=hms.SkewedInfo(skewedColValueLocationMaps=skew)),
            partitionKeys=[], temporary=False)),
        text, st.none() | text, st.none() | i32, st.dictionaries(text, text, max_size=4),
        st.lists(text, max_size=4), st.dictionaries(st.lists(text, max_size=3).map(tuple), text, max_size=3))


@settings(max_examples=150, deadline=None)
@given(tables())
def test_property_same_text_as_apache_and_round_trip(t):
    text = encode(t)
    assert text == apache_encode(to_hmsclient(t))
    assert hive2(decode(hms.Table, text)) == t


any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.floats(allow_nan=False), st.floats(allow_nan=False), st.binary(max_size=10), any_text)
def test_property_round_trip_and_apache_reads_ours(low, high, bits, name):
    stats = hms.ColumnStatisticsObj(colName=name, colType="double", statsData=hms.ColumnStatisticsData(
        doubleStats=hms.DoubleColumnStatsData(lowValue=low, highValue=high, numNulls=0, numDVs=1,
                                              bitVectors=bits)))
    text = encode(stats)
    assert decode(hms.ColumnStatisticsObj, text) == stats
    back = apache_generic_decode(hms.ColumnStatisticsObj, text)
    assert back.colName == name
    assert (back.statsData.doubleStats.lowValue, back.statsData.doubleStats.highValue) == (low, high)
    assert back.statsData.doubleStats.bitVectors == bits
