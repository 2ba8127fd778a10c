"""Hive's rules as pure functions: names, patterns, filters, statistics, write ids."""
