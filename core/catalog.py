"""The collection catalog: each collection's config, kept in Redis for every process to read.

Beside each config, a token made when the collection was made: a process that saw another token
under the same name knows the collection was dropped and made again in between (its metrics
start again from zero, core/metrics_publish.py).
"""

from __future__ import annotations

import uuid

from redis.asyncio import Redis

from core.errors import CollectionNotFound
from core.names import RedisKeys
from core.redis_client import as_text
from core.schemas.collection import CollectionConfig


class Catalog:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def get(self, name: str) -> CollectionConfig | None:
        raw = await self._redis.hget(RedisKeys.collections(), name)
        return CollectionConfig.model_validate_json(raw) if raw else None

    async def require(self, name: str) -> CollectionConfig:
        return required(await self._redis.hget(RedisKeys.collections(), name))

    async def exists(self, name: str) -> bool:
        return bool(await self._redis.hexists(RedisKeys.collections(), name))

    async def names(self) -> list[str]:
        return sorted(as_text(k) for k in await self._redis.hkeys(RedisKeys.collections()))

    async def incarnations(self) -> dict[str, str | None]:
        """Every collection with its token; None for one made before tokens were kept, or
        whose token is not written yet (it is written just after the config)."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hkeys(RedisKeys.collections())
            pipe.hgetall(RedisKeys.incarnations())
            names, tokens = await pipe.execute()
        by_name = {as_text(k): as_text(v) for k, v in tokens.items()}
        return {name: by_name.get(name) for name in map(as_text, names)}

    async def put(self, name: str, config: CollectionConfig) -> bool:
        """Record a new collection; False if one of that name exists."""
        made = await self._redis.hsetnx(RedisKeys.collections(), name, config.model_dump_json())
        if made:  # after the config, so a failed put never changes an existing one's token
            await self._redis.hset(RedisKeys.incarnations(), name, uuid.uuid4().hex)
        return bool(made)

    async def remove(self, name: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hdel(RedisKeys.collections(), name)
            pipe.hdel(RedisKeys.incarnations(), name)
            await pipe.execute()


def required(raw: bytes | str | None) -> CollectionConfig:
    """A stored config, or CollectionNotFound ("Configuration not found", 404): the one place
    that says what a missing collection answers."""
    if not raw:
        raise CollectionNotFound()
    return CollectionConfig.model_validate_json(raw)
