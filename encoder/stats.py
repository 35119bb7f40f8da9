"""An encoder's metrics (core.metrics): model time per batch and texts embedded by model and
lane, forwarded requests end to end, errors; published with its role and the models it holds."""

from __future__ import annotations

from collections.abc import Callable

from redis.asyncio import Redis

from core.enums import EmbedKind, EncoderRole
from core.metrics import EMBED_ERRORS, EMBED_SECONDS, EMBEDDED_TEXTS, ROUTED_SECONDS, Recorder
from core.metrics_publish import MetricsPublisher


class EncoderStats:
    def __init__(
        self, redis: Redis, index: int, role: EncoderRole, models: Callable[[], list[str]]
    ) -> None:
        self.recorder = Recorder()
        self._publisher = MetricsPublisher(
            redis,
            self.recorder,
            f"encoder-{index}",
            f"encoder:{role.value}",
            meta=lambda: {"index": str(index), "models": ",".join(models())},
        )

    def batch(self, model: str, lane: EmbedKind, texts: int, elapsed_ms: float) -> None:
        """One model call on a lane (the batcher's on_batch)."""
        self.recorder.observe(EMBED_SECONDS, elapsed_ms / 1000.0, model=model, lane=lane.value)
        self.recorder.inc(EMBEDDED_TEXTS, texts, model=model, lane=lane.value)

    def routed(self, model: str, seconds: float) -> None:
        self.recorder.observe(ROUTED_SECONDS, seconds, model=model)

    def error(self, model: str) -> None:
        self.recorder.inc(EMBED_ERRORS, model=model)

    def start(self) -> None:
        self._publisher.start()

    async def close(self) -> None:
        await self._publisher.close()
