"""The embedded store's engine calls: blocking, each run by store.edge.store on a thread (or, in
a replica, on the event loop's) while it holds the shard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from store.edge import convert, folder
from store.protocol import SummedRanking

# A write's engine calls: given the engine and a list, it adds each operation it applied to it.
Work = Callable[[qe.EdgeShard, list[qe.UpdateOperation]], None]


def apply(engine: qe.EdgeShard, work: Work, applied: list[qe.UpdateOperation], flush: bool) -> int:
    """`work(engine, applied)`, then, where `flush`, one flush: it msyncs the WAL and segments, so
    every operation is durable when this returns. `work` adds each operation it applied to
    `applied`: if one fails, those before it stay applied (and are flushed by the next write).
    Returns the live points."""
    work(engine, applied)
    if flush:
        engine.flush()
    return live_points(engine)


def update(
    engine: qe.EdgeShard, operations: list[qe.UpdateOperation], applied: list[qe.UpdateOperation]
) -> None:
    """Apply `operations` in order."""
    for operation in operations:
        engine.update(operation)
        applied.append(operation)


def replace(
    engine: qe.EdgeShard,
    points: list[qe.Point],
    applied: list[qe.UpdateOperation],
    restorable: bool,
) -> None:
    """Upsert `points` as a delete of their ids, then an insert of them.

    The engine upserts a point its appendable segment holds in place, diffing the old sparse
    vectors against the new ones term by term: 145-159 CPU-µs a seed keyword point with a new
    text, against 40-44 deleted first, when the new version is a plain insert (docs/benchmarks.md,
    "Overwrites as a delete and an insert"). A point in an optimized segment, or none, costs the
    same either way. The deleted version's postings stay in the appendable segment until the
    next optimize, skipped by searches and counted by the index statistics as any overwritten
    version is (convert.INDEX_IDF_FROM).

    `restorable` (the worker, whose writes may be refused): the versions the delete removes are
    read first, and put back if the engine refuses the insert, before its error goes up, so a
    refused write leaves each document that was there as it was. (A new one the engine wrote
    before the point it refused stays, as before: the worker applies the batch again one write at
    a time.) A replica applies what the worker's engine took, and copies the worker's store again
    if its own refuses it."""
    ids: list[Any] = [point.id for point in points]
    before = engine.retrieve(ids, True, True) if restorable else None
    if before is None or before:  # a replica does not look; a bulk load's are not there
        update(engine, [qe.UpdateOperation.delete_points(ids)], applied)
    try:
        update(engine, [qe.UpdateOperation.upsert_points(points)], applied)
    except Exception:
        if before:
            kept = [qe.Point(r.id, r.vector or {}, r.payload) for r in before]
            update(engine, [qe.UpdateOperation.upsert_points(kept)], applied)
        raise


def live_points(engine: qe.EdgeShard) -> int:
    """The shard's live points as its segments keep them: ~1 µs, where an exact count passes
    over every point (2.2 ms at 20,000); the same number after overwrites and deletes."""
    return engine.count(qe.CountRequest(exact=False))


def copy_shard(source: Path, target: Path, engine: qe.EdgeShard) -> None:
    folder.copy_shard(engine, source, target)


def count(engine: qe.EdgeShard) -> int:
    return engine.count(qe.CountRequest(exact=True))


def close(engine: qe.EdgeShard) -> None:
    engine.flush()
    engine.close()


def summed(engine: qe.EdgeShard, request: qe.QueryRequest, top: int) -> SummedRanking:
    """Run a `convert.to_summed` query and read the payloads of its first `top` points. Only
    those points' ids are read: the binding builds a Python UUID for every id read, which cost
    more than the engine's whole summing of the other candidates."""
    points = engine.query(request)
    best = [point.id for point in points[:top]]
    records = {record.id: record for record in engine.retrieve(best, True, False)}
    stored = [records.get(point) for point in best]
    return SummedRanking(
        [point.score for point in points],
        [None if record is None else convert.to_stored(record, False) for record in stored],
    )
