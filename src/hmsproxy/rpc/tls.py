"""TLS on the Thrift port: the server's certificate and key (PEM), and optionally the CA whose certificates
clients must present (mutual TLS).

Hive's metastore takes a Java keystore (hive.metastore.use.SSL, hive.metastore.keystore.path); hmsproxy reads
those key names from hive-site.xml too, but the keystore must then be a PEM file holding the certificate chain
and its unencrypted key (`openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem` after `keytool
-importkeystore -deststoretype PKCS12` converts a JKS one). TLS 1.2 is the oldest version accepted.
"""
from __future__ import annotations

import ssl


class TlsRefused(ValueError):
    """The TLS settings cannot serve: a file is missing or unreadable, or the key does not fit the certificate."""


def server_context(cert: str, key: str = "", client_ca: str = "") -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key or None)
    except (OSError, ssl.SSLError) as exc:
        raise TlsRefused(f"TLS: cannot use the certificate {cert}" + (f" with the key {key}" if key else "")
                         + f": {exc}") from None
    if client_ca:
        try:
            context.load_verify_locations(client_ca)
        except (OSError, ssl.SSLError) as exc:
            raise TlsRefused(f"TLS: cannot read the client CA {client_ca}: {exc}") from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context
