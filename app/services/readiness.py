"""Readiness from the real state: the broker, the queues' consumers, the store, a model holder.

API.md: 200 when everything is ready; 218 when the store and the broker are up but only one of
indexing and querying can work; 503 otherwise. Nothing here is assumed: the worker's heartbeat
says whether the store answered (and expires when the worker stops), the broker says who consumes
each queue, the encoder registry says whether a model holder is alive, and each process's
watchdog says whether a consumer of its has stopped taking the messages waiting for it (a
consumer can be counted by the broker and still take nothing).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from redis.exceptions import RedisError

from app.context import ApiContext
from core.delivery import QueueState
from core.enums import EmbedKind
from core.heartbeats import WorkerBeat, parse_registry
from core.holders import live_holders
from core.names import (
    DOCUMENTS_QUEUE,
    REPLICATION_EXCHANGE,
    SEARCH_QUEUE,
    WORKER_RPC_QUEUE,
    RedisKeys,
    embed_queue,
    holder_queue,
)
from core.watchdog import ProgressRecord, parse_records

# Queues that must have a consumer for each side to work.
INDEX_QUEUES = (DOCUMENTS_QUEUE, WORKER_RPC_QUEUE, holder_queue(EmbedKind.DOCUMENT))
QUERY_QUEUES = (SEARCH_QUEUE, holder_queue(EmbedKind.QUERY))
# What a stalled consumer (core/watchdog.py) stops, by what it consumes; anything else stops both.
INDEX_SOURCES = frozenset({*INDEX_QUEUES, embed_queue(EmbedKind.DOCUMENT)})
QUERY_SOURCES = frozenset({*QUERY_QUEUES, embed_queue(EmbedKind.QUERY), REPLICATION_EXCHANGE})
# A hung Redis (SIGSTOP, a stalled disk) keeps its connection open: answer 503 rather than hang.
REDIS_READ_S = 2.0


class ReadyResponse(BaseModel):
    database: bool
    rabbitmq: bool
    index: bool
    query: bool
    ready: bool


@dataclass(frozen=True)
class Observed:
    """What the api saw of the stack at one moment."""

    broker_connected: bool
    worker_beat: WorkerBeat | None  # the worker's last heartbeat, None when expired
    queues: Mapping[str, QueueState | None]
    holder_alive: bool
    now: float
    progress: Mapping[str, ProgressRecord] = field(default_factory=dict)  # fresh, by process

    def stalled(self, side: frozenset[str]) -> bool:
        """Whether a process is stalled on a consumer this side needs (one that neither side
        names stops both)."""
        sources = {stall.source for record in self.progress.values() for stall in record.stalled}
        return any(s in side or s not in INDEX_SOURCES | QUERY_SOURCES for s in sources)


def judge(seen: Observed) -> tuple[ReadyResponse, int]:
    """The readiness answer and its HTTP status."""
    beat = seen.worker_beat
    database = beat is not None and beat.fresh(seen.now) and beat.store

    def consumed(queues: tuple[str, ...]) -> bool:
        states = [seen.queues.get(q) for q in queues]
        return all(s is not None and s.consumers > 0 for s in states)

    rabbitmq = seen.broker_connected
    up = database and rabbitmq and seen.holder_alive
    index = up and consumed(INDEX_QUEUES) and not seen.stalled(INDEX_SOURCES)
    query = up and consumed(QUERY_QUEUES) and not seen.stalled(QUERY_SOURCES)
    state = ReadyResponse(
        database=database, rabbitmq=rabbitmq, index=index, query=query, ready=index and query
    )
    if state.ready:
        return state, 200
    if database and rabbitmq and (index or query):
        return state, 218
    return state, 503


async def _redis_state(ctx: ApiContext) -> tuple[Any, dict[Any, Any], dict[Any, Any]]:
    """The worker's heartbeat, the encoder registry and the watchdogs' records, in one trip."""
    async with ctx.redis.pipeline(transaction=False) as pipe:
        pipe.get(RedisKeys.heartbeat("worker"))
        pipe.hgetall(RedisKeys.encoders())
        pipe.hgetall(RedisKeys.progress())
        beat, registry, progress = await pipe.execute()
    return beat, registry, progress


async def observe(ctx: ApiContext) -> Observed:
    now = time.time()
    queues = await ctx.bus.queue_states([*INDEX_QUEUES, *QUERY_QUEUES])
    try:
        raw_beat, registry, progress = await asyncio.wait_for(_redis_state(ctx), REDIS_READ_S)
    except (RedisError, OSError, TimeoutError):  # Redis down or hung: nothing can be read
        raw_beat, registry, progress = None, {}, {}
    holders = live_holders(parse_registry(registry), now)
    return Observed(
        broker_connected=ctx.bus.is_connected,
        worker_beat=WorkerBeat.from_redis(raw_beat),
        queues=queues,
        holder_alive=bool(holders),
        now=now,
        progress=parse_records(progress, now),
    )
