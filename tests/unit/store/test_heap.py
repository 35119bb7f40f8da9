"""release_free_heap gives memory that malloc kept after a free back to the system."""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import pytest

from store.edge.heap import release_free_heap

BLOCK = 8 * 1024  # under glibc's mmap threshold: these come from the heap, not their own mapping
BLOCKS = 20_000  # ~160 MiB


def _anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon")


@pytest.mark.skipif(not release_free_heap(), reason="needs glibc's malloc_trim")
def test_freed_heap_that_malloc_kept_is_returned() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        libc.memset(block, 1, BLOCK)  # touched, so resident
    kept = blocks[::50] + blocks[-1:]  # pins the heap: malloc cannot shrink it by itself
    for block in set(blocks) - set(kept):
        libc.free(block)
    before = _anon_kib()
    assert release_free_heap()
    after = _anon_kib()
    for block in kept:
        libc.free(block)
    assert before - after > 100 * 1024, (before, after)  # most of the ~156 MiB freed came back
