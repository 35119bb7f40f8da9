"""Ingest on the real stack: async, sync and bulk upserts, deletes, ordering, re-embedding."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.integration.helpers import (
    create,
    doc,
    get_doc,
    hybrid_collection,
    keyword_collection,
    queue_total,
    search_ids,
    texts_embedded,
    ts,
    wait_until,
)


@pytest.fixture
def coll(client: httpx.Client) -> str:
    name = f"c{uuid.uuid4().hex[:10]}"
    create(client, name, keyword_collection())
    return name


def test_async_upsert_becomes_searchable(client: httpx.Client, coll: str) -> None:
    response = client.post(
        f"/v1/collections/{coll}/documents", json=doc("a", "zebra crossing rules")
    )
    assert response.status_code == 200 and response.json() == {"ok": True}
    wait_until(lambda: search_ids(client, coll, "zebra") == ["a"])


def test_sync_upsert_is_searchable_at_once(client: httpx.Client, coll: str) -> None:
    response = client.post(
        f"/v1/collections/{coll}/documents/sync", json=doc("s", "quokka habitat")
    )
    assert response.status_code == 200
    assert search_ids(client, coll, "quokka") == ["s"]


def test_bulk_of_100_is_indexed_and_101_is_422(client: httpx.Client, coll: str) -> None:
    docs = [doc(f"d{i}", f"bulk document number {i} marker{i}") for i in range(101)]
    too_many = client.post(f"/v1/collections/{coll}/documents/bulk", json={"documents": docs})
    assert too_many.status_code == 422
    ok = client.post(f"/v1/collections/{coll}/documents/bulk", json={"documents": docs[:100]})
    assert ok.status_code == 200
    wait_until(lambda: client.get(f"/v1/collections/{coll}/stats").json()["doc_count"] == 100)
    assert search_ids(client, coll, "marker42")[0] == "d42"


def test_async_delete_removes_document(client: httpx.Client, coll: str) -> None:
    client.post(f"/v1/collections/{coll}/documents/sync", json=doc("x", "ephemeral text"))
    response = client.delete(
        f"/v1/collections/{coll}/documents/x", params={"request_timestamp": ts(10)}
    )
    assert response.status_code == 200
    wait_until(lambda: get_doc(client, coll, "x") is None)
    assert search_ids(client, coll, "ephemeral") == []


def test_sync_delete_removes_document_before_answer(client: httpx.Client, coll: str) -> None:
    client.post(f"/v1/collections/{coll}/documents/sync", json=doc("x", "ephemeral text"))
    response = client.delete(
        f"/v1/collections/{coll}/documents/x/sync", params={"request_timestamp": ts(10)}
    )
    assert response.status_code == 200
    assert get_doc(client, coll, "x") is None
    absent = client.delete(
        f"/v1/collections/{coll}/documents/nope/sync", params={"request_timestamp": ts(10)}
    )
    assert absent.status_code == 200


def test_delete_requires_request_timestamp(client: httpx.Client, coll: str) -> None:
    assert client.delete(f"/v1/collections/{coll}/documents/x").status_code == 422


@pytest.mark.parametrize("order", ["newer_first", "older_first"])
def test_newest_timestamp_wins_in_either_arrival_order(
    client: httpx.Client,
    coll: str,
    stack,
    order: str,  # type: ignore[no-untyped-def]
) -> None:
    newer, older = doc("o", "newest version text", 20), doc("o", "older version text", 10)
    equal = doc("o", "equal timestamp text", 20)
    writes = [newer, older, equal] if order == "newer_first" else [older, newer, equal]
    stack.ctl("stop", "worker")  # queue every write before any is processed
    try:
        for body in writes:
            assert client.post(f"/v1/collections/{coll}/documents", json=body).status_code == 200
    finally:
        stack.ctl("start", "worker")
    wait_until(lambda: queue_total(client, coll) == 0, timeout=90)
    stored = get_doc(client, coll, "o")
    assert stored is not None and stored["content"] == "newest version text"
    stale = client.post(f"/v1/collections/{coll}/documents/sync", json=older)
    assert stale.status_code == 409


def test_sync_upsert_equal_timestamp_is_409(client: httpx.Client, coll: str) -> None:
    assert (
        client.post(f"/v1/collections/{coll}/documents/sync", json=doc("e", "one", 5)).status_code
        == 200
    )
    again = client.post(f"/v1/collections/{coll}/documents/sync", json=doc("e", "two", 5))
    assert again.status_code == 409
    assert get_doc(client, coll, "e")["content"] == "one"  # type: ignore[index]


def test_the_same_sync_write_taken_again_is_200_not_stale(client: httpx.Client, coll: str) -> None:
    """A sync write's request redelivered after the worker applied it (a crash before the
    answer) is that write, not a stale one: the client is told it succeeded."""
    body = doc("r", "once and again", 7, name="replayed", tags=["a"], metadata={"n": 1})
    first = client.post(f"/v1/collections/{coll}/documents/sync", json=body)
    again = client.post(f"/v1/collections/{coll}/documents/sync", json=body)
    assert (first.status_code, again.status_code) == (200, 200), again.text
    changed = client.post(f"/v1/collections/{coll}/documents/sync", json={**body, "tags": ["b"]})
    assert changed.status_code == 409  # the same version with another field is stale
    assert get_doc(client, coll, "r")["tags"] == ["a"]  # type: ignore[index]


def test_delete_cancels_queued_older_upsert(
    client: httpx.Client,
    coll: str,
    stack,  # type: ignore[no-untyped-def]
) -> None:
    stack.ctl("stop", "worker")
    try:
        client.post(f"/v1/collections/{coll}/documents", json=doc("q", "queued then deleted", 10))
        statuses = client.get(f"/v1/collections/{coll}/documents/q/status").json()["statuses"]
        assert [s["status"] for s in statuses] == ["queued"]
        client.delete(f"/v1/collections/{coll}/documents/q", params={"request_timestamp": ts(10)})
        statuses = client.get(f"/v1/collections/{coll}/documents/q/status").json()["statuses"]
        assert [(s["status"], s["op_type"]) for s in statuses] == [("queued", "delete")]
    finally:
        stack.ctl("start", "worker")
    wait_until(lambda: queue_total(client, coll) == 0, timeout=90)
    assert get_doc(client, coll, "q") is None
    # A late older upsert must not resurrect the deleted document either.
    client.post(f"/v1/collections/{coll}/documents/sync", json=doc("q", "late older", 5))
    assert get_doc(client, coll, "q") is None


def test_unchanged_text_is_not_re_embedded(client: httpx.Client) -> None:
    name = f"h{uuid.uuid4().hex[:10]}"
    create(client, name, hybrid_collection())
    client.post(
        f"/v1/collections/{name}/documents/sync", json=doc("u", "stable text", 1, tags=["a"])
    )
    assert texts_embedded(client, name) == 1
    same_text = doc("u", "stable text", 2, tags=["b"], metadata={"k": 1})
    assert client.post(f"/v1/collections/{name}/documents/sync", json=same_text).status_code == 200
    assert texts_embedded(client, name) == 1
    stored = get_doc(client, name, "u")
    assert stored is not None and stored["tags"] == ["b"] and stored["metadata"] == {"k": 1}
    changed = doc("u", "different text now", 3)
    assert client.post(f"/v1/collections/{name}/documents/sync", json=changed).status_code == 200
    assert texts_embedded(client, name) == 2
