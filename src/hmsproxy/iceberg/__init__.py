"""The Iceberg REST catalog and its server-side scan planning."""
