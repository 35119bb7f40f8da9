"""Writes the broker never confirmed. The api answers 200 only for a confirm it saw within the
publish deadline, else 503 with Retry-After; a ledger entry whose message never reached the broker
(an api killed between recording it and publishing it) is forgotten by the worker, so the queue's
count goes back to zero; acknowledged writes land all the same."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from core.enums import OpType
from core.ledger import Ledger, QueuedWrite, new_queue_id
from core.redis_client import connect_redis
from harness.stack import Stack
from tests.integration.helpers import (
    create,
    doc,
    hybrid_collection,
    keyword_collection,
    queue_total,
    wait_until,
)

DEADLINE_S = 3
RPC_TIMEOUT_S = 25  # what a batch waits for encoders that are down before it is requeued


@pytest.fixture(scope="module")
def hasty() -> Iterator[Stack]:
    env = {"BRAID_PUBLISH_DEADLINE_S": str(DEADLINE_S), "BRAID_RPC_TIMEOUT_S": str(RPC_TIMEOUT_S)}
    with Stack(env) as stack:
        yield stack


@pytest.fixture(scope="module")
def http(hasty: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hasty.base_url, timeout=60) as client:
        yield client


def _collection(http: httpx.Client) -> str:
    name = f"u{uuid.uuid4().hex[:10]}"
    create(http, name, keyword_collection())
    return name


def _found(http: httpx.Client, name: str, doc_id: str) -> bool:
    response = http.get(f"/v1/collections/{name}/documents/{doc_id}")
    return response.status_code == 200


async def _record_only(redis_url: str, collection: str, doc_id: str) -> None:
    """What an api killed between the ledger and the publish leaves: an entry, no message. It
    is recorded twice, as the Redis client does when a reply is lost and it replays the call."""
    redis = await connect_redis(redis_url)
    try:
        write = QueuedWrite(new_queue_id(), doc_id, OpType.UPSERT, datetime.now(UTC))
        await Ledger(redis).enqueue(collection, [write])
        await Ledger(redis).enqueue(collection, [write])
    finally:
        await redis.aclose()


def test_an_entry_whose_message_never_reached_the_broker_is_forgotten(
    hasty: Stack, http: httpx.Client
) -> None:
    name = _collection(http)
    asyncio.run(_record_only(hasty.redis_url, name, "phantom"))
    assert queue_total(http, name) == 1
    sent = http.post(f"/v1/collections/{name}/documents", json=doc("real", "an acknowledged write"))
    assert sent.status_code == 200, sent.text
    wait_until(lambda: queue_total(http, name) == 0, timeout=90, interval=0.5)
    assert _found(http, name, "real")
    assert not _found(http, name, "phantom")
    assert http.get(f"/v1/collections/{name}/documents/phantom/status").status_code == 404


def _status(http: httpx.Client, name: str, doc_id: str) -> str | None:
    response = http.get(f"/v1/collections/{name}/documents/{doc_id}/status")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    return str(response.json()["statuses"][0]["status"])


def test_a_write_in_the_worker_s_hands_past_the_deadline_is_kept(
    hasty: Stack, http: httpx.Client
) -> None:
    """With the model holder hung, a hybrid write waits in the worker's hands for the RPC
    timeout, far past the publish deadline, with its entry `queued` and the queue empty: only
    what the consumer holds tells the reaper to spare it. It is `requeued` after the timeout
    (not forgotten), and lands once the holder runs again."""
    name = f"u{uuid.uuid4().hex[:10]}"
    create(http, name, hybrid_collection())
    with hasty.frozen("encoder:encoder-1"):
        sent = http.post(f"/v1/collections/{name}/documents", json=doc("held", "in the worker"))
        assert sent.status_code == 200, sent.text
        wait_until(lambda: _status(http, name, "held") != "queued", timeout=RPC_TIMEOUT_S * 4)
        assert _status(http, name, "held") == "requeued"
    wait_until(lambda: _found(http, name, "held"), timeout=180, interval=0.5)
    assert queue_total(http, name) == 0


def test_a_write_the_hung_broker_does_not_confirm_in_time_gets_503(
    hasty: Stack, http: httpx.Client
) -> None:
    name = _collection(http)
    with hasty.frozen("rabbitmq"):
        late = http.post(f"/v1/collections/{name}/documents", json=doc("late", "never confirmed"))
    assert late.status_code == 503, late.text
    assert f"within {DEADLINE_S} s" in late.json()["detail"]
    assert int(late.headers["Retry-After"]) >= 1
    wait_until(lambda: queue_total(http, name) == 0, timeout=30, interval=0.5)  # undone at once
    after = doc("after", "the broker is back")
    wait_until(
        lambda: http.post(f"/v1/collections/{name}/documents", json=after).status_code == 200,
        timeout=60,
        interval=0.5,
    )
    wait_until(lambda: _found(http, name, "after"), timeout=60, interval=0.5)
