"""The encoder pool: K of N hold the model; a request reaching a non-holder is forwarded."""

from __future__ import annotations

import asyncio
import time

import httpx

from core.bus import Bus
from core.enums import EmbedKind
from core.messages import EmbedReply, EmbedRequest
from core.names import encoder_queue
from tests.integration.helpers import MODEL, metric_total, published_after, wait_until


def _embed_via(amqp_url: str, index: int) -> EmbedReply:
    async def call() -> EmbedReply:
        bus = await Bus.connect(amqp_url, retry_for_s=30)
        try:
            request = EmbedRequest(model=MODEL, kind=EmbedKind.QUERY, texts=["hello world"])
            return await bus.call(encoder_queue(index), request, EmbedReply, timeout_s=60)
        finally:
            await bus.close()

    return asyncio.run(call())


ROUTED = "braid_embed_routed_duration_seconds"


def _roles(client: httpx.Client) -> dict[str, str]:
    """Each encoder's role as its published metrics give it."""
    nodes = client.get("/v1/metrics/current").json()["nodes"]
    return {name: node["role"] for name, node in nodes.items() if name.startswith("encoder-")}


def test_non_holder_forwards_model_work_to_the_holder(stack, client: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    roles = wait_until(lambda: len(_roles(client)) == 2 and _roles(client))
    assert roles == {"encoder-1": "encoder:model_holder", "encoder-2": "encoder:router"}
    before = published_after(client, "encoder-2", time.time())
    forwarded_before = metric_total(before, f"{ROUTED}_count", node="encoder-2")
    reply = _embed_via(stack.amqp_url, 2)
    assert len(reply.vectors) == 1 and len(reply.vectors[0]) == 384
    assert reply.holder == 1
    after = published_after(client, "encoder-2", time.time())
    assert metric_total(after, f"{ROUTED}_count", node="encoder-2") == forwarded_before + 1
    assert metric_total(after, f"{ROUTED}_sum", node="encoder-2") > metric_total(
        before, f"{ROUTED}_sum", node="encoder-2"
    )


def test_with_two_model_encoders_both_hold_the_model(make_stack) -> None:  # type: ignore[no-untyped-def]
    stack = make_stack({"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "2"})
    with httpx.Client(base_url=stack.base_url, timeout=60) as client:
        roles = wait_until(lambda: len(_roles(client)) == 2 and _roles(client))
        assert roles == {"encoder-1": "encoder:model_holder", "encoder-2": "encoder:model_holder"}
        assert _embed_via(stack.amqp_url, 2).holder == 2
        assert _embed_via(stack.amqp_url, 1).holder == 1
