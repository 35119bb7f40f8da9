"""Per-document locks in Redis, so that two workers never interleave writes to one document."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from core.enums import UnavailableReason
from core.errors import Unavailable
from core.names import RedisKeys

_RELEASE = """
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
return 1
"""


class DocumentLocks:
    def __init__(self, redis: Redis, ttl_ms: int = 60_000, wait_s: float = 30.0) -> None:
        self._redis = redis
        self._ttl_ms = ttl_ms
        self._wait_s = wait_s
        self._release = redis.register_script(_RELEASE)

    @asynccontextmanager
    async def hold(self, collection: str, doc_ids: list[str]) -> AsyncIterator[None]:
        token = uuid.uuid4().hex
        keys = [RedisKeys.doc_lock(collection, d) for d in sorted(set(doc_ids))]
        held: list[str] = []
        try:
            await self._acquire(keys, token, held)
            yield
        finally:
            if held:
                await self._release(keys=held, args=[token])

    async def _acquire(self, keys: list[str], token: str, held: list[str]) -> None:
        """All of `keys` or none: a caller that gets only some lets them go and tries again, so
        two batches that share documents (the consumer runs batches side by side) never each
        hold a part of what the other waits for."""
        deadline = asyncio.get_running_loop().time() + self._wait_s
        while True:
            pipe = self._redis.pipeline(transaction=False)
            for key in keys:
                pipe.set(key, token, nx=True, px=self._ttl_ms)
            results = await pipe.execute()
            held.extend(k for k, ok in zip(keys, results, strict=True) if ok)
            if len(held) == len(keys):
                return
            await self._release(keys=held, args=[token])
            held.clear()
            if asyncio.get_running_loop().time() > deadline:
                raise Unavailable(
                    "the documents are locked by another write in progress; retry later",
                    reason=UnavailableReason.DOCUMENTS_LOCKED,
                )
            await asyncio.sleep(random.uniform(0.02, 0.08))
