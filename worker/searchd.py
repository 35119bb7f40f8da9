"""A search process: `python3 -m worker.searchd`, BRAID_SEARCHERS of them under supervisord.

It serves the search queue ahead of the worker (a higher consumer priority: the worker takes a
search only when every searcher is busy or none is up), so searches run beside ingest on other
cores instead of behind it. With a Qdrant server every searcher queries the server; with the
embedded store each keeps a replica (worker/replica.py) and answers a search only once the
replica holds the newest write a client was told succeeded.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import cast

from redis.asyncio import Redis

from core.bus import Bus
from core.catalog import Catalog, required
from core.errors import Unavailable
from core.lifecycle import Periodic, run_process
from core.messages import SearchRequest
from core.metrics import Recorder
from core.metrics_publish import MetricsPublisher
from core.names import SEARCH_QUEUE, RedisKeys
from core.redis_client import connect_redis
from core.schemas.search import SearchResponse
from core.settings import Settings, load_settings
from core.topology import topology
from worker.querying import Searcher
from worker.replica import Replica
from worker.replication import Position
from worker.store import open_store
from worker.store.protocol import Store
from worker.vectorizer import Vectorizer

log = logging.getLogger(__name__)
SEARCH_PRIORITY = 10  # the worker consumes at 0
SEARCH_CONCURRENCY = 32
HEARTBEAT_S = 2.0


class _ReplicaStore:
    """The Store of whichever copy the replica holds now (it changes when it copies again)."""

    def __init__(self, replica: Replica) -> None:
        self._replica = replica

    def __getattr__(self, name: str) -> object:
        return getattr(self._replica.store, name)


class SearcherService:
    def __init__(
        self, settings: Settings, bus: Bus, redis: Redis, store: Store, replica: Replica | None
    ) -> None:
        self._settings = settings
        self._bus = bus
        self._redis = redis
        self._store = store
        self._replica = replica
        recorder = Recorder()
        bus.recorder = recorder
        vectorizer = Vectorizer(bus, redis, settings.rpc_timeout_s)
        self._catalog = Catalog(redis)
        self._searcher = Searcher(store, vectorizer, self._catalog, recorder)
        self._served = 0
        self._heartbeat = Periodic("searcher heartbeat", HEARTBEAT_S, self._beat)
        node = f"searcher-{settings.searcher_index}"
        self._metrics = MetricsPublisher(redis, recorder, node, "searcher")

    @classmethod
    async def open(cls, settings: Settings) -> SearcherService:
        redis = await connect_redis(settings.redis_url)
        bus = await Bus.connect(settings.amqp_url, retry_after_s=settings.retry_after_s)
        await bus.declare(topology(settings))
        if settings.qdrant_url:
            store = await open_store(settings.data_dir.resolve(), settings.qdrant_url)
            return cls(settings, bus, redis, store, None)
        replica = Replica(settings.replica_dir, bus, settings.replica_apply_delay_ms / 1000)
        return cls(settings, bus, redis, cast(Store, _ReplicaStore(replica)), replica)

    async def start(self) -> None:
        if self._replica is not None:
            await self._replica.start()  # searches only from a loaded copy
        await self._bus.serve(
            SEARCH_QUEUE,
            SearchRequest,
            self._search,
            concurrency=SEARCH_CONCURRENCY,
            priority=SEARCH_PRIORITY,
        )
        self._heartbeat.start()
        self._metrics.start()

    async def close(self) -> None:
        await self._bus.cancel_consumers()
        await self._bus.drain_handlers(1.5)
        await self._heartbeat.stop()
        await self._metrics.close()
        await self._bus.close()
        if self._replica is not None:
            await self._replica.close()
        else:
            await self._store.close()
        await self._redis.hdel(RedisKeys.searchers(), str(self._settings.searcher_index))
        await self._redis.aclose()

    async def _search(self, request: SearchRequest) -> SearchResponse:
        if self._replica is None:
            response = await self._searcher.search(request.collection, request.query)
        else:
            # The newest acknowledged position and the collection's config in one round trip.
            pipe = self._redis.pipeline(transaction=False)
            pipe.get(RedisKeys.replication_visible())
            self._catalog.read_with(pipe, request.collection)
            raw_visible, raw_config = await pipe.execute()
            if not await self._replica.caught_up(
                Position.parse(raw_visible), self._settings.replica_wait_s
            ):
                raise Unavailable(
                    "this search process is still applying the newest writes; retry",
                    self._settings.retry_after_s,
                )
            config = required(raw_config)
            response = await self._searcher.search(request.collection, request.query, config)
        self._served += 1
        return response

    async def _beat(self) -> None:
        """Liveness and what this searcher has done, for operators and tests."""
        replica = self._replica
        position = replica.position if replica is not None else None
        state = {
            "ts": time.time(),
            "pid": os.getpid(),
            "searches": self._served,
            "position": position.text() if position is not None else None,
            "copies": replica.copies_taken if replica is not None else 0,
        }
        index = str(self._settings.searcher_index)
        await self._redis.hset(RedisKeys.searchers(), index, json.dumps(state))


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format=f"%(asctime)s searcher-{settings.searcher_index} %(levelname)s %(name)s: "
        "%(message)s",
    )
    run_process(f"searcher-{settings.searcher_index}", lambda: SearcherService.open(settings))


if __name__ == "__main__":
    main()
