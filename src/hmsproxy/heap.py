"""Handing back to the system the memory a burst of work freed, which glibc's allocator otherwise keeps.

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


def release_free_memory() -> None:
    gc.collect()
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):   # not glibc
        log.debug("malloc_trim is not available: freed memory stays with the allocator")
