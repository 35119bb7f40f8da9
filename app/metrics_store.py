"""Every node's counters as Redis holds them now, and the snapshots that give windows and trends.

A snapshot is every node's counters at one 10-second slot, written once (SET NX) by whichever api
process gets there first. Minute-aligned ones are kept 25 h (trends); the rest 10 minutes
(windows, and the first partial bucket after a start).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from redis.asyncio import Redis

from app.metrics_definitions import IDENTITY_FIELDS
from core.names import RedisKeys
from core.redis_client import as_text

SLOT_S = 10
TREND_SLOT_S = 60
RETAIN_S = 25 * 3600
RETAIN_SHORT_S = 600
_MGET_CHUNK = 500

Counters = dict[str, float]
NodeCounters = dict[str, Counters]  # node id -> counters


@dataclass
class Node:
    role: str
    last_seen: float
    meta: dict[str, str] = field(default_factory=dict)
    counters: Counters = field(default_factory=dict)


def counters_of(stats: dict[str, str]) -> Counters:
    """The numeric fields of a stats hash that count something."""
    out: Counters = {}
    for key, value in stats.items():
        if key in IDENTITY_FIELDS:
            continue
        try:
            out[key] = float(value)
        except ValueError:
            continue
    return out


def slot_of(t: float) -> int:
    return int(t // SLOT_S) * SLOT_S


class MetricsStore:
    def __init__(self, redis: Redis, encoders: int) -> None:
        self._redis = redis
        self._encoders = encoders  # BRAID_ENCODERS: their stats hashes are numbered 1..N

    async def nodes(self) -> dict[str, Node]:
        """Encoders, the worker and the api, with their counters (missing ones left out)."""
        nodes: dict[str, Node] = {}
        # Read by index, not SCAN: a SCAN walks every key (the ledger holds millions).
        for index in range(1, self._encoders + 1):
            stats = await self._hash(RedisKeys.encoder_stats(index))
            if stats:
                role = f"encoder:{stats.get('role', 'unknown')}"
                nodes[f"encoder-{index}"] = _node(role, stats)
        worker = await self._hash(RedisKeys.worker_stats())
        beat = await self._redis.get(RedisKeys.heartbeat("worker"))
        if beat:
            worker.setdefault("last_seen", str(json.loads(beat).get("ts", "")))
        nodes["worker"] = _node("worker", worker)
        api = await self._hash(RedisKeys.api_stats())
        if api:
            nodes["api"] = _node("api", api)
        return nodes

    async def snapshot(self, now: float) -> bool:
        """Record the counters for the current slot unless some api process already did."""
        slot = slot_of(now)
        key = RedisKeys.metrics_snapshot(slot)
        if await self._redis.exists(key):
            return False
        counters = {name: node.counters for name, node in (await self.nodes()).items()}
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

    async def _hash(self, key: str) -> dict[str, str]:
        raw = await self._redis.hgetall(key)
        return {as_text(k): as_text(v) for k, v in raw.items()}


def _node(role: str, stats: dict[str, str]) -> Node:
    try:
        last_seen = float(stats.get("last_seen", ""))
    except ValueError:
        last_seen = time.time()
    return Node(role=role, last_seen=last_seen, meta=stats, counters=counters_of(stats))
