"""Which queues an encoder consumes, by role, and forwarding model work to a model holder."""

from __future__ import annotations

from core.bus import Bus
from core.enums import EmbedKind, EncoderRole
from core.messages import EmbedReply, EmbedRequest
from core.names import embed_queue, encoder_queue, holder_queue
from core.settings import Settings
from core.topology import QueueSpec

# Same bound as the shared embed queues in core.topology: a full queue refuses publishes.
OWN_QUEUE_MAX = 100_000


def role_of(settings: Settings) -> EncoderRole:
    return EncoderRole.MODEL_HOLDER if settings.holds_models else EncoderRole.ROUTER


def own_queue_spec(settings: Settings) -> QueueSpec:
    """This encoder's own queue (not part of the shared topology), bounded like the others."""
    arguments = {
        "x-max-length": OWN_QUEUE_MAX,
        "x-overflow": "reject-publish",
        "x-message-ttl": int(settings.rpc_timeout_s * 1000),
    }
    return QueueSpec(encoder_queue(settings.encoder_index), durable=False, arguments=arguments)


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
