"""Hive notification-log events: the JSON message bodies Hive writes to NOTIFICATION_LOG, and the
Thrift-in-JSON encoding (TJSONProtocol) they embed metadata objects with."""
