"""The process's memory: how often the cyclic collector runs, and handing back to the system the memory a burst of
work freed, which glibc's allocator otherwise keeps.

After prewarm, most of what the loader allocated is garbage (rows, objects before encoding, pickled
results); the cache keeps a fraction. glibc returns freed memory at the top of its heaps only, so the rest
stays in the process's RSS unless malloc_trim asks for it. Elsewhere (libc without malloc_trim) nothing happens.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

log = logging.getLogger(__name__)

# CPython collects its youngest generation once 700 more container objects were made than freed. A write of 100
# partitions holds a few thousand at once (the request's objects, rows, the event), so it ran the collector five
# to six times per call, each promoting the call's live objects, whose older generations' scans followed: 2.9 ms
# of an add_partitions of 100 (8% of its CPU) and stalls of 50 ms. Nearly everything here is freed by reference
# counting; at 50,000 a call's objects are gone before the collector looks, and cycles still go within 50,000.
YOUNG_COLLECTION_THRESHOLD = 50_000


def collect_less_often() -> None:
    """Raises the youngest generation's threshold to YOUNG_COLLECTION_THRESHOLD (the older ones keep theirs)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


def release_free_memory() -> None:
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):   # not glibc
        log.debug("malloc_trim is not available: freed memory stays with the allocator")
