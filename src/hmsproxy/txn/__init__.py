"""Transactions and write ids: Hive's snapshot strings (write_ids) and, later, the transaction store."""
