"""A poison document fails alone: its neighbours are indexed, it ends `failed` with a reason,
stays visible in status and queue info until DELETE …/queue, and never blocks the queue."""

from __future__ import annotations

import asyncio
import time
import uuid

import httpx

from core.schemas.document import Document
from harness.stack import Stack
from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    metric_total,
    publish_raw_upserts,
    published_after,
    wait_until,
)


def _vector_doc(doc_id: str, vector: list[float], seconds: float = 0) -> Document:
    custom = [{"vector_name": "emb", "field": "content", "vector": vector}]
    return Document.model_validate(doc(doc_id, f"text of {doc_id}", seconds, custom_vectors=custom))


def test_poison_document_fails_alone_and_stays_visible_until_purged(
    stack: Stack, client: httpx.Client
) -> None:
    name = f"poison{uuid.uuid4().hex[:8]}"
    create(client, name, {"vectors": [{"name": "emb", "type": "dense_custom", "dimensions": 3}]})
    good = [_vector_doc(f"g{i}", [1.0, float(i), 0.5]) for i in range(20)]
    poison = _vector_doc("bad", [1.0, 2.0, 3.0, 4.0])  # 4 numbers in a 3-d slot
    burst = good[:10] + [poison] + good[10:]
    asyncio.run(publish_raw_upserts(stack.amqp_url, stack.redis_url, name, burst))

    wait_until(lambda: doc_count(client, name) == 20, timeout=60)

    def failed() -> dict[str, object] | None:
        info = client.get(f"/v1/collections/{name}/queue/info").json()
        return info if info["failed_upsert"] == 1 else None

    info = wait_until(failed, timeout=90)
    assert info["total"] == 1 and info["queued_upsert"] == 0 and info["requeued_upsert"] == 0
    statuses = client.get(f"/v1/collections/{name}/documents/bad/status").json()["statuses"]
    assert [s["status"] for s in statuses] == ["failed"]
    assert statuses[0]["try_count"] >= 1 and statuses[0]["info"]
    # The dashboard's list of failed writes names it, with the same reason.
    (listed,) = client.get(f"/v1/collections/{name}/queue/failed").json()
    assert listed["doc_id"] == "bad" and listed["op_type"] == "upsert"
    assert listed["info"] == statuses[0]["info"] and listed["try_count"] == statuses[0]["try_count"]
    # writes that failed for good also show in the worker's metrics
    worker = published_after(client, "worker", time.time())
    failed_writes = metric_total(
        worker, "braid_document_writes_total", collection=name, outcome="failed"
    )
    assert failed_writes == 1

    # The queue keeps moving after the failure.
    late = doc(
        "late",
        "after the poison",
        100,
        custom_vectors=[{"vector_name": "emb", "field": "content", "vector": [0.0, 1.0, 0.0]}],
    )
    assert client.post(f"/v1/collections/{name}/documents", json=late).status_code == 200
    wait_until(lambda: doc_count(client, name) == 21, timeout=30)

    assert client.delete(f"/v1/collections/{name}/queue").status_code == 200
    assert client.get(f"/v1/collections/{name}/queue/info").json()["total"] == 0
    assert client.get(f"/v1/collections/{name}/queue/failed").json() == []
    assert client.get(f"/v1/collections/{name}/documents/bad/status").status_code == 404
