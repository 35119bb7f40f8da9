"""Hybrid search on the real stack: the dense arm, weights, and search input errors."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.integration.helpers import (
    create,
    doc,
    hybrid_collection,
    keyword_collection,
    search_ids,
    wait_until,
)

CAT = doc("cat", "A small cat sat on the mat and purred all afternoon.")
TAX = doc("tax", "Quarterly tax filing deadlines for small businesses.")
PET = doc("pet", "Pet insurance policy terms and yearly premiums.")
LATCH = doc("latch", "Kitten-proof cabinet latch hardware, pack of twelve.", name="Kitten latch")


@pytest.fixture(scope="module")
def hybrid(client: httpx.Client) -> str:
    name = f"h{uuid.uuid4().hex[:10]}"
    create(client, name, hybrid_collection())
    for body in (CAT, TAX, PET, LATCH):
        assert client.post(f"/v1/collections/{name}/documents/sync", json=body).status_code == 200
    return name


def test_dense_arm_finds_document_sharing_no_word_with_query(
    client: httpx.Client, hybrid: str
) -> None:
    keyword_only = [{"vector_name": "kw", "weight": 1.0}]
    assert "cat" not in search_ids(client, hybrid, "feline pet", vector_options=keyword_only)
    dense_only = [{"vector_name": "dense", "weight": 1.0}]
    assert search_ids(client, hybrid, "feline pet", vector_options=dense_only)[0] == "cat"
    assert "cat" in search_ids(client, hybrid, "feline pet")


def test_weights_change_the_order(client: httpx.Client, hybrid: str) -> None:
    def ranking(kw: float, dense: float) -> list[str]:
        options = [
            {"vector_name": "kw", "field": "name", "weight": kw},
            {"vector_name": "kw", "field": "content", "weight": kw},
            {"vector_name": "dense", "field": "content", "weight": dense},
        ]
        return search_ids(client, hybrid, "feline pet", vector_options=options)

    # The keyword arms only match "pet"; the dense arm puts the cat first, but only just (cosine
    # 0.42 vs 0.41), so a weight ratio of 500, not 50, lets it lead whatever the float precision.
    assert ranking(kw=5.0, dense=0.1)[0] == "pet"
    assert ranking(kw=0.01, dense=5.0)[0] == "cat"


def test_weight_zero_skips_an_arm(client: httpx.Client, hybrid: str) -> None:
    options = [{"vector_name": "kw", "weight": 1.0}, {"vector_name": "dense", "weight": 0}]
    keyword_only = [{"vector_name": "kw", "weight": 1.0}]
    skipped = search_ids(client, hybrid, "feline pet", vector_options=options)
    assert skipped == search_ids(client, hybrid, "feline pet", vector_options=keyword_only)
    assert "cat" not in skipped


def test_search_response_shape_and_limit(client: httpx.Client, hybrid: str) -> None:
    response = client.post(f"/v1/collections/{hybrid}/search", json={"query": "small", "limit": 1})
    body = response.json()
    assert response.status_code == 200 and len(body["results"]) == 1
    assert body["query_time_ms"] >= 0 and body["facet_counts"] is None
    hit = body["results"][0]
    assert {"id", "timestamp", "content", "score", "vector_scores"} <= set(hit)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"query": ""}, 422),
        ({"query": "   "}, 422),
        ({"query": "x" * 10_001}, 422),
        ({"query": "x", "limit": 0}, 422),
        ({"query": "x", "limit": 101}, 422),
        ({"query": "x", "unknown": 1}, 422),
        ({"query": "x", "vector_options": [{"vector_name": "nope"}]}, 400),
        ({"query": "x", "vector_options": [{"vector_name": "dense", "field": "name"}]}, 400),
    ],
)
def test_bad_search_input_is_rejected(
    client: httpx.Client, hybrid: str, body: dict, status: int
) -> None:  # type: ignore[type-arg]
    response = client.post(f"/v1/collections/{hybrid}/search", json=body)
    assert response.status_code == status, response.text
    assert response.json()["detail"]


def test_search_on_missing_collection_is_404(client: httpx.Client) -> None:
    response = client.post("/v1/collections/does-not-exist/search", json={"query": "x"})
    assert response.status_code == 404
    assert response.json()["detail"] == "Configuration not found"


def test_documents_that_tie_are_ranked_by_id(client: httpx.Client) -> None:
    # One retriever (the keyword vector over name and content): the store ranks such a search in
    # one query, and where its best scores tie the node fuses the arms' hits instead, which
    # breaks ties by raw score and then by id. The engine's own order of equal scores is its
    # points' order (uuid5 of the ids), which ids sent in this order would not match. One bulk
    # batch, so every copy of the text gets the same vector (its length statistics are the
    # batch's).
    name = f"t{uuid.uuid4().hex[:10]}"
    create(client, name, keyword_collection())
    text = "Apple orchard harvest notes from the northern valley."
    tied = ["tie-e", "tie-b", "tie-f", "tie-a", "tie-d", "tie-c"]
    bodies = [doc("best", f"{text} Apple orchard apple orchard."), *(doc(d, text) for d in tied)]
    bulk = client.post(f"/v1/collections/{name}/documents/bulk", json={"documents": bodies})
    assert bulk.status_code == 200, bulk.text

    def ranked() -> list[dict[str, Any]]:
        response = client.post(f"/v1/collections/{name}/search", json={"query": "apple orchard"})
        assert response.status_code == 200, response.text
        results: list[dict[str, Any]] = response.json()["results"]
        return results

    wait_until(lambda: len(ranked()) == 7)  # all indexed
    results = ranked()
    assert len({hit["score"] for hit in results[1:]}) == 1
    assert [hit["id"] for hit in results] == ["best", *sorted(tied)]
