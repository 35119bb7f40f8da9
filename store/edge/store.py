"""The embedded store: one qdrant-edge shard per collection, in a folder this process owns."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version as _package_version
from pathlib import Path
from typing import IO, Any, TypeVar

import qdrant_edge as qe

from store.edge import calls, convert, folder, heap
from store.edge import optimize as optimizer
from store.edge.convert import INDEX_IDF_FROM
from store.edge.shard import Shard, Upkeep
from store.ids import DOC_ID_KEY
from store.protocol import (
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
    SummedRanking,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# A collection name is a directory name: no separators, no leading dot (those are ours).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


class EdgeStore:
    """The Store on the embedded engine. Make it with `EdgeStore.open(root)`."""

    def __init__(
        self,
        root: Path,
        lock: IO[str],
        shards: dict[str, Shard],
        optimize_min_changes: int = 5000,
        optimize_growth: float = 0.2,
        replica: bool = False,
        index_idf_from: int = INDEX_IDF_FROM,
    ) -> None:
        self._root = root
        self._index_idf_from = index_idf_from
        self._replica = replica
        self._lock = lock
        self._shards = shards
        self._table = asyncio.Lock()
        self._upkeep = Upkeep(optimize_min_changes, optimize_growth)
        self._maintenance: set[asyncio.Task[None]] = set()
        # Called with a collection's name once an optimized shard is in (the Replicator tells
        # the replicas, which copy it instead of optimizing their own).
        self.on_optimized: Callable[[str], Awaitable[None]] | None = None
        self.opened_cleanly = True  # set by `open`: whether the last owner closed it cleanly

    @classmethod
    async def open(
        cls,
        root: Path,
        *,
        optimize_min_changes: int = 5000,
        optimize_growth: float = 0.2,
        replica: bool = False,
        index_idf_from: int = INDEX_IDF_FROM,
    ) -> EdgeStore:
        """Own `root` (StoreLocked if another process does) and load every collection in it.

        `replica`: a search node's replica (store/replication/). Its engine calls run on the event
        loop's thread: the engine holds the GIL while it works, so a worker thread bought the
        loop nothing but two hops a search. And its writes are not flushed one by one: a
        replica is copied anew at every start, so what a crash would lose costs nothing, while
        the flush of every replicated write took a third of a search node's time under load."""
        root.mkdir(parents=True, exist_ok=True)
        lock = folder.take_lock(root)
        try:
            clean = folder.take_clean_mark(root)
            if not clean:
                log.warning("the store was not closed cleanly: the engine replays its logs")
            shards = await asyncio.to_thread(_load_all, root)
        except BaseException:
            lock.close()
            raise
        store = cls(
            root, lock, shards, optimize_min_changes, optimize_growth, replica, index_idf_from
        )
        store.opened_cleanly = clean
        log.info("store opened (%d collections, closed cleanly last time: %s)", len(shards), clean)
        return store

    @property
    def root(self) -> Path:
        return self._root

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
        await self.upsert_points(name, [convert.to_point(p) for p in points])

    async def upsert_points(self, name: str, points: list[qe.Point]) -> None:
        """`upsert` of points already in the engine's form (convert.stored_to_point)."""
        if not points:  # nothing to make durable
            self._shard(name)
            return
        restorable = not self._replica  # the worker's writes may be refused (calls.replace)

        def work(engine: qe.EdgeShard, applied: list[qe.UpdateOperation]) -> None:
            calls.replace(engine, points, applied, restorable)

        await self._write(name, work, len(points), len(points))

    async def overwrite_payloads(self, name: str, payloads: dict[str, dict[str, Any]]) -> None:
        # The engine replaces the whole payload, so the private document id goes back in. One
        # operation a point (each has its own payload), one flush for them all.
        operations = [
            qe.UpdateOperation.overwrite_payload(
                [convert.point_id(doc_id)], convert.to_payload(doc_id, payload)
            )
            for doc_id, payload in payloads.items()
        ]
        if not operations:
            self._shard(name)
            return
        await self._write(name, _updates(operations), 0, len(operations))

    async def delete(self, name: str, doc_ids: list[str]) -> None:
        if not doc_ids:
            self._shard(name)
            return
        operation = qe.UpdateOperation.delete_points([convert.point_id(d) for d in doc_ids])
        await self._write(name, _updates([operation]), len(doc_ids), 0)

    async def retrieve(
        self, name: str, doc_ids: list[str], with_vectors: bool = False
    ) -> dict[str, StoredPoint]:
        ids: list[Any] = [convert.point_id(d) for d in doc_ids]
        records = await self._use(name, lambda e: e.retrieve(ids, True, with_vectors))
        points = (convert.to_stored(r, with_vectors) for r in records)
        return {p.doc_id: p for p in points}

    async def count(self, name: str) -> int:
        return await self._use(name, calls.count)

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
            filter=convert.to_filter(filter),
            with_payload=True,
            with_vector=with_vectors,
        )
        records, next_id = await self._use(name, lambda e: e.scroll(request))
        points = [convert.to_stored(r, with_vectors) for r in records]
        return ScrollPage(points, None if next_id is None else str(next_id))

    async def query_arms(self, name: str, arms: list[ArmQuery]) -> list[list[ArmHit]]:
        if not arms:
            self._shard(name)
            return []
        shard = self._shard(name)
        batch = convert.to_batch(arms, shard.schema, shard.live >= self._index_idf_from)
        results = await self._use(name, lambda e: e.query_batch(batch))
        hits, unknown = convert.to_hits(results)
        if unknown:  # points this process has not written or met: read their ids once
            records = await self._use(name, lambda e: e.retrieve(unknown, [DOC_ID_KEY], False))
            convert.learn(records)
            hits, _ = convert.to_hits(results)
        return hits

    async def query_summed(
        self, name: str, arms: list[ArmQuery], weights: tuple[float, ...], top: int
    ) -> SummedRanking:
        shard = self._shard(name)
        large = shard.live >= self._index_idf_from
        request = convert.to_summed(arms, weights, shard.schema, large)
        return await self._on(shard, name, lambda e: calls.summed(e, request, top))

    async def empty(self, name: str) -> None:
        """Drop the shard and make a fresh one with the same schema (IDF statistics reset too)."""
        async with self._table:
            shard = self._shard(name)
            async with shard.gate.exclusive():
                args = (self._root, name, shard.engine, shard.schema)
                shard.engine = await _in_thread(folder.rebuild, *args)
                shard.restart(0)
                shard.checked = True
                shard.generation += 1

    async def copy_to(self, target: Path, names: list[str] | None = None) -> None:
        """Copy shards (every one, or `names`) into `target`, each between two writes and with no
        optimized copy being swapped in meanwhile: a store `open` can load the copy."""
        target.mkdir(parents=True, exist_ok=True)
        for name in sorted(self._shards) if names is None else names:
            shard = self._shard(name)
            async with shard.writes:
                copy = functools.partial(calls.copy_shard, self._root / name, target / name)
                await self._on(shard, name, copy)
        # Each shard was flushed before it was copied: the copy opens without replaying logs.
        await asyncio.to_thread(folder.mark_closed_cleanly, target)

    async def maintain(self, name: str) -> None:
        """Start optimizing the shard when it changed enough since the last time; one at a time.

        The optimize runs in a child process on a copy (see optimize.py) and is swapped in
        when done; this returns at once. `maintenance_done` waits for it.
        """
        shard = self._shard(name)
        if shard.optimizing or not self._upkeep.due(shard):
            return
        shard.optimizing = True
        task = asyncio.create_task(self._optimize(name, shard))
        self._maintenance.add(task)
        task.add_done_callback(self._maintenance.discard)

    async def maintenance_done(self) -> None:
        """Wait for the optimizations under way (tests and shutdown)."""
        while self._maintenance:
            await asyncio.wait(set(self._maintenance))

    async def _optimize(self, name: str, shard: Shard) -> None:
        started = time.perf_counter()
        try:
            async with shard.writes:
                seen = (shard.changed, shard.versions)
                generation = shard.generation
                copy = await self._on(
                    shard, name, lambda e: optimizer.copy_for_optimize(self._root, name, e)
                )
                shard.journal = []
            await optimizer.optimize_in_child(copy)
            async with shard.gate.exclusive():
                if shard.closed or shard.generation != generation:
                    return
                await _in_thread(optimizer.replay, copy, shard.journal)
                replayed, shard.journal = len(shard.journal), None
                shard.engine = await _in_thread(
                    folder.install, self._root, name, shard.engine, copy
                )
                shard.optimized(await _in_thread(calls.count, shard.engine), seen)
            # Outside the gate: searches go on while malloc returns what the swap freed.
            await asyncio.to_thread(heap.release_free_heap)
            log.info(
                "optimized %s in %.2fs (%d writes replayed)",
                name,
                time.perf_counter() - started,
                replayed,
            )
            if self.on_optimized is not None:
                await self.on_optimized(name)
        except asyncio.CancelledError:
            raise
        except Exception:  # the live shard is untouched: serve on, optimize next time
            log.exception("optimizing %s failed", name)
        finally:
            shard.journal, shard.optimizing = None, False
            await asyncio.to_thread(optimizer.discard, self._root, name)

    async def close(self) -> None:
        """Stop optimizations, flush and close every shard, then release the folder."""
        for task in list(self._maintenance):
            task.cancel()
        await self.maintenance_done()
        async with self._table:
            for shard in self._shards.values():
                async with shard.gate.exclusive():
                    shard.closed = True
                    await _in_thread(calls.close, shard.engine)
            self._shards.clear()
            await asyncio.to_thread(folder.mark_closed_cleanly, self._root)
            self._lock.close()
        log.info("store closed cleanly")

    def _shard(self, name: str) -> Shard:
        shard = self._shards.get(name)
        if shard is None:
            raise CollectionMissing(name)
        return shard

    async def _write(self, name: str, work: calls.Work, changed: int, versions: int) -> None:
        """`work(engine, applied)` on the shard, then one flush (none in a replica)."""
        shard = self._shard(name)
        async with shard.writes:
            flush = not self._replica
            applied: list[qe.UpdateOperation] = []
            try:
                live = await self._on(shard, name, lambda e: calls.apply(e, work, applied, flush))
            finally:  # an optimized copy is being made: it needs what was applied too
                if shard.journal is not None:
                    shard.journal.extend(applied)
        shard.wrote(changed, versions, live)

    async def _use(self, name: str, work: Callable[[qe.EdgeShard], T]) -> T:
        return await self._on(self._shard(name), name, work)

    async def _on(self, shard: Shard, name: str, work: Callable[[qe.EdgeShard], T]) -> T:
        """Run `work(engine)` off the event loop while holding the shard shared."""
        async with shard.gate.shared():
            if shard.closed:
                raise CollectionMissing(name)
            if self._replica:
                return _guarded(work, shard.engine)
            return await _in_thread(work, shard.engine)


def _updates(operations: list[qe.UpdateOperation]) -> calls.Work:
    return lambda engine, applied: calls.update(engine, operations, applied)


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run a blocking engine call in a thread; a cancelled caller still waits for it to end."""
    task = asyncio.ensure_future(asyncio.to_thread(_guarded, fn, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        # The engine call cannot be stopped; keep the shard held until it is done with it.
        await asyncio.wait([task])
        raise


def _guarded(fn: Callable[..., T], *args: Any) -> T:
    """An engine call, its failures as StoreError (the engine raises bare Exception)."""
    try:
        return fn(*args)
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(str(exc)) from exc


def _load_all(root: Path) -> dict[str, Shard]:
    folder.recover(root)
    shards = {}
    for path in folder.collection_dirs(root):
        engine, schema = folder.load(path)
        shards[path.name] = Shard(engine, schema, calls.count(engine))
        shards[path.name].checked = False
    return shards


def _create(root: Path, name: str, schema: CollectionSchema) -> Shard:
    return Shard(folder.create(root, name, schema), schema, 0)
