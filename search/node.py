"""The search node each api process runs in-process: searches answered where the HTTP request
arrived, with no broker hop (docs/architecture.md, Search).

With a Qdrant server the node queries the server. With the embedded store it keeps a replica
(store/replication/replica.py) and answers a search only once the replica holds the newest
write a client was told succeeded; that position, and whether a collection's config may have
changed, it reads from the worker's marks on this host (store/replication/marks.py), so a search
makes no round trip before the engine's query. Until its first copy is loaded the api sends its
searches to the search queue, which the worker serves; once loaded, the node serves that queue
too, ahead of the worker (a higher consumer priority), so a restarting api's searches land on
another api's replica rather than on the worker's core.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.bus import Bus
from core.catalog import Catalog
from core.heartbeats import SEARCH_NODE_BEAT_S, SearchNodeBeat
from core.lifecycle import Periodic
from core.messages import SearchRequest
from core.metrics import Recorder
from core.names import SEARCH_QUEUE, RedisKeys
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings
from search.querying import QueryPipeline
from search.searching import SearchService
from store.backends import open_store
from store.protocol import StoreReader
from store.replication.marks import Marks
from store.replication.replica import Replica
from store.vectorizer import Vectorizer

log = logging.getLogger(__name__)
SEARCH_PRIORITY = 10  # the worker consumes at 0
SEARCH_CONCURRENCY = 32


class SearchNode:
    """The query pipeline over this process's own view of the store (app.context.LocalSearch)."""

    def __init__(
        self,
        settings: Settings,
        bus: Bus,
        redis: Redis,
        recorder: Recorder,
        store: StoreReader,
        replica: Replica | None,
    ) -> None:
        self._settings = settings
        self._bus = bus
        self._redis = redis
        self._store = store
        self._replica = replica
        catalog = Catalog(redis)
        vectorizer = Vectorizer(bus, redis, settings.rpc_timeout_s)
        pipeline = QueryPipeline(store, vectorizer, catalog, recorder)
        self._service = SearchService(settings, pipeline, catalog, replica)
        self._served = 0
        self._loading: asyncio.Task[None] | None = None
        self._heartbeat = Periodic("search heartbeat", SEARCH_NODE_BEAT_S, self._beat)

    @classmethod
    async def open(
        cls, settings: Settings, bus: Bus, redis: Redis, recorder: Recorder
    ) -> SearchNode:
        """A node on the api's own bus, Redis connection and metrics recorder."""
        if settings.qdrant_url:
            store = await open_store(settings.data_dir.resolve(), settings.qdrant_url)
            return cls(settings, bus, redis, recorder, store, None)
        replica = Replica(
            settings.replica_dir,
            bus,
            settings.replica_idle_s,
            settings.replica_apply_delay_ms / 1000,
        )
        return cls(settings, bus, redis, recorder, replica, replica)

    @property
    def ready(self) -> bool:
        """Whether searches can be answered here (the replica's first copy is loaded)."""
        return self._service.ready

    def start(self) -> None:
        """Load the replica in the background: the api serves everything else meanwhile."""
        self._loading = asyncio.create_task(self._load(), name="search-node")
        self._heartbeat.start()

    async def close(self) -> None:
        await self._bus.cancel_consumers()  # searches from the queue: back to it, or finished
        await self._bus.drain_handlers(1.5)
        if self._loading is not None:
            self._loading.cancel()
            await asyncio.gather(self._loading, return_exceptions=True)
        await self._heartbeat.stop()
        self._service.close()
        if self._replica is not None:
            await self._replica.close()
        else:
            await self._store.close()
        with contextlib.suppress(RedisError, OSError):
            await self._redis.hdel(RedisKeys.searchers(), str(self._settings.api_index))

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse:
        """The api's fast path and route, and this node's search queue consumer, all ask here."""
        response = await self._service.search(collection, query)
        self._served += 1
        return response

    async def config(self, collection: str) -> CollectionConfig:
        return await self._service.config(collection)

    async def _load(self) -> None:
        if self._replica is not None:
            await self._replica.start()  # retries until the worker answers
            # The worker made its marks before it answered the copy.
            self._service.loaded(Marks.read_only(self._settings.marks_path))
        # What the process holds from here on lives as long as it does: the collector stops
        # walking it, which a full collection did every few hundred searches (each search makes
        # hundreds of short-lived records).
        gc.freeze()
        await self._bus.serve(
            SEARCH_QUEUE,
            SearchRequest,
            self._serve_queued,
            concurrency=SEARCH_CONCURRENCY,
            priority=SEARCH_PRIORITY,
        )

    async def _serve_queued(self, request: SearchRequest) -> SearchResponse:
        return await self.search(request.collection, request.query)

    async def _beat(self) -> None:
        """Liveness and what this node has done, for operators and tests."""
        replica = self._replica
        position = replica.position if replica is not None else None
        beat = SearchNodeBeat(
            ts=time.time(),
            pid=os.getpid(),
            searches=self._served,
            position=position.text() if position is not None else None,
            copies=replica.copies_taken if replica is not None else 0,
            idle=replica.idle if replica is not None else False,
        )
        index = str(self._settings.api_index)
        await self._redis.hset(RedisKeys.searchers(), index, beat.to_redis())
