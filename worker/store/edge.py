"""The embedded store: one qdrant-edge shard per collection, in a folder this process owns."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version as _package_version
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
import qdrant_edge as qe

from core.vectors import SparseVector
from worker.store import edge_folder as folder
from worker.store.conditions import build_filter
from worker.store.ids import DOC_ID_KEY, point_id, split_payload, stored_payload
from worker.store.protocol import (
    ArmHit,
    ArmQuery,
    CollectionExists,
    CollectionMissing,
    CollectionSchema,
    PointFilter,
    PointWrite,
    ScrollPage,
    StoredPoint,
    StoreError,
    StoreInfo,
    VectorValue,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# A collection name is a directory name: no separators, no leading dot (those are ours).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


class _Gate:
    """Many shared users at once (queries, writes, optimize) or one exclusive (drop, empty, close).

    An EdgeShard tolerates calls from several threads at once: in a test, 7.5k queries and counts
    ran during 40 upserts, deletes and flushes of one shard with no error or wrong result, and
    queries and updates release the GIL. So reads and writes are not serialised; only what closes
    or swaps the shard needs it alone. A waiting exclusive user goes first.
    """

    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._users = 0
        self._exclusive = False

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._exclusive)
            self._users += 1
        try:
            yield
        finally:
            async with self._cond:
                self._users -= 1
                self._cond.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._exclusive)
            self._exclusive = True
            await self._cond.wait_for(lambda: self._users == 0)
        try:
            yield
        finally:
            async with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class _Shard:
    """One open collection: the engine shard, its schema, and when it was last optimized."""

    def __init__(self, engine: qe.EdgeShard, schema: CollectionSchema, points: int) -> None:
        self.engine = engine
        self.schema = schema
        self.gate = _Gate()
        self.closed = False
        self.optimizing = False
        self.base = points  # points at the last optimize (or at load)
        self.changed = 0  # points written or deleted since
        self.checked = True  # False for a loaded shard: an optimize may be left over


class EdgeStore:
    """The Store on the embedded engine. Make it with `EdgeStore.open(root)`."""

    def __init__(
        self,
        root: Path,
        lock: IO[str],
        shards: dict[str, _Shard],
        optimize_min_changes: int = 1000,
        optimize_growth: float = 0.2,
    ) -> None:
        self._root = root
        self._lock = lock
        self._shards = shards
        self._table = asyncio.Lock()
        self._min_changes = optimize_min_changes
        self._growth = optimize_growth

    @classmethod
    async def open(
        cls, root: Path, *, optimize_min_changes: int = 1000, optimize_growth: float = 0.2
    ) -> EdgeStore:
        """Own `root` (StoreLocked if another process does) and load every collection in it."""
        root.mkdir(parents=True, exist_ok=True)
        lock = folder.take_lock(root)
        try:
            shards = await asyncio.to_thread(_load_all, root)
        except BaseException:
            lock.close()
            raise
        return cls(root, lock, shards, optimize_min_changes, optimize_growth)

    async def create_collection(self, name: str, schema: CollectionSchema) -> None:
        if not _NAME.fullmatch(name):
            raise StoreError(f"invalid collection name {name!r}")
        async with self._table:
            if name in self._shards:
                raise CollectionExists(name)
            self._shards[name] = await _in_thread(_create, self._root, name, schema)

    async def delete_collection(self, name: str) -> None:
        async with self._table:
            shard = self._shards.pop(name, None)
            if shard is None:
                return
            async with shard.gate.exclusive():
                shard.closed = True
                await _in_thread(folder.drop, self._root, name, shard.engine)

    async def collection_exists(self, name: str) -> bool:
        return name in self._shards

    async def list_collections(self) -> list[str]:
        return sorted(self._shards)

    async def describe(self) -> StoreInfo:
        return StoreInfo("qdrant-edge", _package_version("qdrant-edge-py"))

    async def upsert(self, name: str, points: list[PointWrite]) -> None:
        if not points:  # nothing to make durable
            self._shard(name)
            return
        operation = qe.UpdateOperation.upsert_points([_to_point(p) for p in points])
        await self._write(name, operation, len(points))

    async def overwrite_payload(self, name: str, doc_id: str, payload: dict[str, Any]) -> None:
        # The engine replaces the whole payload, so the private document id goes back in.
        full = stored_payload(doc_id, payload)
        await self._write(name, qe.UpdateOperation.overwrite_payload([point_id(doc_id)], full), 0)

    async def delete(self, name: str, doc_ids: list[str]) -> None:
        if not doc_ids:
            self._shard(name)
            return
        operation = qe.UpdateOperation.delete_points([point_id(d) for d in doc_ids])
        await self._write(name, operation, len(doc_ids))

    async def retrieve(
        self, name: str, doc_ids: list[str], with_vectors: bool = False
    ) -> dict[str, StoredPoint]:
        ids: list[Any] = [point_id(d) for d in doc_ids]
        records = await self._use(name, lambda e: e.retrieve(ids, True, with_vectors))
        points = (_to_stored(r, with_vectors) for r in records)
        return {p.doc_id: p for p in points}

    async def count(self, name: str) -> int:
        return await self._use(name, _count)

    async def scroll(
        self,
        name: str,
        filter: PointFilter | None,
        after: str | None,
        limit: int,
        with_vectors: bool = False,
    ) -> ScrollPage:
        """Points in point id order; the cursor is the id of the next page's first point."""
        request = qe.ScrollRequest(
            offset=after,
            limit=limit,
            filter=_to_filter(filter),
            with_payload=True,
            with_vector=with_vectors,
        )
        records, next_id = await self._use(name, lambda e: e.scroll(request))
        points = [_to_stored(r, with_vectors) for r in records]
        return ScrollPage(points, None if next_id is None else str(next_id))

    async def query_arms(self, name: str, arms: list[ArmQuery]) -> list[list[ArmHit]]:
        if not arms:
            self._shard(name)
            return []
        idf_slots = {s.name for s in self._shard(name).schema.sparse if s.idf}
        batch = qe.QueryBatchRequest([_to_request(arm, arm.slot in idf_slots) for arm in arms])
        results = await self._use(name, lambda e: e.query_batch(batch))
        return [[_to_hit(p) for p in points] for points in results]

    async def empty(self, name: str) -> None:
        """Drop the shard and make a fresh one with the same schema (IDF statistics reset too)."""
        async with self._table:
            shard = self._shard(name)
            async with shard.gate.exclusive():
                args = (self._root, name, shard.engine, shard.schema)
                shard.engine = await _in_thread(folder.rebuild, *args)
                shard.base, shard.changed, shard.checked = 0, 0, True

    async def maintain(self, name: str) -> None:
        """Optimize the shard when it changed enough since the last time; one at a time.

        `optimize()` holds the GIL while it runs, so although it runs in a thread it pauses the
        whole process (measured: seconds per 10k 384-d points); the thresholds keep it rare.
        """
        shard = self._shard(name)
        if shard.optimizing or not self._due(shard):
            return
        shard.optimizing, seen = True, shard.changed
        try:
            points = await self._on(shard, name, lambda e: _optimize(e, name))
        finally:
            shard.optimizing = False
        shard.base, shard.changed, shard.checked = points, shard.changed - seen, True

    async def close(self) -> None:
        """Flush and close every shard, then release the folder."""
        async with self._table:
            for shard in self._shards.values():
                async with shard.gate.exclusive():
                    shard.closed = True
                    await _in_thread(_close, shard.engine)
            self._shards.clear()
            self._lock.close()

    def _due(self, shard: _Shard) -> bool:
        grown = shard.changed >= max(self._min_changes, self._growth * shard.base)
        return grown or not shard.checked

    def _shard(self, name: str) -> _Shard:
        shard = self._shards.get(name)
        if shard is None:
            raise CollectionMissing(name)
        return shard

    async def _write(self, name: str, operation: qe.UpdateOperation, changed: int) -> None:
        shard = self._shard(name)
        await self._on(shard, name, lambda e: _apply(e, operation))
        shard.changed += changed

    async def _use(self, name: str, work: Callable[[qe.EdgeShard], T]) -> T:
        return await self._on(self._shard(name), name, work)

    async def _on(self, shard: _Shard, name: str, work: Callable[[qe.EdgeShard], T]) -> T:
        """Run `work(engine)` off the event loop while holding the shard shared."""
        async with shard.gate.shared():
            if shard.closed:
                raise CollectionMissing(name)
            return await _in_thread(work, shard.engine)


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run a blocking engine call in a thread; a cancelled caller still waits for it to end."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        # The engine call cannot be stopped; keep the shard held until it is done with it.
        await asyncio.wait([task])
        raise
    except StoreError:
        raise
    except Exception as exc:  # the engine raises bare Exception for every failure
        raise StoreError(str(exc)) from exc


