"""Raw Thrift frames and bare sockets, for tests of what a client library would never send."""
from __future__ import annotations

import socket

import thriftpy2.rpc
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TMemoryBuffer

from hmsproxy.idl import hms
from support.running import RunningServer


def call_frame(name: str, args: object) -> bytes:
    """The bytes of one call, as the unframed binary protocol sends it."""
    buffer = TMemoryBuffer()
    protocol = TBinaryProtocolFactory().get_protocol(buffer)
    protocol.write_message_begin(name, TMessageType.CALL, 1)
    protocol.write_struct(args)
    protocol.write_message_end()
    return buffer.getvalue()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True if the server closes the connection (recv gives b'' or a reset) within `seconds`."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def serves(server: RunningServer) -> bool:
    """True if a new client gets an answer to get_database('default')."""
    client = thriftpy2.rpc.make_client(hms.ThriftHiveMetastore, server.host, server.port, timeout=5000)
    try:
        return client.get_database("default").name == "default"
    except Exception:
        return False
    finally:
        client.close()
