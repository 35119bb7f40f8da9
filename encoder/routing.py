"""Which queues an encoder consumes, by role; its registry heartbeat; forwarding model work."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.bus import Bus
from core.enums import EmbedKind, EncoderRole
from core.heartbeats import ENCODER_BEAT_S, EncoderRecord
from core.lifecycle import Periodic
from core.messages import EmbedReply, EmbedRequest
from core.names import RedisKeys, embed_queue, encoder_queue, holder_queue
from core.settings import Settings

log = logging.getLogger(__name__)


def role_of(settings: Settings) -> EncoderRole:
    return EncoderRole.MODEL_HOLDER if settings.holds_models else EncoderRole.ROUTER


def consumed_queues(settings: Settings) -> list[str]:
    """Every encoder takes the shared embed queues and its own; holders also the holder queues."""
    queues = [embed_queue(EmbedKind.QUERY), embed_queue(EmbedKind.DOCUMENT)]
    if role_of(settings) is EncoderRole.MODEL_HOLDER:
        queues += [holder_queue(EmbedKind.QUERY), holder_queue(EmbedKind.DOCUMENT)]
    return [*queues, encoder_queue(settings.encoder_index)]


class Forwarder:
    """A router's one job: pass model work to the holders' queue and bring back their answer."""

    def __init__(self, bus: Bus, timeout_s: float) -> None:
        self._bus = bus
        self._timeout_s = timeout_s

    async def forward(self, request: EmbedRequest) -> EmbedReply:
        """Errors from the holder (bad model, timeout) come back raised as BraidError.

        One try: the caller that sent the work here owns the retry policy.
        """
        return await self._bus.call(
            holder_queue(request.kind), request, EmbedReply, timeout_s=self._timeout_s
        )


class Heartbeat:
    """Announces this encoder in the registry every `interval_s` (start it once consuming);
    close withdraws the record so callers stop counting on it before it stops serving."""

    def __init__(
        self,
        redis: Redis,
        index: int,
        role: EncoderRole,
        models: Callable[[], list[str]],
        interval_s: float = ENCODER_BEAT_S,
    ) -> None:
        self._redis = redis
        self._index = index
        self._role = role
        self._models = models
        self._loop = Periodic("encoder heartbeat", interval_s, self.beat)

    def record(self) -> EncoderRecord:
        return EncoderRecord(
            index=self._index,
            role=self._role,
            models=self._models(),
            pid=os.getpid(),
            last_seen=time.time(),
        )

    async def start(self) -> None:
        self._loop.start()  # its first tick beats at once

    async def beat(self) -> None:
        """A missed beat is only logged: the record ages and callers route around it."""
        try:
            await self._redis.hset(RedisKeys.encoders(), str(self._index), self.record().to_redis())
        except (RedisError, OSError) as exc:
            log.warning("could not write the encoder heartbeat: %s", exc)

    async def close(self) -> None:
        await self._loop.stop()
        try:
            await self._redis.hdel(RedisKeys.encoders(), str(self._index))
        except (RedisError, OSError) as exc:
            log.warning("could not withdraw the encoder heartbeat: %s", exc)
