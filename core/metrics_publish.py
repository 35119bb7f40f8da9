"""Each process's metrics in Redis: one hash field per node, the recorder's whole state.

A process publishes its absolute state (not increments) about once a second, so a lost write
loses nothing and a restarted process simply starts its counters again from zero, which
Prometheus reads as a counter reset. The api reads every field to render the exposition.

Before each publish a process drops its series of collections that are gone (`CollectionSeries`:
the catalog no longer holds them, or holds one made again under the name) and reads its own
CPU, memory and file descriptors (core/process_stats.py).
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

from core.catalog import Catalog
from core.lifecycle import Periodic
from core.metrics import COLLECTION, Recorder
from core.names import RedisKeys
from core.process_stats import ProcessReader
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
    retired: list[list[Any]] = field(default_factory=list)  # Recorder.retired(): trends only

    def live(self, now: float) -> bool:
        return now - self.last_seen <= LIVE_WITHIN_S

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "role": self.role,
                "last_seen": self.last_seen,
                "meta": self.meta,
                "series": self.series,
                "retired": self.retired,
            }
        )

    @classmethod
    def decode(cls, node: str, raw: bytes | str) -> NodeState:
        data = orjson.loads(raw)
        return cls(
            node,
            str(data["role"]),
            float(data["last_seen"]),
            data["series"],
            data["meta"],
            data.get("retired", []),  # a process of an older version publishes none
        )


class CollectionSeries:
    """Forgets a process's series of collections that are gone: the catalog no longer holds
    them, or holds one made again under the name (another token than last seen), which
    starts from zero. Read again at every publish, so a series recorded late (a write of a
    dropped collection finishing as `gone`) goes at the next one."""

    def __init__(self, catalog: Catalog, recorder: Recorder) -> None:
        self._catalog = catalog
        self._recorder = recorder
        self._seen: dict[str, str] = {}  # the token each collection had at the last look

    async def prune(self) -> None:
        present = await self._catalog.incarnations()
        gone = {name for name in self._recorder.label_values(COLLECTION) if name not in present}
        gone |= {
            name
            for name, token in present.items()
            if token is not None and self._seen.get(name, token) != token
        }
        if gone:
            self._recorder.forget(COLLECTION, gone)
        # A token not written yet (None) keeps the one seen before: it is no new collection.
        self._seen = {
            name: seen
            for name, token in present.items()
            if (seen := token or self._seen.get(name)) is not None
        }


class MetricsPublisher:
    """Start, then the state goes to Redis every second (and once more on close).

    `refresh` runs before each publish, to set gauges the process reads from elsewhere (the
    worker's document counts). With a `catalog`, the series of gone collections are dropped
    after it (a process that labels series by collection passes one)."""

    def __init__(
        self,
        redis: Redis,
        recorder: Recorder,
        node: str,
        role: str,
        meta: Callable[[], dict[str, str]] = dict,
        refresh: Callable[[], Awaitable[None]] | None = None,
        catalog: Catalog | None = None,
        interval_s: float = PUBLISH_INTERVAL_S,
        process: ProcessReader | None = None,
    ) -> None:
        self._redis = redis
        self._recorder = recorder
        self._node = node
        self._role = role
        self._meta = meta
        self._refresh = refresh
        self._collections = None if catalog is None else CollectionSeries(catalog, recorder)
        self._process = process or ProcessReader()
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
        if self._collections is not None:
            await self._collections.prune()
        self._process.record(self._recorder)
        recorder = self._recorder
        state = NodeState(
            self._node, self._role, time.time(), recorder.state(), self._meta(), recorder.retired()
        )
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
