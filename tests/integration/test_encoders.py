"""The encoder pool: K of N hold the model; a request reaching a non-holder is forwarded."""

from __future__ import annotations

import asyncio

import httpx

from core.bus import Bus
from core.enums import EmbedKind
from core.messages import EmbedReply, EmbedRequest
from core.names import encoder_queue
from tests.integration.helpers import MODEL, wait_until


def _embed_via(amqp_url: str, index: int) -> EmbedReply:
    async def call() -> EmbedReply:
        bus = await Bus.connect(amqp_url, retry_for_s=30)
        try:
            request = EmbedRequest(model=MODEL, kind=EmbedKind.QUERY, texts=["hello world"])
            return await bus.call(encoder_queue(index), request, EmbedReply, timeout_s=60)
        finally:
            await bus.close()

    return asyncio.run(call())


def _encoders(client: httpx.Client) -> dict[str, dict[str, str]]:
    nodes = client.get("/v1/metrics/current").json()["nodes"]
    return {name: node["meta"] for name, node in nodes.items() if name.startswith("encoder-")}


def test_non_holder_forwards_model_work_to_the_holder(stack, client: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    encoders = wait_until(lambda: len(_encoders(client)) == 2 and _encoders(client))
    assert encoders["encoder-1"]["role"] == "model_holder"
    assert encoders["encoder-2"]["role"] == "router"
    forwarded_before = int(encoders["encoder-2"].get("forwarded", 0))
    reply = _embed_via(stack.amqp_url, 2)
    assert len(reply.vectors) == 1 and len(reply.vectors[0]) == 384
    assert reply.holder == 1
    # Stats are flushed to Redis about once a second.
    after = wait_until(
        lambda: (
            (e := _encoders(client)["encoder-2"])
            and int(e.get("forwarded", 0)) == forwarded_before + 1
            and e
        )
    )
    assert float(after["routed_ms_sum"]) > 0


def test_with_two_model_encoders_both_hold_the_model(make_stack) -> None:  # type: ignore[no-untyped-def]
    stack = make_stack({"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "2"})
    with httpx.Client(base_url=stack.base_url, timeout=60) as client:
        roles = wait_until(
            lambda: (
                len(_encoders(client)) == 2
                and {n: e.get("role") for n, e in _encoders(client).items()}
            )
        )
        assert roles == {"encoder-1": "model_holder", "encoder-2": "model_holder"}
        assert _embed_via(stack.amqp_url, 2).holder == 2
        assert _embed_via(stack.amqp_url, 1).holder == 1
