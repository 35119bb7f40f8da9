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
        specs.append(
            QueueSpec(embed_queue(kind), durable=False, arguments=_bounded(100_000, rpc_ttl))
        )
        specs.append(
            QueueSpec(holder_queue(kind), durable=False, arguments=_bounded(100_000, rpc_ttl))
        )
    return specs
