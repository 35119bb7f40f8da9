"""Per-document locks against the stack's Redis: all of a batch's documents or none, so two
batches that share documents never each hold a part of what the other needs."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from core.errors import Unavailable
from core.names import RedisKeys
from harness.stack import Stack
from worker.locks import DocumentLocks


@pytest.fixture
async def redis(stack: Stack) -> AsyncIterator[Redis]:
    client = Redis.from_url(stack.redis_url)
    yield client
    await client.aclose()


def collection() -> str:
    return f"locks{uuid.uuid4().hex[:8]}"


async def test_a_batch_sharing_one_held_document_takes_none_of_its_others(redis: Redis) -> None:
    name, locks = collection(), DocumentLocks(redis, wait_s=0.0)
    async with locks.hold(name, ["b"]):
        with pytest.raises(Unavailable, match="locked by another write"):
            async with locks.hold(name, ["a", "b", "c"]):
                pytest.fail("entered while b was held")
        async with locks.hold(name, ["a", "c"]):  # the failed batch left a and c free
            pass
    async with locks.hold(name, ["a", "b", "c"]):  # and b is free once its holder is done
        pass


async def test_locks_expire_on_their_own_and_go_with_their_holder(redis: Redis) -> None:
    """A worker killed while holding locks leaves them for at most their TTL."""
    name = collection()
    keys = [RedisKeys.doc_lock(name, d) for d in ("a", "b")]
    async with DocumentLocks(redis, ttl_ms=60_000).hold(name, ["b", "a", "a"]):
        ttls = [await redis.pttl(key) for key in keys]
        assert all(0 < ttl <= 60_000 for ttl in ttls), ttls
    assert await redis.exists(*keys) == 0
