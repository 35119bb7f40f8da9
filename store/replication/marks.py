"""What a search node checks before every search, in a file the host's processes map into memory.

With the embedded store the worker and every api process share `$BRAID_DATA_DIR` on one host
(the replicas are copied through it). Two numbers live in `Marks`, written by the worker only:

- the replication position of the newest write a client was told succeeded (sync writes,
  collection changes): a node answers only once its replica holds it (read-your-writes);
- the catalog's generation, bumped after every collection create or drop: a node keeps each
  collection's parsed config until it changes.

The worker stores each before it answers the request that moved it, and a node reads both from
memory: a Redis round trip per search for the same two facts cost the keyword load study about a
tenth of its throughput (docs/benchmarks.md, 2026-11-27). Each is one aligned 64-bit word,
written whole, so a reader never sees half of one; the file is never replaced, so a restarted
worker writes where the nodes read.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import NamedTuple

_LAYOUT = struct.Struct("<QQ")  # visible position, catalog generation
_SEQ_BITS = 40  # a position packs as epoch << 40 | seq
_SEQ_MASK = (1 << _SEQ_BITS) - 1


class Marked(NamedTuple):
    """One reading: the visible position as (epoch, seq), None before any; the generation."""

    visible: tuple[int, int] | None
    catalog: int


def pack(epoch: int, seq: int) -> int:
    if not 0 < epoch < 1 << (64 - _SEQ_BITS) or not 0 <= seq <= _SEQ_MASK:
        raise ValueError(f"position {epoch}:{seq} does not fit a mark")
    return epoch << _SEQ_BITS | seq


def unpack(word: int) -> tuple[int, int] | None:
    return None if word == 0 else (word >> _SEQ_BITS, word & _SEQ_MASK)


class Marks:
    """The mapped file. `Marks.open(path)` maps it for the worker, creating it if need be;
    `Marks.read_only(path)` for a node, once the worker has made it."""

    def __init__(self, view: mmap.mmap, writable: bool) -> None:
        self._view = view
        self._writable = writable

    @classmethod
    def open(cls, path: Path) -> Marks:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < _LAYOUT.size:
                os.ftruncate(fd, _LAYOUT.size)  # zeros: no position, generation 0
            view = mmap.mmap(fd, _LAYOUT.size)
        finally:
            os.close(fd)
        return cls(view, writable=True)

    @classmethod
    def read_only(cls, path: Path) -> Marks:
        """FileNotFoundError until the worker has started once with this data folder."""
        with path.open("rb") as file:
            return cls(mmap.mmap(file.fileno(), _LAYOUT.size, access=mmap.ACCESS_READ), False)

    def read(self) -> Marked:
        visible, catalog = _LAYOUT.unpack_from(self._view)
        return Marked(unpack(visible), catalog)

    def mark_visible(self, epoch: int, seq: int) -> None:
        self._store(0, pack(epoch, seq))

    def bump_catalog(self) -> None:
        self._store(8, self.read().catalog + 1)

    def _store(self, offset: int, word: int) -> None:
        if not self._writable:
            raise PermissionError("a search node only reads the marks")
        # One 8-byte copy into the aligned word: readers see the old value or the new one.
        self._view[offset : offset + 8] = word.to_bytes(8, "little")

    def close(self) -> None:
        self._view.close()
