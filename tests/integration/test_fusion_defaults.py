"""Search defaults that rank (docs/relevance.md): with no vector_options, a vector over several
fields is one retriever summing its fields' raw scores with field weights, normalised by linear
(min-max) fusion; an option naming a vector without a field is the same one retriever."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.integration.helpers import create, doc


def test_default_search_is_one_retriever_per_vector_normalised_linearly(
    client: httpx.Client,
) -> None:
    # No vector_options and no fusion_mode: the keyword vector's name and content arms are one
    # retriever, scored 0.4 × name + content (raw), then min-max normalised over its candidates.
    name = f"dflt{uuid.uuid4().hex[:8]}"
    vectors = [{"name": "kw", "type": "keyword", "index_fields": ["name", "content"]}]
    create(client, name, {"vectors": vectors})
    documents = [
        doc("title", "a note on something else entirely", name="Lemon tart"),
        doc("body", "lemon tart baked with cream", name="Dessert"),
        doc("both", "lemon tart, the classic", name="Lemon tart"),
        doc("once", "one lemon, a bowl of other things", name="Kitchen"),
    ]
    for document in documents:
        response = client.post(f"/v1/collections/{name}/documents/sync", json=document)
        assert response.status_code == 200, response.text
    response = client.post(
        f"/v1/collections/{name}/search",
        json={"query": "lemon tart", "raw_scores": True, "limit": 100},
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert {hit["id"] for hit in results} == {"title", "body", "both", "once"}
    field_weights = {"name": 0.4, "content": 1.0}
    summed = {
        hit["id"]: sum(field_weights[s["field"]] * s["score"] for s in hit["vector_scores"])
        for hit in results
    }
    low, high = min(summed.values()), max(summed.values())
    for hit in results:
        assert hit["score"] == pytest.approx((summed[hit["id"]] - low) / (high - low))
    assert [hit["id"] for hit in results] == sorted(summed, key=lambda d: -summed[d])
    assert results[0]["id"] == "both" and results[0]["score"] == pytest.approx(1.0)
    # The title alone weighs less than the same words in the body.
    assert summed["body"] > summed["title"]

    # An option naming the vector without a field is the same one retriever, with its weight:
    # the best document scores 2 (an arm per field, best in both, would score 4).
    response = client.post(
        f"/v1/collections/{name}/search",
        json={
            "query": "lemon tart",
            "fusion_mode": "linear",
            "vector_options": [{"vector_name": "kw", "weight": 2.0}],
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["results"][0]["score"] == pytest.approx(2.0)
