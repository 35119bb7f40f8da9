"""Queue declarations with their bounds: every process declares the same topology."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.enums import EmbedKind
from core.names import (
    DOCUMENTS_QUEUE,
    SEARCH_QUEUE,
    WORKER_RPC_QUEUE,
    embed_queue,
    encoder_queue,
    holder_queue,
)
from core.settings import Settings


@dataclass(frozen=True)
class QueueSpec:
    name: str
    durable: bool = True
    arguments: dict[str, Any] = field(default_factory=dict)


def _bounded(max_length: int, ttl_ms: int | None = None) -> dict[str, Any]:
    """A full queue refuses publishes (the publisher gets a nack → 503), never drops."""
    args: dict[str, Any] = {"x-max-length": max_length, "x-overflow": "reject-publish"}
    if ttl_ms is not None:
        args["x-message-ttl"] = ttl_ms
    return args


EMBED_QUEUE_MAX = 100_000


def encoder_queue_spec(settings: Settings, index: int) -> QueueSpec:
    """One encoder's own queue: declared by that encoder, bounded like the shared embed queues."""
    ttl = int(settings.rpc_timeout_s * 1000)
    return QueueSpec(encoder_queue(index), durable=False, arguments=_bounded(EMBED_QUEUE_MAX, ttl))


def topology(settings: Settings) -> list[QueueSpec]:
    rpc_ttl = int(settings.rpc_timeout_s * 1000)
    specs = [
        QueueSpec(DOCUMENTS_QUEUE, arguments=_bounded(settings.document_queue_max)),
        QueueSpec(
            SEARCH_QUEUE, durable=False, arguments=_bounded(settings.search_queue_max, rpc_ttl)
        ),
        QueueSpec(
            WORKER_RPC_QUEUE, durable=False, arguments=_bounded(settings.search_queue_max, rpc_ttl)
        ),
    ]
    for kind in EmbedKind:
        for name in (embed_queue(kind), holder_queue(kind)):
            specs.append(
                QueueSpec(name, durable=False, arguments=_bounded(EMBED_QUEUE_MAX, rpc_ttl))
            )
    return specs
