"""Optimizing an embedded shard without stalling the worker.

The engine's `optimize()` (HNSW build, vacuum, merges) holds the GIL for its whole run —
measured: 7 s for 20k 384-d points, during which no other thread of the process ran. So it runs
in a child process, on a copy of the shard taken between writes; the writes made meanwhile are
kept in a journal and replayed onto the optimized copy, which is then swapped in. A crash at any
step leaves either the old shard or the complete new one (see folder.recover).

`python -m store.edge.optimize <shard folder>` is the child.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import qdrant_edge as qe

from core.lifecycle import start_module
from store.edge import folder
from store.protocol import StoreError

OPTIMIZING = ".optimizing-"


def copy_for_optimize(root: Path, name: str, engine: qe.EdgeShard) -> Path:
    """A copy of the live shard (no write may run meanwhile): the child optimizes this one."""
    copy = root / f"{OPTIMIZING}{name}"
    folder.copy_shard(engine, root / name, copy)
    return copy


async def optimize_in_child(copy: Path) -> None:
    """Run the engine's optimize on `copy` in a child process; StoreError if it fails."""
    child = await start_module("store.edge.optimize", str(copy))
    try:
        code = await child.wait()
    except asyncio.CancelledError:
        child.kill()
        await child.wait()
        raise
    if code != 0:
        raise StoreError(f"optimizing {copy.name} failed in the child (exit {code})")


def replay(copy: Path, journal: list[qe.UpdateOperation]) -> None:
    """Apply the writes made since the copy was taken, durably, then close the copy."""
    engine = qe.EdgeShard.load(str(copy))
    try:
        for operation in journal:
            engine.update(operation)
        engine.flush()
    finally:
        engine.close()


def discard(root: Path, name: str) -> None:
    shutil.rmtree(root / f"{OPTIMIZING}{name}", ignore_errors=True)


def main(path: str) -> None:
    os.nice(10)  # the serving processes go first
    engine = qe.EdgeShard.load(path)
    try:
        engine.optimize()
        engine.flush()
    finally:
        engine.close()


if __name__ == "__main__":
    main(sys.argv[1])
