"""Every node's counters (from its published metrics) and the snapshots for windows and trends.

A snapshot is every node's counters at one 10-second slot, written once (SET NX) by whichever api
process gets there first. Minute-aligned ones are kept 25 h (trends); the rest 10 minutes
(windows, and the first partial bucket after a start).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from app.metrics.prometheus import cumulative_buckets, series_labels
from core.metrics import BY_NAME, MetricKind
from core.metrics_publish import NodeState, read_nodes
from core.names import RedisKeys

SLOT_S = 10
TREND_SLOT_S = 60
RETAIN_S = 25 * 3600
RETAIN_SHORT_S = 600
_MGET_CHUNK = 500

CLUSTER = "cluster"  # the snapshots' node for gauges of the whole cluster, read by the api
Counters = dict[str, float]
NodeCounters = dict[str, Counters]  # node id -> counters


@dataclass
class Node:
    role: str
    last_seen: float
    meta: dict[str, str] = field(default_factory=dict)
    counters: Counters = field(default_factory=dict)


def trend_counters(series: list[list[Any]]) -> Counters:
    """A node's series as the keys of /current and /trends: each counter, gauge, and each
    histogram's `_count` and `_sum`, summed over the labels the metric does not keep for trends
    (and the cumulative buckets of a histogram marked for percentiles)."""
    out: Counters = {}

    def add(key: str, value: float) -> None:
        out[key] = out.get(key, 0.0) + value

    for name, label_values, value in series:
        metric = BY_NAME.get(name)
        if metric is None or not metric.trended:
            continue
        kept = [
            (label, v)
            for label, v in zip(metric.labels, label_values, strict=False)
            if label in metric.trend_labels
        ]
        if metric.kind is not MetricKind.HISTOGRAM:
            add(name + series_labels(kept), float(value))
            continue
        counts, total, count = value
        add(f"{name}_count{series_labels(kept)}", float(count))
        add(f"{name}_sum{series_labels(kept)}", float(total))
        if metric.trend_buckets:
            for bound, running in cumulative_buckets(metric, counts):
                add(f"{name}_bucket{series_labels([*kept, ('le', bound)])}", float(running))
    return out


def node_of(state: NodeState) -> Node:
    """A node's trend counters count what it counted for dropped collections too (retired), so
    a drop is no dip in a trend, nor a fall read as a restart."""
    counters = trend_counters([*state.series, *state.retired])
    return Node(state.role, state.last_seen, state.meta, counters)


def slot_of(t: float) -> int:
    return int(t // SLOT_S) * SLOT_S


class MetricsStore:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def nodes(self) -> dict[str, Node]:
        """Every process that published its metrics (api processes, worker, encoders)."""
        states = await read_nodes(self._redis, time.time())
        return {node: node_of(state) for node, state in states.items()}

    async def snapshot(self, now: float, cluster: Callable[[], Awaitable[Counters]]) -> bool:
        """Record the counters for the current slot unless some api process already did, with
        the cluster's gauges (queue depths) as node CLUSTER."""
        slot = slot_of(now)
        key = RedisKeys.metrics_snapshot(slot)
        if await self._redis.exists(key):
            return False
        counters = {name: node.counters for name, node in (await self.nodes()).items()}
        counters[CLUSTER] = await cluster()
        ttl = RETAIN_S if slot % TREND_SLOT_S == 0 else RETAIN_SHORT_S
        return bool(await self._redis.set(key, json.dumps(counters), nx=True, ex=ttl))

    async def snapshots(self, slots: list[int]) -> dict[int, NodeCounters]:
        """The snapshots that exist among `slots`."""
        found: dict[int, NodeCounters] = {}
        wanted = sorted(set(slots))
        for i in range(0, len(wanted), _MGET_CHUNK):
            chunk = wanted[i : i + _MGET_CHUNK]
            values = await self._redis.mget([RedisKeys.metrics_snapshot(s) for s in chunk])
            for slot, raw in zip(chunk, values, strict=True):
                if raw:
                    found[slot] = json.loads(raw)
        return found
