"""Connect to Redis, waiting while it boots."""

from __future__ import annotations

import asyncio
import logging
import time

from redis import exceptions as redis_errors
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from core.enums import UnavailableReason
from core.errors import Unavailable

log = logging.getLogger(__name__)


# A pooled connection that Redis dropped (a restart) fails its next command: retry it on a new
# connection, briefly, so a recovered Redis never shows a client one stray 503.
COMMAND_RETRY = Retry(ExponentialBackoff(cap=0.4, base=0.05), retries=3)


async def connect_redis(url: str, retry_for_s: float = 180.0) -> Redis:
    client: Redis = Redis.from_url(
        url,
        health_check_interval=30,
        retry=COMMAND_RETRY,
        retry_on_error=[redis_errors.ConnectionError, redis_errors.TimeoutError],
    )
    deadline = time.monotonic() + retry_for_s
    while True:
        try:
            await client.ping()
            return client
        except (RedisError, OSError) as exc:
            if time.monotonic() > deadline:
                raise Unavailable(
                    f"redis unreachable: {exc}", reason=UnavailableReason.REDIS_DOWN
                ) from exc
            log.info("redis not ready (%s); retrying", exc)
            await asyncio.sleep(0.5)


def as_text(value: bytes | str) -> str:
    """Redis answers bytes (the client does not decode): decode keys and members."""
    return value.decode() if isinstance(value, bytes) else value
