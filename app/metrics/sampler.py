"""The api's own metrics (HTTP and search latency), the cluster gauges read when scraped, and
the loop that publishes the api's metrics and takes the trend snapshots."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.context import ApiContext
from app.metrics.store import Counters, MetricsStore, trend_counters
from core.catalog import Catalog
from core.lifecycle import Periodic
from core.metrics import (
    COLLECTION_QUEUE,
    HTTP_REQUEST_SECONDS,
    HTTP_RESPONSES,
    QUEUE_DEPTH,
    SEARCH_SECONDS,
    Recorder,
)
from core.metrics_publish import MetricsPublisher
from core.names import DOCUMENTS_QUEUE, SEARCH_QUEUE, WORKER_RPC_QUEUE

SEARCH_ROUTE = "/v1/collections/{collection_name}/search"
UNMATCHED = "unmatched"  # a path no route answers: one label value, whatever was asked
SNAPSHOT_INTERVAL_S = 1.0


def record_request(recorder: Recorder, scope: Scope, status: int, seconds: float) -> None:
    """One answered HTTP request: by route template (never the raw path, which would make a
    series per document id), and a successful search by collection too."""
    route = getattr(scope.get("route"), "path", None) or UNMATCHED
    status_class = f"{status // 100}xx"
    recorder.observe(
        HTTP_REQUEST_SECONDS,
        seconds,
        route=route,
        method=scope["method"],
        status_class=status_class,
    )
    recorder.inc(HTTP_RESPONSES, status=str(status))
    if route == SEARCH_ROUTE and status < 300:
        collection = scope.get("path_params", {}).get("collection_name", "")
        recorder.observe(SEARCH_SECONDS, seconds, collection=collection)


class RequestMetrics:
    """Pure ASGI middleware: times each HTTP request into the api's recorder."""

    def __init__(self, app: ASGIApp, recorder: Recorder) -> None:
        self.app = app
        self.recorder = recorder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            record_request(self.recorder, scope, status, time.perf_counter() - started)


async def cluster_series(ctx: ApiContext) -> list[list[Any]]:
    """Gauges of the whole cluster, read when scraped: broker queue depths, and each
    collection's queued and failed writes from the ledger."""
    gauges = Recorder()
    states = await ctx.bus.queue_states([DOCUMENTS_QUEUE, SEARCH_QUEUE, WORKER_RPC_QUEUE])
    for queue, state in states.items():
        if state is not None:
            gauges.set(QUEUE_DEPTH, state.messages, queue=queue)
    for collection in await ctx.catalog.names():
        info = await ctx.ledger.queue_info(collection)
        by_state = {
            "queued": info.queued_upsert + info.queued_delete,
            "requeued": info.requeued_upsert + info.requeued_delete,
            "failed": info.failed_upsert + info.failed_delete,
        }
        for state_name, count in by_state.items():
            gauges.set(COLLECTION_QUEUE, count, collection=collection, state=state_name)
    return gauges.state()


async def cluster_counters(ctx: ApiContext) -> Counters:
    """The cluster's gauges as trend keys (`braid_queue_depth{queue="…"}`)."""
    return trend_counters(await cluster_series(ctx))


class MetricsSampler:
    """Publishes the api's metrics and, once per 10-second slot across all api processes,
    snapshots every node's counters and the cluster's gauges for the trends."""

    def __init__(
        self,
        redis: Redis,
        recorder: Recorder,
        node: str,
        cluster: Callable[[], Awaitable[Counters]],
    ) -> None:
        self._store = MetricsStore(redis)
        self._cluster = cluster
        # With the catalog: a search's series go once its collection is dropped.
        self._publisher = MetricsPublisher(redis, recorder, node, "api", catalog=Catalog(redis))
        self._snapshots = Periodic("metrics snapshots", SNAPSHOT_INTERVAL_S, self._snapshot)

    def start(self) -> None:
        self._publisher.start()
        self._snapshots.start()

    async def close(self) -> None:
        await self._snapshots.stop()
        with contextlib.suppress(RedisError, OSError):
            await self._publisher.close()

    async def _snapshot(self) -> None:
        await self._store.snapshot(time.time(), self._cluster)
