"""The wire: sockets, connections, Thrift framing, dispatch of a call to its handler."""
