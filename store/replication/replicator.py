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

When every search node's heartbeat says its replica is idle (no search for BRAID_REPLICA_IDLE_S:
it drops the stream unread), the writes go out to nobody: the replicator is quiet, taking each
write's `seq` without broadcasting it; markers still go out. A replica that wakes asks for a copy
first, with the position it holds, which ends the quiet before anything more is written; where
it holds the newest write there is nothing to copy. A replica the worker wrongly thought idle
sees the gap at the next message or tick and copies again, as after any missed write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.bus import Bus
from core.heartbeats import SEARCH_NODE_BEAT_S, SearchNodeBeat, parse_search_nodes
from core.names import REPLICATION_EXCHANGE, RedisKeys
from store.edge import convert
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
# A search node's beat older than this is of a node gone or stalled: it does not keep the stream
# going (one that is alive copies again at its next message or tick, seeing the gap).
BEAT_FRESH_S = 3 * SEARCH_NODE_BEAT_S


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
        self._quiet = False  # every replica is idle: writes are not broadcast
        # Wall-clock time (as beats are stamped) of the last copy a search node asked for.
        self._copied_at = 0.0
        store.on_optimized = self._optimized

    async def start(self) -> None:
        """A new epoch; every replica of an older one copies the store again."""
        epoch = int(await self._redis.incr(RedisKeys.replication_epoch()))
        async with self._lock:
            self._position = Position(epoch, 0)
            await self._send("start", advance=False)
        log.info("replication epoch %d", epoch)

    async def tick(self) -> None:
        """The position, for replicas that may have missed a write; and whether to be quiet."""
        copied_at = self._copied_at
        try:
            beats = parse_search_nodes(await self._redis.hgetall(RedisKeys.searchers()))
        except RedisError:
            beats = None
        async with self._lock:  # a copy asked while the beats were read ends any quiet
            unasked = copied_at == self._copied_at
            self._be_quiet(beats is not None and unasked and all_idle(beats.values(), copied_at))
            await self._send("tick", advance=False)

    def _be_quiet(self, quiet: bool) -> None:
        if quiet != self._quiet:
            log.info(
                "every search node is idle: writes go out to none"
                if quiet
                else "a search node asked for a copy: writes go out again"
            )
        self._quiet = quiet

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

    async def copy(
        self, target: Path, collections: list[str] | None, held: Position | None = None
    ) -> tuple[Position, bool]:
        """Copy the shards into `target`, no write running meanwhile: the position they hold,
        and True. A replica that `held` the newest write gets no copy: (that position, False).
        Either way the stream goes out again from here on."""
        async with self._lock:
            self._be_quiet(False)
            self._copied_at = time.time()
            if held == self._position:
                return self._position, False
            await self._store.copy_to(target, collections)
            return self._position, True

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
        """One store write; broadcast in messages of at most REPLICATION_CHUNK points, each
        point's payload as the engine keeps it (worked out here once for every replica)."""
        stored = [convert.stored_form(p) for p in points]
        chunks = [
            stored[i : i + REPLICATION_CHUNK] for i in range(0, len(stored), REPLICATION_CHUNK)
        ]
        async with self._lock, self._gap_on_failure():
            await self._store.upsert_points(name, [convert.stored_to_point(p) for p in stored])
            for chunk in chunks or [stored]:
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
            if self._quiet:  # every replica drops writes unread: a copy brings them
                return
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


def all_idle(beats: Iterable[SearchNodeBeat], copied_at: float) -> bool:
    """Whether every search node beating now said, after the last copy, that it is idle."""
    now = time.time()
    fresh = [beat for beat in beats if now - beat.ts < BEAT_FRESH_S]
    return all(beat.idle and beat.ts > copied_at for beat in fresh)
