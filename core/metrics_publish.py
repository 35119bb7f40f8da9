"""Each process's metrics in Redis: one hash field per node, the recorder's whole state.

A process publishes its absolute state (not increments) about once a second, so a lost write
loses nothing and a restarted process simply starts its counters again from zero, which
Prometheus reads as a counter reset. The api reads every field to render the exposition.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.lifecycle import Periodic
from core.metrics import Recorder
from core.names import RedisKeys
from core.redis_client import as_text

log = logging.getLogger(__name__)

PUBLISH_INTERVAL_S = 1.0
# A node silent this long is reported down; one silent for FORGET_AFTER_S is dropped (a
# api or encoder that the operator scaled away).
LIVE_WITHIN_S = 15.0
FORGET_AFTER_S = 600.0


@dataclass
class NodeState:
    node: str
    role: str
    last_seen: float
    series: list[list[Any]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)

    def live(self, now: float) -> bool:
        return now - self.last_seen <= LIVE_WITHIN_S

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "role": self.role,
                "last_seen": self.last_seen,
                "meta": self.meta,
                "series": self.series,
            }
        )

    @classmethod
    def decode(cls, node: str, raw: bytes | str) -> NodeState:
        data = orjson.loads(raw)
        return cls(node, str(data["role"]), float(data["last_seen"]), data["series"], data["meta"])


class MetricsPublisher:
    """Start, then the state goes to Redis every second (and once more on close).

    `refresh` runs before each publish, to set gauges the process reads from elsewhere (the
    worker's document counts)."""

    def __init__(
        self,
        redis: Redis,
        recorder: Recorder,
        node: str,
        role: str,
        meta: Callable[[], dict[str, str]] = dict,
        refresh: Callable[[], Awaitable[None]] | None = None,
        interval_s: float = PUBLISH_INTERVAL_S,
    ) -> None:
        self._redis = redis
        self._recorder = recorder
        self._node = node
        self._role = role
        self._meta = meta
        self._refresh = refresh
        self._loop = Periodic(f"metrics of {node}", interval_s, self.publish)

    def start(self) -> None:
        self._loop.start()

    async def close(self) -> None:
        await self._loop.stop()
        with contextlib.suppress(RedisError, OSError):
            await self.publish()

    async def publish(self) -> None:
        if self._refresh is not None:
            try:
                await self._refresh()
            except Exception as exc:  # a gauge left as it was is better than no metrics
                log.debug("metrics refresh of %s failed: %s", self._node, exc)
        state = NodeState(self._node, self._role, time.time(), self._recorder.state(), self._meta())
        await self._redis.hset(RedisKeys.metrics_nodes(), self._node, state.encode())


async def read_nodes(redis: Redis, now: float) -> dict[str, NodeState]:
    """Every node's last state, dropping (and deleting) those silent for FORGET_AFTER_S."""
    raw = await redis.hgetall(RedisKeys.metrics_nodes())
    nodes: dict[str, NodeState] = {}
    forgotten = []
    for key, value in raw.items():
        node = as_text(key)
        try:
            state = NodeState.decode(node, value)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            log.warning("unreadable metrics state of %s, ignored", node)
            continue
        if now - state.last_seen > FORGET_AFTER_S:
            forgotten.append(node)
            continue
        nodes[node] = state
    if forgotten:
        await redis.hdel(RedisKeys.metrics_nodes(), *forgotten)
    return dict(sorted(nodes.items()))
