"""Which queues an encoder consumes, by role, and forwarding model work to a model holder."""

from __future__ import annotations

from core.bus import Bus
from core.enums import EmbedKind, EncoderRole
from core.messages import EmbedReply, EmbedRequest
from core.names import embed_queue, encoder_queue, holder_queue
from core.settings import Settings


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
        """Errors from the holder (bad model, timeout) come back raised as BraidError."""
        return await self._bus.call(
            holder_queue(request.kind), request, EmbedReply, timeout_s=self._timeout_s
        )
