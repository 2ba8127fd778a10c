r"""Hive's partition filter language, compiled into a predicate over partition values, and a plan of the
ranges of key values an index can select candidates by (a superset of the matches, exactly the matches where
every part is a comparison; elsewhere the predicate decides).

The filter string is what clients pass to ``get_partitions_by_filter`` and
``get_num_partitions_by_filter`` (Spark builds it in ``HiveShim.convertFilters``), e.g.::

    ds = "2024-01-01" and hr > 1        (ds) in ("a", "b")        (hr) not in (0, 1)
    ds like "2024-01-0.*"               hr between 1 and 5          `ds` = DATE '2024-01-01'

In four parts, each with one job: grammar.py (the filter's syntax -> a tree), java_values.py (partition values
read as the Java metastore reads them), plan.py (the key ranges an index can narrow the candidates to) and
compiler.py (a tree and the partition keys' types -> a predicate and a plan). Callers need only the names below.
"""
from hmsproxy.hive.partition_filter.compiler import (
    FilterTypeMismatch,
    PartitionFilter,
    compile_filter,
    compile_partition_filter,
    names_matching,
)
from hmsproxy.hive.partition_filter.grammar import FilterError

__all__ = ["FilterError", "FilterTypeMismatch", "PartitionFilter", "compile_filter", "compile_partition_filter",
           "names_matching"]
