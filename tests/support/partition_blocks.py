"""Cached partition sets cut into blocks of a few partitions, so that a test's small sets cross blocks."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hmsproxy.store.cache import partition_block, partitions


@contextmanager
def small_blocks(size: int) -> Iterator[None]:
    """Sets built and written within it hold at most `size` partitions per block (2 * `size` once written)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(partition_block, "BLOCK", size)
        patch.setattr(partitions, "BLOCK", size)
        yield
