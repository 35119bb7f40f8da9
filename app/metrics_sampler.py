"""The api's own request counters, and the loop that pushes them and takes metric snapshots."""

from __future__ import annotations

import contextlib
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.metrics_store import MetricsStore
from core.lifecycle import Periodic
from core.names import RedisKeys

SEARCH_SUFFIX = "/search"


class ApiStats:
    """Counted in memory per request; the sampler moves the increments to Redis (HINCRBY)."""

    def __init__(self) -> None:
        self._counts: dict[str, float] = {}

    def record(self, method: str, path: str | None, status: int, elapsed_ms: float) -> None:
        self._add("http_requests", 1)
        self._add("http_request_ms_sum", elapsed_ms)
        if status >= 500:
            self._add("http_errors", 1)
        if method == "POST" and path is not None and path.endswith(SEARCH_SUFFIX):
            self._add("searches", 1)
            self._add("search_ms_sum", elapsed_ms)

    def _add(self, key: str, amount: float) -> None:
        self._counts[key] = self._counts.get(key, 0) + amount

    def take(self) -> dict[str, float]:
        taken, self._counts = self._counts, {}
        return taken

    def give_back(self, counts: dict[str, float]) -> None:
        for key, amount in counts.items():
            self._add(key, amount)


class ApiStatsMiddleware:
    """Pure ASGI: times each HTTP request and records it under its route template."""

    def __init__(self, app: ASGIApp, stats: ApiStats) -> None:
        self.app = app
        self.stats = stats

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
            route = scope.get("route")  # set by the router when a route matched
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.stats.record(scope["method"], getattr(route, "path", None), status, elapsed_ms)


class MetricsSampler:
    """Start, run (push the api's counters, take a snapshot if the slot has none), close."""

    def __init__(
        self, redis: Redis, store: MetricsStore, stats: ApiStats, interval_s: float = 1.0
    ) -> None:
        self._redis = redis
        self._store = store
        self._stats = stats
        self._loop = Periodic("metrics sampler", interval_s, lambda: self.tick(time.time()))

    def start(self) -> None:
        self._loop.start()

    async def close(self) -> None:
        await self._loop.stop()
        with contextlib.suppress(RedisError, OSError):
            await self.flush()

    async def tick(self, now: float) -> None:
        await self.flush()
        await self._store.snapshot(now)

    async def flush(self) -> None:
        counts = self._stats.take()
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key, value in counts.items():
                    if key.endswith("_ms_sum"):
                        pipe.hincrbyfloat(RedisKeys.api_stats(), key, value)
                    else:
                        pipe.hincrby(RedisKeys.api_stats(), key, int(value))
                pipe.hset(RedisKeys.api_stats(), "last_seen", time.time())
                await pipe.execute()
        except BaseException:
            self._stats.give_back(counts)
            raise
