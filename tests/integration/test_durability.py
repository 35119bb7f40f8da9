"""Nothing acknowledged is lost: worker kill -9 mid-ingest; a full queue answers 503."""

from __future__ import annotations

import asyncio
import threading
import uuid

import httpx

from core.schemas.document import Document
from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    keyword_collection,
    publish_raw_upserts,
    queue_total,
    wait_until,
)


def test_kill_9_of_worker_mid_ingest_loses_no_acknowledged_document(
    stack, client: httpx.Client
) -> None:  # type: ignore[no-untyped-def]
    name = f"k{uuid.uuid4().hex[:10]}"
    create(client, name, keyword_collection())
    acknowledged: set[str] = set()

    def ingest() -> None:
        with httpx.Client(base_url=stack.base_url, timeout=60) as writer:
            for batch in range(5):
                docs = [doc(f"d{batch}-{i}", f"durable document {batch} {i}") for i in range(100)]
                response = writer.post(
                    f"/v1/collections/{name}/documents/bulk", json={"documents": docs}
                )
                if response.status_code == 200:
                    acknowledged.update(d["id"] for d in docs)

    thread = threading.Thread(target=ingest)
    thread.start()
    wait_until(lambda: doc_count(client, name) > 0, timeout=60, interval=0.05)
    old_pid = stack.pid("worker")
    stack.kill9("worker")
    thread.join(timeout=120)
    assert len(acknowledged) == 500
    wait_until(lambda: stack.pid("worker") not in (0, old_pid), timeout=60)
    wait_until(lambda: doc_count(client, name) == 500, timeout=180, interval=1)
    missing = [
        d
        for d in sorted(acknowledged)
        if client.get(f"/v1/collections/{name}/documents/{d}").status_code != 200
    ]
    assert missing == []


def test_full_document_queue_answers_503_with_retry_after(make_stack) -> None:  # type: ignore[no-untyped-def]
    stack = make_stack({"BRAID_DOCUMENT_QUEUE_MAX": "5"})
    with httpx.Client(base_url=stack.base_url, timeout=60) as client:
        create(client, "full", keyword_collection())
        stack.ctl("stop", "worker")
        for i in range(5):
            assert (
                client.post("/v1/collections/full/documents", json=doc(f"q{i}", "x")).status_code
                == 200
            )
        refused = client.post("/v1/collections/full/documents", json=doc("q5", "x"))
        assert refused.status_code == 503
        assert int(refused.headers["Retry-After"]) >= 1
        assert "full" in refused.json()["detail"]
        assert client.get("/v1/collections/full/queue/info").json()["queued_upsert"] == 5
        stack.ctl("start", "worker")
        wait_until(lambda: doc_count(client, "full") == 5, timeout=90)
        assert client.get("/v1/collections/full/documents/q5").status_code == 404


def test_a_redelivered_write_leaves_the_same_state(stack, client: httpx.Client) -> None:  # type: ignore[no-untyped-def]
    """Invariant 3: the worker wrote the store, then died before acking, so the broker delivers
    the same message again (same queue id, ledger item still live): nothing changes."""
    name = f"redeliver{uuid.uuid4().hex[:8]}"
    create(client, name, keyword_collection())
    first = doc("r", "first version", 0, tags=["a"])
    newer = doc("r", "newer version", 10, tags=["b"])
    sync = f"/v1/collections/{name}/documents/sync"
    assert client.post(sync, json=first).status_code == 200
    stored = client.get(f"/v1/collections/{name}/documents/r").json()
    replay = [Document.model_validate(first)]
    urls = (stack.amqp_url, stack.redis_url)
    asyncio.run(publish_raw_upserts(*urls, name, replay, ["q-1"]))  # ledger item still live
    asyncio.run(publish_raw_upserts(*urls, name, replay, ["q-1"], record=False))  # and again
    wait_until(lambda: queue_total(client, name) == 0)
    assert client.get(f"/v1/collections/{name}/documents/r").json() == stored
    statuses = client.get(f"/v1/collections/{name}/documents/r/status").json()["statuses"]
    assert [s["status"] for s in statuses] == ["indexed"]

    # A late redelivery of the first version after a newer one changes nothing either.
    assert client.post(sync, json=newer).status_code == 200
    asyncio.run(publish_raw_upserts(*urls, name, replay, ["q-2"]))
    wait_until(lambda: queue_total(client, name) == 0)
    assert client.get(f"/v1/collections/{name}/documents/r").json()["content"] == "newer version"
    assert doc_count(client, name) == 1
