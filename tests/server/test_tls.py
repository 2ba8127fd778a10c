"""TLS on the Thrift port: TLS clients (thriftpy2 over an SSL socket) are served, a plain or silent connection is
closed without holding anything up, mutual TLS refuses clients without a certificate from the CA, and Hive's key
names (hive.metastore.use.SSL, hive.metastore.keystore.path) turn it on from a hive-site.xml. Certificates are
made for each run with the openssl command."""
from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path

import pytest
import thriftpy2.rpc

from hmsproxy.idl import hms
from hmsproxy.ops.config import resolve
from support.cli import run_hmsproxy
from support.hmsproxy_server import start_hmsproxy
from support.ports import free_port
from support.raw_wire import call_frame, closed_within
from support.required import installed
from support.scrape import metric


@pytest.fixture(scope="module", autouse=True)
def _openssl_installed() -> None:
    installed("openssl", "openssl", "the openssl command makes the certificates")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by the CA."""
    d = tmp_path_factory.mktemp("certs")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=hmsproxy test CA", cwd=d)
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        (d / f"{name}.ext").write_text(extension + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
                 f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=d)
    (d / "server-combined.pem").write_text((d / "server.pem").read_text() + (d / "server.key").read_text())
    return d


def _tls_client(server, certs: Path, with_certificate: bool = False):
    options = {"certfile": str(certs / "client.pem"), "keyfile": str(certs / "client.key")} if with_certificate else {}
    return thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=10000,
                                     cafile=str(certs / "ca.pem"), **options)


def _served_over_tls(server, certs: Path, with_certificate: bool = False) -> bool:
    client = _tls_client(server, certs, with_certificate)
    try:
        return client.get_database("default").name == "default"
    finally:
        client.close()


def test_tls_clients_are_served_and_plain_ones_refused(tmp_path, certs):
    with start_hmsproxy(tmp_path, tls_cert=str(certs / "server.pem"), tls_key=str(certs / "server.key"), tls=True,
                        metrics_port=free_port()) as server:
        client = _tls_client(server, certs)
        client.create_database(hms.Database(name="over_tls", parameters={}))
        assert "over_tls" in client.get_all_databases()
        client.close()
        plain = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=5000)
        with pytest.raises(Exception):   # noqa: B017 (the server closes it: thriftpy2 raises a transport error)
            plain.get_all_databases()
        plain.close()
        assert metric(server, "hmsproxy_tls_handshake_failures_total") == 1
        assert _served_over_tls(server, certs)


def test_a_silent_or_garbage_connection_is_closed_within_the_request_timeout(tmp_path, certs):
    with start_hmsproxy(tmp_path, tls_cert=str(certs / "server-combined.pem"), tls=True, request_timeout_s=1.0,
                        metrics_port=free_port()) as server:
        silent = socket.create_connection((server.host, server.port))
        garbage = socket.create_connection((server.host, server.port))
        garbage.sendall(call_frame("get_all_databases", hms.ThriftHiveMetastore.get_all_databases_args()))
        assert _served_over_tls(server, certs)   # neither holds up another client's handshake
        assert closed_within(garbage, 5)
        assert closed_within(silent, 5)
        silent.close()
        garbage.close()
        assert metric(server, "hmsproxy_tls_handshake_failures_total") == 2
        assert _served_over_tls(server, certs)


def test_mutual_tls_serves_only_clients_with_a_certificate_from_the_ca(tmp_path, certs):
    with start_hmsproxy(tmp_path, tls_cert=str(certs / "server.pem"), tls_key=str(certs / "server.key"), tls=True,
                        tls_client_ca=str(certs / "ca.pem")) as server:
        assert _served_over_tls(server, certs, with_certificate=True)
        with pytest.raises((ssl.SSLError, OSError, thriftpy2.transport.TTransportException)):
            _served_over_tls(server, certs, with_certificate=False)
        assert _served_over_tls(server, certs, with_certificate=True)


def test_hive_key_names_turn_tls_on(tmp_path, certs):
    site = tmp_path / "hive-site.xml"

    def hive_site(**properties: str) -> dict[str, str]:
        site.write_text("<configuration>" + "".join(
            f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items())
            + "</configuration>")
        return {"hive_site": str(site)}

    on = resolve(hive_site(**{"hive.metastore.use.SSL": "true",
                              "hive.metastore.keystore.path": str(certs / "server-combined.pem")}), environ={})
    assert (on.tls, on.tls_cert) == (True, str(certs / "server-combined.pem"))
    off = resolve(hive_site(**{"hive.metastore.use.SSL": "false",
                               "hive.metastore.keystore.path": str(certs / "server-combined.pem")}), environ={})
    assert off.tls is False
    with pytest.raises(ValueError, match="no certificate"):
        resolve(hive_site(**{"hive.metastore.use.SSL": "true"}), environ={})
    assert resolve({"tls_cert": str(certs / "server.pem")}, environ={}).tls is True


def test_a_certificate_that_cannot_be_used_stops_the_start_with_a_clear_message(tmp_path, certs):
    code, lines = run_hmsproxy("serve", "--port", "0", "--metrics-port", "0", "--tls-cert", str(certs / "server.pem"),
                               "--tls-key", str(certs / "client.key"), cwd=tmp_path)
    assert code == 2 and "TLS: cannot use the certificate" in lines[-1]