# --- engine calls (blocking; run in threads) ---


def _apply(engine: qe.EdgeShard, operation: qe.UpdateOperation) -> None:
    engine.update(operation)
    engine.flush()  # msyncs the WAL and segments: the write is durable when this returns


def _count(engine: qe.EdgeShard) -> int:
    return engine.count(qe.CountRequest(exact=True))


def _optimize(engine: qe.EdgeShard, name: str) -> int:
    started = time.perf_counter()
    changed = engine.optimize()
    log.info("optimized %s: changed=%s in %.2fs", name, changed, time.perf_counter() - started)
    return _count(engine)


def _close(engine: qe.EdgeShard) -> None:
    engine.flush()
    engine.close()


def _load_all(root: Path) -> dict[str, _Shard]:
    folder.recover(root)
    shards = {}
    for path in folder.collection_dirs(root):
        engine, schema = folder.load(path)
        shards[path.name] = _Shard(engine, schema, _count(engine))
        shards[path.name].checked = False
    return shards


def _create(root: Path, name: str, schema: CollectionSchema) -> _Shard:
    return _Shard(folder.create(root, name, schema), schema, 0)


# --- conversions between Braid types and the engine's ---


def _to_point(point: PointWrite) -> qe.Point:
    vectors = {slot: _to_edge_vector(v) for slot, v in point.vectors.items()}
    return qe.Point(point_id(point.doc_id), vectors, stored_payload(point.doc_id, point.payload))


