"""`hmsproxy serve --hive-site FILE` serves the database a Java HMS's hive-site.xml names (issue 13): the
JDBC URL, user and warehouse come from the file, and what a client writes lands in that database."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as A
from sqlalchemy import create_engine, text

from support.databases import fresh_database
from support.ports import free_port

JDBC = {"mariadb": ("jdbc:mysql://127.0.0.1:3306/{name}?useSSL=false", "root"),
        "postgres": ("jdbc:postgresql://127.0.0.1:5432/{name}", "postgres")}


@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_serve_takes_the_database_and_warehouse_from_a_hive_site(backend, tmp_path):
    with fresh_database(backend, tmp_path) as url:
        jdbc, user = JDBC[backend]
        jdbc_url = jdbc.format(name=url.rsplit('/', 1)[1])
        site = tmp_path / "hive-site.xml"
        site.write_text(f"""<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>{jdbc_url}</value></property>
  <property><name>javax.jdo.option.ConnectionUserName</name><value>{user}</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file:{tmp_path / 'wh'}</value></property>
</configuration>""")
        port = free_port()
        with open(tmp_path / "server.log", "w") as log:  # the child writes to its own copy of the descriptor
            server = subprocess.Popen([sys.executable, "-m", "hmsproxy.cli", "serve", "--hive-site", str(site),
                                       "--port", str(port), "--metrics-port", "0"], cwd=tmp_path, stdout=log,
                                      stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the server did not start"
                    time.sleep(0.05)  # waiting for a child process to open its port
            with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
                client.create_database(A.Database(name="from_site", parameters={}))
                location = client.get_database("from_site").locationUri
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        engine = create_engine(url)
        with engine.connect() as conn:
            names = conn.execute(text('SELECT "NAME" FROM "DBS"' if backend == "postgres" else "SELECT NAME FROM DBS"))
            assert "from_site" in {row[0] for row in names}
        engine.dispose()
        assert location == f"file:{tmp_path / 'wh'}/from_site.db"
        assert (tmp_path / "wh" / "from_site.db").is_dir()
