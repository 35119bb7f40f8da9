"""Search defaults that rank (docs/relevance.md): with no vector_options, a vector over several
fields is one retriever summing its fields' raw scores with field weights, normalised by linear
(min-max) fusion; an option naming a vector without a field is the same one retriever, and so
are options listing its fields one by one when no fusion_mode is set (an explicit one keeps
Amgix's arm per option); with no fusion_mode, each retriever scores the whole candidate pool
before min-max; a part code in a title is found by its compact, partial and spaced forms."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.integration.helpers import create, doc, doc_count, queue_total, wait_until


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


def test_default_fusion_scores_every_candidate_in_every_retriever(client: httpx.Client) -> None:
    # Two retrievers: "body" over content, "title" over name. 120 short documents say "apple"
    # in their body, so the target, whose long body says it once, is outside body's 100-candidate
    # window; its name and five others' say "banana", so title brings it into the pool.
    name = f"pool{uuid.uuid4().hex[:8]}"
    vectors = [
        {"name": "body", "type": "full_text", "index_fields": ["content"]},
        {"name": "title", "type": "full_text", "index_fields": ["name"]},
    ]
    create(client, name, {"vectors": vectors})
    filler = " ".join(f"word{i}" for i in range(40))
    documents = [doc(f"fill-{i:03d}", "apple apple apple", name="fill") for i in range(120)]
    documents += [doc(f"b-{i}", "cherry", name="banana") for i in range(5)]
    documents.append(doc("zz-target", f"apple {filler}", name="banana"))
    for start in range(0, len(documents), 100):
        bulk = {"documents": documents[start : start + 100]}
        response = client.post(f"/v1/collections/{name}/documents/bulk", json=bulk)
        assert response.status_code == 200, response.text
    wait_until(lambda: doc_count(client, name) == len(documents) and queue_total(client, name) == 0)
    body = {
        "query": "apple banana",
        "raw_scores": True,
        "limit": 20,
        "vector_options": [
            {"vector_name": "body", "weight": 1.0},
            {"vector_name": "title", "weight": 3.0},
        ],
    }

    def ranked(**options: str) -> list[dict[str, Any]]:
        response = client.post(f"/v1/collections/{name}/search", json={**body, **options})
        assert response.status_code == 200, response.text
        results: list[dict[str, Any]] = response.json()["results"]
        return results

    # The default: body scores the target too (above 0, the score of the "cherry" documents it
    # does not match), so it leads the title ties.
    results = ranked()
    target = results[0]
    assert target["id"] == "zz-target", [hit["id"] for hit in results]
    scores = {s["vector"]: s["score"] for s in target["vector_scores"]}
    assert scores.keys() == {"body", "title"} and scores["body"] > 0
    assert target["score"] > 3.0

    # Amgix's linear: body's own list misses the target, which ties the "banana" documents on
    # title alone and comes after them by id.
    results = ranked(fusion_mode="linear")
    ids = [hit["id"] for hit in results]
    assert ids.index("zz-target") > max(ids.index(f"b-{i}") for i in range(5)), ids
    target = results[ids.index("zz-target")]
    assert [s["vector"] for s in target["vector_scores"]] == ["title"]
    assert target["score"] == pytest.approx(3.0)


def _recipes(client: httpx.Client, documents: list[dict[str, Any]]) -> str:
    """The README's default collection (keyword on name and content, dense on content)."""
    name = f"readme{uuid.uuid4().hex[:8]}"
    create(
        client,
        name,
        {
            "vectors": [
                {"name": "keyword", "type": "keyword", "index_fields": ["name", "content"]},
                {
                    "name": "dense",
                    "type": "dense_model",
                    "model": "sentence-transformers/all-MiniLM-L6-v2",
                    "index_fields": ["content"],
                },
            ]
        },
    )
    response = client.post(f"/v1/collections/{name}/documents/bulk", json={"documents": documents})
    assert response.status_code == 200, response.text
    wait_until(lambda: doc_count(client, name) == len(documents) and queue_total(client, name) == 0)
    return name


def _search(client: httpx.Client, name: str, **body: Any) -> list[dict[str, Any]]:
    response = client.post(f"/v1/collections/{name}/search", json=body)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def test_fields_listed_as_amgix_clients_send_them_rank_as_the_vector_asked_whole(
    client: httpx.Client,
) -> None:
    # amgix-client names a field in every option: keyword over name and content arrives as two
    # options of one vector. Without a fusion_mode they are that vector's one retriever (the
    # same ranking and scores as the vector asked whole); an explicit rrf keeps Amgix's one arm
    # per option, where the title arm's best outvotes a document that both fields match.
    name = _recipes(
        client,
        [
            doc("title", "a note on something else entirely", name="Lemon tart"),
            doc("body", "lemon tart baked with cream and lemon zest", name="Dessert"),
            doc("both", "a tart of lemon curd", name="Lemon tart"),
            doc("once", "one lemon, a bowl of other things", name="Kitchen"),
        ],
    )
    listed = [
        {"vector_name": "keyword", "field": "name"},
        {"vector_name": "keyword", "field": "content"},
        {"vector_name": "dense", "field": "content"},
    ]
    whole = _search(client, name, query="lemon tart", limit=4)
    amgix = _search(client, name, query="lemon tart", limit=4, vector_options=listed)
    assert [hit["id"] for hit in amgix] == [hit["id"] for hit in whole]
    assert [hit["score"] for hit in amgix] == pytest.approx([hit["score"] for hit in whole])
    rrf = _search(
        client,
        name,
        query="lemon tart",
        limit=4,
        vector_options=listed,
        fusion_mode="rrf",
        raw_scores=True,
    )
    arms = {(s["vector"], s["field"]) for hit in rrf for s in hit["vector_scores"]}
    assert {("keyword", "name"), ("keyword", "content")} <= arms
    for hit in rrf:  # Amgix's formula: one term per (vector, field) arm
        expected = sum(1.0 / (2 + s["rank"]) for s in hit["vector_scores"])
        assert hit["score"] == pytest.approx(expected)


@pytest.mark.parametrize("query", ["12lpy03", "12LP-Y03", "12lp y03", "lpy03/5"])
def test_a_part_code_in_a_title_is_found_by_its_compact_partial_and_spaced_forms(
    client: httpx.Client, query: str
) -> None:
    name = _recipes(
        client,
        [
            doc(
                "bearing",
                "Replacement part, sealed deep-groove ball bearing for conveyor rollers.",
                name="Bearing 12LP'-y03/5-XL",
            ),
            doc("roller", "Conveyor roller with sealed bearings, 50 mm.", name="Roller 40KR-17"),
            doc("belt", "Replacement belt for conveyor 12 LP drives.", name="Belt LP-1203"),
            doc("seal", "Shaft seal, part y03 of the 12 series.", name="Seal 5XL"),
        ],
    )
    assert _search(client, name, query=query, limit=3)[0]["id"] == "bearing"
