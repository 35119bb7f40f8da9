"""Replication of the embedded store to the search nodes of the api processes.

The worker owns the store; each api process's search node (search/node.py) keeps a
replica of it and serves searches from that. `Replicator` wraps the worker's store: every write
is applied, then broadcast in order with its position (epoch, seq), and a search node that
(re)starts gets a copy of the shards with the position the copy holds (`copy`). The epoch changes
at every worker start, since a write applied just before a crash may never have been broadcast; a
`tick` with the current position goes out every heartbeat, so a replica that missed a write
learns it within seconds even when no write follows. `mark_visible` records the position of the
newest write a client was told succeeded in the host's marks (marks.py): a search node answers
a search only once its replica holds it (read-your-writes across processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from redis.asyncio import Redis

from core.bus import Bus
from core.names import REPLICATION_EXCHANGE, RedisKeys
from store.edge.store import EdgeStore
from store.protocol import (
    CollectionMissing,
    CollectionSchema,
    PointWrite,
    StoreWriter,
)
from store.read_through import ReadThrough
from store.replication.marks import Marks
from store.replication.wire import Op, Written

log = logging.getLogger(__name__)

# A search node applies a message on its event loop, between the searches it answers: a message
# of at most this many points keeps each pause short (~10 ms of seed documents), whatever the
# worker's batch (core/settings.py: 256).
REPLICATION_CHUNK = 64


class Position(NamedTuple):
    """Where a replica stands: every write of `epoch` up to `seq` applied."""

    epoch: int
    seq: int

    def text(self) -> str:
        return f"{self.epoch}:{self.seq}"


class Replicator(ReadThrough, StoreWriter):
    """The worker's store (a Store): each write applied, then broadcast; reads are the store's."""

    def __init__(self, store: EdgeStore, bus: Bus, redis: Redis, marks: Marks) -> None:
        self._store = store
        self._bus = bus
        self._redis = redis
        self._marks = marks
        self._lock = asyncio.Lock()  # one write at a time, so seq order is apply order
        self._position = Position(0, 0)
        self._marked = Position(0, 0)
        store.on_optimized = self._optimized

    async def start(self) -> None:
        """A new epoch; every replica of an older one copies the store again."""
        epoch = int(await self._redis.incr(RedisKeys.replication_epoch()))
        async with self._lock:
            self._position = Position(epoch, 0)
            await self._send("start", advance=False)
        log.info("replication epoch %d", epoch)

    async def tick(self) -> None:
        async with self._lock:
            await self._send("tick", advance=False)

    async def _optimized(self, name: str) -> None:
        """A shard was optimized: the replicas copy it rather than optimize their own (one HNSW
        build for the worker and every search node, instead of one each)."""
        async with self._lock:
            await self._send("optimized", advance=False, collection=name)

    def mark_visible(self) -> None:
        """Record the position the store holds now (it only moves forward, so the mark does)."""
        if self._position != self._marked:
            self._marks.mark_visible(*self._position)
            self._marked = self._position

    async def copy(self, target: Path, collections: list[str] | None) -> Position:
        """Copy the shards into `target`, no write running meanwhile; the position they hold."""
        async with self._lock:
            await self._store.copy_to(target, collections)
            return self._position

    # --- writes: applied, then broadcast ---

    async def create_collection(self, name: str, schema: CollectionSchema) -> None:
        async with self._lock:
            await self._store.create_collection(name, schema)
            await self._send("create", collection=name, collection_schema=asdict(schema))

    async def delete_collection(self, name: str) -> None:
        async with self._lock:
            await self._store.delete_collection(name)
            await self._send("drop", collection=name)

    async def empty(self, name: str) -> None:
        async with self._lock:
            await self._store.empty(name)
            await self._send("empty", collection=name)

    async def upsert(self, name: str, points: list[PointWrite]) -> None:
        """One store write; broadcast in messages of at most REPLICATION_CHUNK points."""
        chunks = [
            points[i : i + REPLICATION_CHUNK] for i in range(0, len(points), REPLICATION_CHUNK)
        ]
        async with self._lock, self._gap_on_failure():
            await self._store.upsert(name, points)
            for chunk in chunks or [points]:
                await self._send("upsert", collection=name, points=chunk)

    async def overwrite_payloads(self, name: str, payloads: dict[str, dict[str, Any]]) -> None:
        async with self._lock, self._gap_on_failure():
            await self._store.overwrite_payloads(name, payloads)
            await self._send("overwrite", collection=name, payloads=payloads)

    async def delete(self, name: str, doc_ids: list[str]) -> None:
        async with self._lock, self._gap_on_failure():
            await self._store.delete(name, doc_ids)
            await self._send("delete", collection=name, doc_ids=doc_ids)

    @contextlib.asynccontextmanager
    async def _gap_on_failure(self) -> AsyncIterator[None]:
        """A write that failed may have been applied in part (the operations before the one
        that failed): skip a sequence number, so the replicas see a gap at the next message and
        copy the store again rather than miss what was applied."""
        try:
            yield
        except CollectionMissing:  # nothing was applied
            raise
        except Exception:
            self._position = Position(self._position.epoch, self._position.seq + 1)
            raise

    async def _send(self, op: Op, advance: bool = True, **fields: Any) -> None:
        """Broadcast (under the lock). A write that could not be broadcast still counts: the
        replicas see the gap in `seq` at the next message, or the next tick, and copy again."""
        if advance:
            self._position = Position(self._position.epoch, self._position.seq + 1)
        epoch, seq = self._position
        message = Written(epoch=epoch, seq=seq, op=op, **fields)
        try:
            await self._bus.broadcast(REPLICATION_EXCHANGE, message.to_wire())
        except Exception as exc:  # the write itself is done; the replicas will notice the gap
            log.warning("could not broadcast %s %d:%d to the search nodes: %s", op, epoch, seq, exc)

    # --- reads (ReadThrough), housekeeping and close: the store's own ---

    def _reader(self) -> EdgeStore:
        return self._store

    async def maintain(self, name: str) -> None:
        await self._store.maintain(name)

    async def close(self) -> None:
        await self._store.close()
