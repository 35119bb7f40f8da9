"""The worker's lifecycle: connect, open the store, consume documents, serve RPCs, heartbeat."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.bus import Bus
from core.catalog import Catalog
from core.errors import InvalidInput
from core.heartbeats import WORKER_BEAT_S, WORKER_BEAT_TTL_S, WorkerBeat
from core.ledger import Ledger
from core.lifecycle import Periodic
from core.messages import (
    CopyStore,
    CreateCollection,
    DropCollection,
    SearchRequest,
    StoreCopied,
    WorkerCall,
)
from core.metrics import COLLECTION_DOCUMENTS, Recorder
from core.metrics_publish import MetricsPublisher
from core.names import DOCUMENTS_QUEUE, SEARCH_QUEUE, WORKER_RPC_QUEUE, RedisKeys
from core.redis_client import connect_redis
from core.schemas.search import SearchResponse
from core.settings import Settings
from core.topology import topology
from core.watchdog import Watchdog
from search.joining import Joiner
from search.querying import QueryPipeline
from search.searching import SearchService
from store.backends import open_store
from store.edge.store import EdgeStore
from store.protocol import Store
from store.replication.marks import Marks
from store.replication.replicator import Position, Replicator
from store.vectorizer import Vectorizer
from worker.admin import Admin, store_ok
from worker.browsing import Browser
from worker.consumer import DocumentConsumer, prefetch_for
from worker.indexing import Indexer
from worker.lexical import Lexicon
from worker.lexstats import LexicalStats
from worker.locks import DocumentLocks
from worker.reaper import Reaper

log = logging.getLogger(__name__)
# Within the process's stop bound (core.lifecycle): the batch in hand, then RPCs in flight.
FINISH_BATCH_S = 3.0
FINISH_RPCS_S = 1.5


# The admin requests that write the catalog: the search nodes parse a collection's config again.
CATALOG_CHANGES = (CreateCollection, DropCollection)


class WorkerService:
    def __init__(
        self,
        settings: Settings,
        bus: Bus,
        redis: Redis,
        store: Store,
        replicator: Replicator | None = None,
        marks: Marks | None = None,
    ) -> None:
        self._settings = settings
        self._bus = bus
        self._redis = redis
        self._store = store
        self._replicator = replicator
        self._marks = marks
        catalog, ledger, stats = Catalog(redis), Ledger(redis), LexicalStats(redis)
        self._catalog = catalog
        self._recorder = Recorder()
        bus.recorder = self._recorder
        self._vectorizer = Vectorizer(bus, redis, settings.rpc_timeout_s)
        self._lexicon = Lexicon()
        indexer = Indexer(
            store,
            self._vectorizer,
            catalog,
            ledger,
            stats,
            DocumentLocks(redis),
            self._lexicon,
            self._recorder,
        )
        pipeline = QueryPipeline(store, self._vectorizer, catalog, self._recorder)
        self._searches = SearchService(settings, pipeline, catalog)  # the store's owner: no wait
        browser = Browser(store, catalog, Joiner(store, catalog))
        self._admin = Admin(store, catalog, ledger, indexer, self._vectorizer, stats, browser)
        self._consumer = DocumentConsumer(
            indexer,
            ledger,
            settings.worker_batch_size,
            settings.worker_batch_wait_ms / 1000,
            settings.max_tries,
        )
        self._reaper = Reaper(bus, ledger, catalog, self._consumer, settings.publish_deadline_s)
        self._consuming: asyncio.Task[None] | None = None
        self._heartbeat = Periodic("worker heartbeat", WORKER_BEAT_S, self._beat)
        self._metrics = MetricsPublisher(
            redis,
            self._recorder,
            "worker",
            "worker",
            refresh=self._count_documents,
            catalog=catalog,
        )
        self._watchdog = Watchdog(bus, redis, self._recorder, "worker", settings)

    @classmethod
    async def open(cls, settings: Settings) -> WorkerService:
        redis = await connect_redis(settings.redis_url)
        bus = await Bus.connect(settings.amqp_url, retry_after_s=settings.retry_after_s)
        await bus.declare(topology(settings))
        store = await open_store(
            settings.data_dir.resolve(), settings.qdrant_url, settings.optimize_min_changes
        )
        if not isinstance(store, EdgeStore):  # a Qdrant server: the api processes query it too
            return cls(settings, bus, redis, store)
        marks = Marks.open(settings.marks_path)
        marks.bump_catalog()  # what the nodes kept of the catalog may predate this worker
        replicator = Replicator(store, bus, redis, marks)
        await replicator.start()
        return cls(settings, bus, redis, replicator, replicator, marks)

    async def start(self) -> None:
        # The api processes answer their own searches (search/node.py); one still loading
        # its replica sends them here, and the loaded ones take them at a higher priority.
        await self._bus.serve(SEARCH_QUEUE, SearchRequest, self._search, concurrency=32)
        await self._bus.serve(WORKER_RPC_QUEUE, WorkerCall, self._call, concurrency=16)
        await self._bus.consume(
            DOCUMENTS_QUEUE,
            self._consumer.on_message,
            prefetch=prefetch_for(self._settings.worker_batch_size),
        )
        self._consuming = asyncio.create_task(self._consumer.run(), name="document-consumer")
        self._heartbeat.start()
        self._reaper.periodic.start()
        self._metrics.start()
        self._watchdog.start()

    async def close(self) -> None:
        """Stop taking work, finish the batch in hand and the RPCs in flight (each bounded),
        then close the bus (the broker requeues whatever is unacked) and the store."""
        await self._bus.cancel_consumers()
        self._consumer.stop()
        if self._consuming is not None:
            done, _ = await asyncio.wait([self._consuming], timeout=FINISH_BATCH_S)
            if not done:
                log.warning("the batch in hand did not finish in time; the broker requeues it")
                self._consuming.cancel()
                await asyncio.wait([self._consuming])
        await self._bus.drain_handlers(FINISH_RPCS_S)
        await self._lexicon.close()
        await self._heartbeat.stop()
        await self._reaper.periodic.stop()
        await self._metrics.close()
        await self._watchdog.close()
        await self._bus.close()
        await self._store.close()
        if self._marks is not None:
            self._marks.close()
        with contextlib.suppress(RedisError, OSError):  # readiness stops counting on us at once
            await self._redis.delete(RedisKeys.heartbeat("worker"))
        await self._redis.aclose()

    async def _search(self, request: SearchRequest) -> SearchResponse:
        return await self._searches.search(request.collection, request.query)

    async def _call(self, call: WorkerCall) -> BaseModel:
        """The admin RPCs; after each, the replicas must hold what it wrote before a search
        is answered (read-your-writes from any search node)."""
        request = call.request
        if isinstance(request, CopyStore):
            if self._replicator is None:
                raise InvalidInput("the store is a Qdrant server: search nodes need no copy")
            held = Position(*request.held) if request.held else None
            position, copied = await self._replicator.copy(
                Path(request.target), request.collections, held
            )
            return StoreCopied(epoch=position.epoch, seq=position.seq, copied=copied)
        try:
            result = await self._admin.handle(call)
        finally:  # a create or drop that failed part way may have changed the catalog too
            if self._marks is not None and isinstance(request, CATALOG_CHANGES):
                self._marks.bump_catalog()
        if self._replicator is not None:
            self._replicator.mark_visible()
        return result

    async def _count_documents(self) -> None:
        """COLLECTION_DOCUMENTS for every collection (a count is cheap for the engine); the
        publisher drops those of a collection dropped meanwhile."""
        for name in await self._catalog.names():
            self._recorder.set(COLLECTION_DOCUMENTS, await self._store.count(name), collection=name)

    async def _beat(self) -> None:
        """What readiness reads: whether the store answers and the broker is connected; and
        where replication stands, so a replica that missed a write notices."""
        if self._replicator is not None:
            await self._replicator.tick()
        beat = WorkerBeat(
            ts=time.time(), store=await store_ok(self._store), broker=self._bus.is_connected
        )
        await self._redis.set(RedisKeys.heartbeat("worker"), beat.to_redis(), ex=WORKER_BEAT_TTL_S)
