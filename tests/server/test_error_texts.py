"""What a client is told when the server fails (issue 11): the call's declared MetaException in the
client's terms with an error id, never the SQL, its parameters, file paths or database hosts (those go
to the server log, whose traceback is written once per burst of failures, not once per call); a call in
the IDL that hmsproxy does not serve names itself; one not in the IDL is named as Thrift's servers do."""
from __future__ import annotations

import re
import sqlite3

import pytest

from hmsproxy.idl import hms
from support.builders import connect_thrift
from support.hmsproxy_server import start_hmsproxy_process


def test_a_failing_database_is_reported_without_its_details_and_logged_once_per_burst(tmp_path):
    database = tmp_path / "metastore.db"
    server = start_hmsproxy_process(tmp_path / "server", f"sqlite:///{database}")
    try:
        client = connect_thrift(server, timeout_ms=30000)
        client.create_database(hms.Database(name="d", parameters={}))
        with sqlite3.connect(database) as broken:   # the table vanishes behind the server's back
            broken.execute('DROP TABLE "FUNCS"')
        messages = []
        for i in range(20):
            with pytest.raises(hms.MetaException) as failure:
                client.create_function(hms.Function(functionName=f"f{i}", dbName="d", className="x.Y", ownerType=1,
                                                    functionType=1, resourceUris=[]))
            messages.append(failure.value.message)
        for message in messages:
            assert re.fullmatch(r"create_function: the metastore database could not be reached or did not answer; "
                                r"nothing was changed \(server log: error id [0-9a-f]{12}\)", message), message
            assert str(tmp_path) not in message and "FUNC" not in message and "INSERT" not in message
        assert client.get_database("d").name == "d"     # the connection and the server serve on
        client.close()
    finally:
        server.stop()
    log = next((tmp_path / "server").glob("hmsproxy-*.log")).read_text()
    assert log.count("internal error in create_function") == 1, log[-4000:]   # one record, with its traceback
    assert messages[0].split("error id ")[1].rstrip(")") in log   # the first one's details are findable


def test_calls_hmsproxy_does_not_serve_and_calls_not_in_the_idl_are_named(tmp_path):
    server = start_hmsproxy_process(tmp_path, f"sqlite:///{tmp_path / 'm.db'}")
    try:
        client = connect_thrift(server, timeout_ms=30000)
        with pytest.raises(hms.MetaException) as refusal:
            client.get_primary_keys(hms.PrimaryKeysRequest(db_name="default", tbl_name="t"))
        assert refusal.value.message == "get_primary_keys is not supported by hmsproxy"
        assert client.get_database("default").name == "default"
        client.close()
    finally:
        server.stop()
