"""Connect to Redis, waiting while it boots."""

from __future__ import annotations

import asyncio
import logging
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.errors import Unavailable

log = logging.getLogger(__name__)


async def connect_redis(url: str, retry_for_s: float = 180.0) -> Redis:
    client: Redis = Redis.from_url(url, health_check_interval=30)
    deadline = time.monotonic() + retry_for_s
    while True:
        try:
            await client.ping()
            return client
        except (RedisError, OSError) as exc:
            if time.monotonic() > deadline:
                raise Unavailable(f"redis unreachable: {exc}") from exc
            log.info("redis not ready (%s); retrying", exc)
            await asyncio.sleep(0.5)


def as_text(value: bytes | str) -> str:
    """Redis answers bytes (the client does not decode): decode keys and members."""
    return value.decode() if isinstance(value, bytes) else value
