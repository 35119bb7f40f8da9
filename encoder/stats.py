"""Encoder counters kept in memory and flushed to one Redis hash about once a second."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError
from redis.typing import EncodableT, FieldT

from core.enums import EmbedKind, EncoderRole
from core.lifecycle import Periodic
from core.names import RedisKeys

log = logging.getLogger(__name__)

COUNTERS = (
    "served",
    "forwarded",
    "errors",
    "texts_embedded",
    "inference_count",
    "routed_count",
    "batches",
    "query_batches",
    "query_texts",
)
TIMERS = ("inference_ms_sum", "routed_ms_sum", "batch_ms_sum", "query_batch_ms_sum")


class EncoderStats:
    """Cheap in-process counting; Redis sees deltas via HINCRBY/HINCRBYFLOAT on each flush."""

    def __init__(
        self,
        redis: Redis,
        index: int,
        role: EncoderRole,
        models: Callable[[], list[str]],
        interval_s: float = 1.0,
    ) -> None:
        self._redis = redis
        self._key = RedisKeys.encoder_stats(index)
        self._index = index
        self._role = role
        self._models = models
        self._counts: Counter[str] = Counter()
        self._times: dict[str, float] = dict.fromkeys(TIMERS, 0.0)
        self._loop = Periodic("encoder stats", interval_s, self.flush)

    def served(self) -> None:
        self._counts["served"] += 1

    def inference(self, elapsed_ms: float, texts: int) -> None:
        """Model time of one answered request (the sum of the batches it was part of)."""
        self._counts["texts_embedded"] += texts
        self._counts["inference_count"] += 1
        self._times["inference_ms_sum"] += elapsed_ms

    def batch(self, kind: EmbedKind, texts: int, elapsed_ms: float) -> None:
        """One model call on a lane. All lanes: texts_embedded / batches is the mean batch
        size; the query lane's share is also counted on its own."""
        self._counts["batches"] += 1
        self._times["batch_ms_sum"] += elapsed_ms
        if kind is EmbedKind.QUERY:
            self._counts["query_batches"] += 1
            self._counts["query_texts"] += texts
            self._times["query_batch_ms_sum"] += elapsed_ms

    def routed(self, elapsed_ms: float) -> None:
        self._counts["forwarded"] += 1
        self._counts["routed_count"] += 1
        self._times["routed_ms_sum"] += elapsed_ms

    def error(self) -> None:
        self._counts["errors"] += 1

    async def start(self) -> None:
        """Reset the hash (it describes this process) and start the flush/heartbeat loop."""
        await self._redis.delete(self._key)
        await self._redis.hset(self._key, mapping=self._identity() | self._zeroes())
        self._loop.start()

    async def close(self) -> None:
        await self._loop.stop()
        await self.flush()

    async def flush(self) -> None:
        """Push the deltas since the last flush plus the heartbeat; keep them on failure."""
        counts, times = self._counts, self._times
        self._counts, self._times = Counter(), dict.fromkeys(TIMERS, 0.0)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for name, value in counts.items():
                    if value:
                        pipe.hincrby(self._key, name, value)
                for name, elapsed in times.items():
                    if elapsed:
                        pipe.hincrbyfloat(self._key, name, elapsed)
                pipe.hset(self._key, mapping=self._identity())
                await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning("could not write encoder stats: %s", exc)
            self._counts.update(counts)
            for name, elapsed in times.items():
                self._times[name] += elapsed

    def _identity(self) -> dict[FieldT, EncodableT]:
        return {
            "role": self._role.value,
            "index": self._index,
            "models": ",".join(self._models()),
            "last_seen": time.time(),
        }

    @staticmethod
    def _zeroes() -> dict[FieldT, EncodableT]:
        return {name: 0 for name in (*COUNTERS, *TIMERS)}
