"""The cache's partition column statistics (store/cache/partition_stats.py) read as the dict they replace, after
any sequence of writes; a write to one partition copies only that partition's shard; and a map made in another
process (prewarm's workers), where strings hash differently, reads the same here."""
from __future__ import annotations

import pickle
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from hmsproxy.store.cache.partition_stats import PartitionStats

NAMES = st.sampled_from([f"ds=2024-01-{d:02d}" for d in range(1, 9)])
COLUMNS = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 9), max_size=3)
CHANGES = st.lists(st.one_of(
    st.tuples(st.just("set"), st.dictionaries(NAMES, st.one_of(st.none(), COLUMNS), max_size=4)),
    st.tuples(st.just("rename"), st.tuples(NAMES, NAMES))), max_size=10)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, COLUMNS), CHANGES)
def test_partition_stats_read_as_the_dict_they_replace(initial, changes):
    expected = {name: columns for name, columns in initial.items() if columns}
    current = PartitionStats.of(initial)
    for kind, change in changes:
        if kind == "set":
            current = current.changed(change)
            for name, columns in change.items():
                if columns:
                    expected[name] = columns
                else:
                    expected.pop(name, None)
        else:
            old, new = change
            current = current.renamed(old, new)
            if old in expected:
                expected[new] = expected.pop(old)
        assert dict(current) == expected and len(current) == len(expected)
        assert current.columns == sum(map(len, expected.values()))
        assert all(current.get(name) == expected.get(name) for name in [f"ds=2024-01-{d:02d}" for d in range(1, 9)])


def test_a_write_to_one_partition_copies_one_shard():
    stats = PartitionStats.of({f"ds={i:05d}": {"c": i} for i in range(20_000)})
    changed = stats.changed({"ds=00042": {"c": -1}})
    shared = [number for number, shard in changed._shards.items() if shard is stats._shards.get(number)]
    assert len(changed._shards) == len(stats._shards) and len(shared) == len(stats._shards) - 1
    assert changed["ds=00042"] == {"c": -1} and stats["ds=00042"] == {"c": 42}


def test_a_map_pickled_in_another_process_reads_the_same_here():
    made_there = subprocess.run(
        [sys.executable, "-c", "import pickle, sys\n"
         "from hmsproxy.store.cache.partition_stats import PartitionStats\n"
         "sys.stdout.buffer.write(pickle.dumps(PartitionStats.of({f'ds={i}': {'c': i} for i in range(500)})))"],
        check=True, capture_output=True, env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout
    here = pickle.loads(made_there)
    assert all(here[f"ds={i}"] == {"c": i} for i in range(500)) and here.columns == 500