def _to_edge_vector(value: VectorValue) -> Any:
    if isinstance(value, SparseVector):
        return qe.SparseVector(value.indices, value.values)
    return value


def _from_edge_vector(value: Any) -> VectorValue:
    if isinstance(value, qe.SparseVector):
        return SparseVector(indices=list(value.indices), values=list(value.values))
    return list(value)


def _to_stored(record: qe.Record, with_vectors: bool) -> StoredPoint:
    doc_id, payload = split_payload(record.payload)
    if not with_vectors:
        return StoredPoint(doc_id, payload)
    raw = record.vector if isinstance(record.vector, dict) else {}
    return StoredPoint(doc_id, payload, {k: _from_edge_vector(v) for k, v in raw.items()})


def _to_request(arm: ArmQuery, idf: bool) -> qe.QueryRequest:
    query = qe.Query.Nearest(_to_edge_vector(arm.vector), using=arm.slot)
    params = None
    if idf:
        # IDF over the live points that have this vector: by default the engine reads it from the
        # sparse index, which goes on counting deleted points until a vacuum (0.3 ms an arm at 10k).
        live = qe.Filter(must=[qe.HasVectorCondition(arm.slot)])
        params = qe.SearchParams(idf=qe.IdfParams(corpus=live))
    return qe.QueryRequest(
        limit=arm.limit,
        query=query,
        filter=_to_filter(arm.filter),
        with_payload=[DOC_ID_KEY],
        params=params,
    )


def _to_hit(point: qe.ScoredPoint) -> ArmHit:
    return ArmHit(doc_id=str((point.payload or {})[DOC_ID_KEY]), score=point.score)


class _EdgeParts:
    """The engine's filter classes, for worker.store.conditions.build_filter."""

    def combine(self, must: list[Any], should: list[Any], must_not: list[Any]) -> Any:
        return qe.Filter(must=must or None, should=should or None, must_not=must_not or None)

    def match(self, key: str, value: str | int | bool) -> Any:
        # The binding reads a Python bool as the integer 1 or 0, which matches no stored boolean;
        # numpy's bool is the one type it takes as a boolean (qdrant-edge-py 0.9.0).
        typed: Any = np.bool_(value) if isinstance(value, bool) else value
        return qe.FieldCondition(key, match=qe.MatchValue(typed))

    def match_any(self, key: str, values: list[str] | list[int]) -> Any:
        return qe.FieldCondition(key, match=qe.MatchAny(values))

    def number_range(self, key: str, bounds: dict[str, float]) -> Any:
        return qe.FieldCondition(key, range=qe.RangeFloat(**bounds))

    def datetime_range(self, key: str, bounds: dict[str, str]) -> Any:
        return qe.FieldCondition(key, range=qe.RangeDateTime(**bounds))

    def is_empty(self, key: str) -> Any:
        return qe.IsEmptyCondition(key)

    def has_id(self, ids: list[str]) -> Any:
        return qe.HasIdCondition(set(ids))


_PARTS = _EdgeParts()


def _to_filter(point_filter: PointFilter | None) -> qe.Filter | None:
    filter_: qe.Filter | None = build_filter(point_filter, _PARTS)
    return filter_
