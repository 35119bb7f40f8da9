"""Metrics: each process's counters, as nodes (encoders with role and latencies, the worker)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter

from app.deps import Context
from core.names import RedisKeys

router = APIRouter(prefix="/v1/metrics", tags=["metrics"])


def _decode(raw: dict[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in raw.items()}


def _node(role: str, stats: dict[str, str]) -> dict[str, Any]:
    numeric = {}
    for key, value in stats.items():
        try:
            numeric[key] = float(value)
        except ValueError:
            continue
    last_seen = numeric.get("last_seen", time.time())
    return {
        "role": role,
        "is_leader": False,
        "last_seen": last_seen,
        "meta": stats,
        "metrics": [
            {
                "key": key,
                "dims": {},
                "windows": {"60": {"value": value, "n": 1}},
                "last_seen": last_seen,
            }
            for key, value in sorted(numeric.items())
        ],
    }


@router.get("/current")
async def metrics_current(ctx: Context) -> dict[str, Any]:
    nodes: dict[str, Any] = {}
    async for key in ctx.redis.scan_iter(match=RedisKeys.encoder_pattern()):
        stats = _decode(await ctx.redis.hgetall(key))
        index = key.decode().rsplit(":", 1)[-1]
        nodes[f"encoder-{index}"] = _node(f"encoder:{stats.get('role', 'unknown')}", stats)
    worker = _decode(await ctx.redis.hgetall(RedisKeys.worker_stats()))
    nodes["worker"] = _node("worker", worker)
    return {"nodes": nodes}
