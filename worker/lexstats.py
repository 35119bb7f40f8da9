"""Per-slot average document length (for BM25 saturation), kept in Redis."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from core.names import RedisKeys
from core.redis_client import as_text


class LexicalStats:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def averages(self, collection: str) -> dict[str, float]:
        raw = await self._redis.hgetall(RedisKeys.lexical_stats(collection))
        values = {as_text(k): float(v) for k, v in raw.items()}
        averages: dict[str, float] = {}
        for key, total in values.items():
            if key.endswith(":len"):
                slot = key[: -len(":len")]
                count = values.get(f"{slot}:n", 0.0)
                averages[slot] = total / count if count > 0 else 0.0
        return averages

    @staticmethod
    def add(pipe: Pipeline, collection: str, deltas: dict[str, tuple[int, int]]) -> None:
        """Add (length delta, document-count delta) per slot, in the caller's round trip."""
        key = RedisKeys.lexical_stats(collection)
        for slot, (length, count) in deltas.items():
            pipe.hincrby(key, f"{slot}:len", length)
            pipe.hincrby(key, f"{slot}:n", count)
