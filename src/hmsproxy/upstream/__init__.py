"""Talking to an upstream Hive Metastore: hmsproxy in front of an existing HMS."""
