"""The collection catalog: each collection's config, kept in Redis for every process to read."""

from __future__ import annotations

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

    async def put(self, name: str, config: CollectionConfig) -> bool:
        """Record a new collection; False if one of that name exists."""
        return bool(
            await self._redis.hsetnx(RedisKeys.collections(), name, config.model_dump_json())
        )

    async def remove(self, name: str) -> None:
        await self._redis.hdel(RedisKeys.collections(), name)


def required(raw: bytes | str | None) -> CollectionConfig:
    """A stored config, or CollectionNotFound ("Configuration not found", 404): the one place
    that says what a missing collection answers."""
    if not raw:
        raise CollectionNotFound()
    return CollectionConfig.model_validate_json(raw)
