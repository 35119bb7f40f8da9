"""Small helpers for black-box tests over HTTP: polling instead of sleeping, sample data."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
import redis

from core.bus import Bus
from core.enums import OpType
from core.heartbeats import SearchNodeBeat, parse_search_nodes
from core.ledger import Ledger, QueuedWrite, new_queue_id
from core.messages import DocumentMessage, DocumentWrite
from core.names import DOCUMENTS_QUEUE, RedisKeys
from core.redis_client import connect_redis
from core.schemas.document import Document

T = TypeVar("T")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def ts(seconds: float = 0) -> str:
    """A UTC timestamp `seconds` after a fixed base, as the API expects it."""
    return (BASE_TIME + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def wait_until(check: Callable[[], T], timeout: float = 60.0, interval: float = 0.2) -> T:
    """Poll `check` until it returns something truthy; fail with the last value after `timeout`."""
    deadline = time.monotonic() + timeout
    last: T = check()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:g} s (last: {last!r})")
        time.sleep(interval)
        last = check()
    return last


def search_nodes(board: redis.Redis) -> dict[str, SearchNodeBeat]:
    """The search nodes' heartbeat records by api index (pid, searches answered, the replica's
    position, copies and whether it is idle)."""
    return parse_search_nodes(board.hgetall(RedisKeys.searchers()))


def keyword_collection(fields: list[str] | None = None) -> dict[str, Any]:
    return {
        "vectors": [
            {"name": "kw", "type": "keyword", "index_fields": fields or ["name", "content"]}
        ]
    }


def hybrid_collection() -> dict[str, Any]:
    return {
        "vectors": [
            {"name": "kw", "type": "keyword", "index_fields": ["name", "content"]},
            {"name": "dense", "type": "dense_model", "model": MODEL, "index_fields": ["content"]},
        ]
    }


def doc(doc_id: str, content: str, seconds: float = 0, **extra: Any) -> dict[str, Any]:
    return {"id": doc_id, "timestamp": ts(seconds), "content": content, **extra}


def create(client: httpx.Client, name: str, config: dict[str, Any]) -> None:
    response = client.post(f"/v1/collections/{name}", json=config)
    assert response.status_code == 200, response.text


def search_ids(client: httpx.Client, name: str, query: str, **options: Any) -> list[str]:
    response = client.post(f"/v1/collections/{name}/search", json={"query": query, **options})
    assert response.status_code == 200, response.text
    return [hit["id"] for hit in response.json()["results"]]


def doc_count(client: httpx.Client, name: str) -> int:
    response = client.get(f"/v1/collections/{name}/stats")
    assert response.status_code == 200, response.text
    return int(response.json()["doc_count"])


def get_doc(client: httpx.Client, name: str, doc_id: str) -> dict[str, Any] | None:
    response = client.get(f"/v1/collections/{name}/documents/{doc_id}")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    return response.json()


def queue_total(client: httpx.Client, name: str) -> int:
    response = client.get(f"/v1/collections/{name}/queue/info")
    assert response.status_code == 200, response.text
    return int(response.json()["total"])


def all_documents(client: httpx.Client, name: str) -> dict[str, str]:
    """Every document of the collection, as id -> name, through the fetch cursor."""
    found: dict[str, str] = {}
    after = None
    while True:
        body: dict[str, Any] = {"page_size": 1000, "after": after}
        page = client.post(f"/v1/collections/{name}/documents/fetch", json=body)
        assert page.status_code == 200, page.text
        found.update({d["id"]: d["name"] for d in page.json()["documents"]})
        after = page.json()["after"]
        if after is None:
            return found


def drained(client: httpx.Client, name: str, stall_s: float) -> None:
    """Wait for the collection's queue to empty while it keeps shrinking: only a queue that stops
    moving for `stall_s` fails (a write that is stuck, or failed for good, never leaves it)."""
    lowest = queue_total(client, name)
    moved = time.monotonic()
    while lowest > 0:
        assert time.monotonic() - moved < stall_s, f"the queue stayed at {lowest} for {stall_s} s"
        time.sleep(0.5)
        total = queue_total(client, name)
        if total < lowest:
            lowest, moved = total, time.monotonic()


def published_after(client: httpx.Client, node: str, moment: float) -> str:
    """The Prometheus exposition once `node` has published metrics taken after `moment` (an
    event, not a guess at the publish interval): it then holds all the node counted before."""
    seen = re.compile(
        rf'^braid_process_last_seen_timestamp_seconds\{{node="{node}",[^}}]*\}} (\S+)$', re.M
    )

    def published() -> str | None:
        text = client.get("/v1/metrics/prometheus").text
        found = seen.search(text)
        return text if found and float(found.group(1)) > moment else None

    return wait_until(published, timeout=30)


def metric_total(text: str, metric: str, **labels: str) -> float:
    """A metric's samples in an exposition that carry `labels`, summed over the rest."""
    total = 0.0
    for found in re.finditer(rf"^{metric}\{{([^}}]*)\}} (\S+)$", text, re.M):
        pairs = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', found.group(1)))
        if all(pairs.get(k) == v for k, v in labels.items()):
            total += float(found.group(2))
    return total


def texts_embedded(client: httpx.Client, collection: str) -> float:
    """Document texts the worker had embedded for `collection`, counting every write answered
    before this call."""
    text = published_after(client, "worker", time.time())
    return metric_total(text, "braid_document_texts_embedded_total", collection=collection)


async def publish_raw_upserts(
    amqp_url: str,
    redis_url: str,
    collection: str,
    documents: list[Document],
    queue_ids: list[str] | None = None,
    record: bool = True,
) -> None:
    """Queue upserts as the API does (ledger, then persistent messages of up to
    WRITES_PER_MESSAGE writes), in one burst so they share a worker batch. This path also takes
    writes the API would refuse (as an older client or a bug could have left them); given
    `queue_ids` and `record=False` it sends a message again without a new ledger item, as a
    broker redelivery does."""
    redis = await connect_redis(redis_url)
    bus = await Bus.connect(amqp_url)
    try:
        writes = [
            DocumentWrite(
                queue_id=queue_ids[i] if queue_ids else new_queue_id(),
                op=OpType.UPSERT,
                doc_id=d.id,
                timestamp=d.timestamp,
                document=d,
            )
            for i, d in enumerate(documents)
        ]
        if record:
            await Ledger(redis).enqueue(
                collection,
                [QueuedWrite(w.queue_id, w.doc_id, OpType.UPSERT, w.timestamp) for w in writes],
            )
        messages = DocumentMessage.carrying(collection, writes)
        await asyncio.gather(*(bus.publish(DOCUMENTS_QUEUE, m, persistent=True) for m in messages))
    finally:
        await bus.close()
        await redis.aclose()
