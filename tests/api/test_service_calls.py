"""Session and service calls: set_ugi, configuration look-ups, fb303, one-way shutdown and unknown methods."""
from __future__ import annotations

from typing import ClassVar

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as A
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TApplicationException, TClient, TMessageType
from thriftpy2.transport import TBufferedTransportFactory, TSocket

from hmsproxy.idl import fb303, hms
from support.builders import connect_hive as hive_client
from support.builders import connect_thrift as thrift_client


def test_set_ugi_returns_the_groups(client, hclient):
    assert hclient.set_ugi("bob", ["g1", "g2"]) == ["g1", "g2"]
    assert client.set_ugi("bob", []) == []


def test_get_meta_conf(client, hclient):
    assert client.getMetaConf("hive.metastore.try.direct.sql") == "true"
    with pytest.raises(A.MetaException):
        hclient.getMetaConf("no.such.key")
    with pytest.raises(A.MetaException):  # not a per-session meta conf, as in HMS
        hclient.getMetaConf("hive.metastore.warehouse.dir")


def test_get_config_value(client, hclient, backend_server):
    assert hclient.get_config_value("hive.some.unknown.key", "fallback") == "fallback"
    warehouse = client.get_config_value("hive.metastore.warehouse.dir", "x")
    assert warehouse.endswith(str(backend_server.warehouse))
    with pytest.raises(A.ConfigValSecurityException):
        hclient.get_config_value("javax.jdo.option.ConnectionPassword", "x")
    with pytest.raises(hms.ConfigValSecurityException):
        client.get_config_value("fs.s3a.secret.key", "x")
    with pytest.raises(hms.ConfigValSecurityException):  # HMS answers only hive/hdfs/mapred/metastore keys
        client.get_config_value("foo.bar", "x")


def test_fb303(client, hclient):
    assert client.getVersion()
    assert hclient.getStatus() == fb303.fb_status.ALIVE
    assert client.aliveSince() > 0
    assert isinstance(client.getName(), str)


def test_shutdown_is_one_way_and_harmless(backend_server):
    c = thrift_client(backend_server)
    c.shutdown()  # one-way: no reply is read
    assert "default" in c.get_all_databases()  # the same connection still answers
    c.close()
    h = hive_client(backend_server)
    h.shutdown()
    assert h.get_database("default").name == "default"
    h.close()
    fresh = thrift_client(backend_server)  # and the server still accepts connections
    assert fresh.getStatus() == fb303.fb_status.ALIVE
    fresh.close()


class _NoArgs:
    thrift_spec: ClassVar[dict] = {}
    default_spec: ClassVar[list] = []


def test_unknown_method_keeps_the_connection(backend_server):
    transport = TBufferedTransportFactory().get_transport(TSocket(backend_server.host, backend_server.port))
    transport.open()
    try:
        protocol = TBinaryProtocolFactory().get_protocol(transport)
        protocol.write_message_begin("no_such_method_xyz", TMessageType.CALL, 7)
        protocol.write_struct(_NoArgs())
        protocol.write_message_end()
        transport.flush()
        name, kind, seqid = protocol.read_message_begin()
        assert (name, kind, seqid) == ("no_such_method_xyz", TMessageType.EXCEPTION, 7)
        error = TApplicationException()
        protocol.read_struct(error)
        protocol.read_message_end()
        assert (error.type, error.message) == (TApplicationException.UNKNOWN_METHOD,
                                               "Invalid method name: 'no_such_method_xyz'")  # as Thrift's servers say
        same = TClient(hms.ThriftHiveMetastore, protocol)
        assert same.get_database("default").name == "default"
    finally:
        transport.close()
