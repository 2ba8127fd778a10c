"""The file systems under the warehouse: where table and partition data lives."""
