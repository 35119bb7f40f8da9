"""Search contract (API.md §5): filters, tags, fusion scores, exclude, joins, groups, facets."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import amgix_client
import httpx
import pytest
from amgix_client.models import Join1, MetadataFilter1, SearchQuery

from tests.integration.helpers import create, doc

INDEXES = [
    {"key": "year", "type": "integer"},
    {"key": "active", "type": "boolean"},
    {"key": "genre", "type": "string"},
    {"key": "price", "type": "float"},
    {"key": "published", "type": "datetime"},
]
# Every book mentions "garden", so a query for it reaches all of them.
BOOKS = [
    ("b1", 2020, True, "poetry", 9.5, "2020-03-01T00:00:00Z", ["red"]),
    ("b2", 2021, False, "poetry", 12.0, "2021-06-01T00:00:00Z", ["red", "blue"]),
    ("b3", 2022, True, "novel", 20.0, "2022-01-15T00:00:00Z", ["blue"]),
    ("b4", 2023, False, "novel", 7.25, "2023-09-09T00:00:00Z", []),
    ("b5", 2024, True, "novel", 15.0, "2024-02-29T00:00:00Z", ["red", "green"]),
    ("b6", 2024, True, "essay", 30.0, "2024-12-31T00:00:00Z", ["green"]),
]


def _book(row: tuple[Any, ...]) -> dict[str, Any]:
    doc_id, year, active, genre, price, published, tags = row
    metadata = {
        "year": year,
        "active": active,
        "genre": genre,
        "price": price,
        "published": {"value": published, "type": "datetime"},
    }
    return doc(doc_id, f"A {genre} about the garden, book {doc_id}", tags=tags, metadata=metadata)


@pytest.fixture(scope="module")
def books(client: httpx.Client) -> str:
    name = f"books{uuid.uuid4().hex[:8]}"
    create(
        client,
        name,
        {
            "vectors": [{"name": "kw", "type": "keyword", "index_fields": ["name", "content"]}],
            "metadata_indexes": INDEXES,
        },
    )
    for row in BOOKS:
        response = client.post(f"/v1/collections/{name}/documents/sync", json=_book(row))
        assert response.status_code == 200, response.text
    return name


def _search(client: httpx.Client, name: str, **body: Any) -> httpx.Response:
    return client.post(f"/v1/collections/{name}/search", json={"query": "garden", **body})


def _ids(client: httpx.Client, name: str, **body: Any) -> set[str]:
    response = _search(client, name, limit=100, **body)
    assert response.status_code == 200, response.text
    return {hit["id"] for hit in response.json()["results"]}


@pytest.mark.parametrize(
    ("metadata_filter", "expected"),
    [
        ("year > 2021 AND active = true", {"b3", "b5", "b6"}),
        ("year >= 2024 or genre = 'poetry'", {"b1", "b2", "b5", "b6"}),
        ('NOT (genre = "novel") AND active = TRUE', {"b1", "b6"}),
        ("price < 10", {"b1", "b4"}),
        ("price <= 12.0 AND year != 2020", {"b2", "b4"}),
        ("published > '2023-01-01T00:00:00Z'", {"b4", "b5", "b6"}),
        ("genre IS NULL", set()),
        ("genre IS NOT NULL", {"b1", "b2", "b3", "b4", "b5", "b6"}),
        (
            {
                "and": [
                    {"key": "year", "op": "gt", "value": 2021},
                    {"key": "active", "op": "eq", "value": True},
                ]
            },
            {"b3", "b5", "b6"},
        ),
        (
            {
                "or": [
                    {"key": "genre", "op": "eq", "value": "essay"},
                    {"not": {"key": "year", "op": "lte", "value": 2022}},
                ]
            },
            {"b4", "b5", "b6"},
        ),
        ({"key": "genre", "op": "neq", "value": "novel"}, {"b1", "b2", "b6"}),
    ],
)
def test_metadata_filter_returns_exactly_the_matching_documents(
    client: httpx.Client, books: str, metadata_filter: Any, expected: set[str]
) -> None:
    assert _ids(client, books, metadata_filter=metadata_filter) == expected


@pytest.mark.parametrize(
    ("metadata_filter", "status", "needle"),
    [
        ("pages > 3", 400, "pages"),
        ("genre < 'x'", 400, "genre"),
        ("year = 'two thousand'", 400, "year"),
        ("year > ", 422, "metadata_filter"),
        ("year > 2021 AND AND active = true", 422, "metadata_filter"),
        ({"key": "year", "op": "gt", "value": 1, "and": []}, 422, "metadata_filter"),
        ({"key": "year", "op": "between", "value": 1}, 422, "metadata_filter"),
    ],
)
def test_bad_metadata_filter_is_rejected_naming_the_problem(
    client: httpx.Client, books: str, metadata_filter: Any, status: int, needle: str
) -> None:
    response = _search(client, books, metadata_filter=metadata_filter)
    assert response.status_code == status, response.text
    assert needle in response.text


def test_document_tags_match_any_or_all(client: httpx.Client, books: str) -> None:
    assert _ids(client, books, document_tags=["red", "green"]) == {"b1", "b2", "b5", "b6"}
    assert _ids(client, books, document_tags=["red", "green"], document_tags_match_all=True) == {
        "b5"
    }
    assert _ids(client, books, document_tags=["blue"], metadata_filter="year > 2021") == {"b3"}


def test_rrf_scores_follow_the_documented_formula(client: httpx.Client, books: str) -> None:
    body = {
        "raw_scores": True,
        "fusion_mode": "rrf",
        "vector_options": [
            {"vector_name": "kw", "field": "content", "weight": 1.0},
            {"vector_name": "kw", "field": "name", "weight": 0.5},
        ],
    }
    response = client.post(
        f"/v1/collections/{books}/search", json={"query": "novel garden", **body}
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert results
    weights = {"content": 1.0, "name": 0.5}
    for hit in results:
        expected = sum(weights[s["field"]] / (2 + s["rank"]) for s in hit["vector_scores"])
        assert hit["score"] == pytest.approx(expected)
    scores = [hit["score"] for hit in results]
    assert scores == sorted(scores, reverse=True)
    novels = {"b3", "b4", "b5"}
    assert {hit["id"] for hit in results[:3]} == novels  # they share both query words


def test_linear_fusion_min_max_normalises_each_arm(client: httpx.Client) -> None:
    name = f"lin{uuid.uuid4().hex[:8]}"
    create(
        client,
        name,
        {
            "vectors": [
                {"name": "kw", "type": "keyword", "index_fields": ["content"]},
                {"name": "tri", "type": "trigrams", "index_fields": ["content"]},
            ]
        },
    )
    texts = {
        "a": "lemon lemon lemon tart",
        "b": "lemon tart with cream and a long list of other words",
        "c": "lemonade stand",
    }
    for i, (doc_id, text) in enumerate(texts.items()):
        response = client.post(f"/v1/collections/{name}/documents/sync", json=doc(doc_id, text, i))
        assert response.status_code == 200, response.text
    response = client.post(
        f"/v1/collections/{name}/search",
        json={
            "query": "lemon tart",
            "fusion_mode": "linear",
            "raw_scores": True,
            "vector_options": [
                {"vector_name": "kw", "weight": 2.0},
                {"vector_name": "tri", "weight": 1.0},
            ],
        },
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    per_arm: dict[str, dict[str, float]] = {}
    for hit in results:
        for score in hit["vector_scores"]:
            per_arm.setdefault(score["vector"], {})[hit["id"]] = score["score"]
    weights = {"kw": 2.0, "tri": 1.0}
    for hit in results:
        expected = 0.0
        for arm, raw in per_arm.items():
            if hit["id"] not in raw:
                continue
            low, high = min(raw.values()), max(raw.values())
            expected += weights[arm] * (
                1.0 if high == low else (raw[hit["id"]] - low) / (high - low)
            )
        assert hit["score"] == pytest.approx(expected)
    assert results[0]["id"] == "a"
    assert results[0]["score"] == pytest.approx(3.0)  # best in both arms: 2 × 1 + 1 × 1


def test_score_threshold_drops_lower_fused_scores(client: httpx.Client, books: str) -> None:
    response = _search(client, books, limit=100)
    scores = sorted(hit["score"] for hit in response.json()["results"])
    cut = scores[len(scores) // 2]
    kept = _search(client, books, limit=100, score_threshold=cut).json()["results"]
    assert kept and all(hit["score"] >= cut for hit in kept)
    assert len(kept) == sum(1 for s in scores if s >= cut)


def test_exclude_nulls_the_named_fields(client: httpx.Client, books: str) -> None:
    response = _search(client, books, exclude=["content", "metadata", "tags"])
    assert response.status_code == 200, response.text
    for hit in response.json()["results"]:
        assert hit["content"] is None and hit["metadata"] is None and hit["tags"] is None
        assert hit["id"] and hit["timestamp"]
    assert _search(client, books, exclude=["score"]).status_code == 422


def test_group_field_caps_hits_per_value(client: httpx.Client, books: str) -> None:
    response = _search(client, books, group_field="genre", group_max=1, limit=10)
    assert response.status_code == 200, response.text
    genres = Counter(hit["metadata"]["genre"] for hit in response.json()["results"])
    assert genres == Counter({"poetry": 1, "novel": 1, "essay": 1})
    two = _search(client, books, group_field="genre", group_max=2, limit=10).json()["results"]
    assert Counter(hit["metadata"]["genre"] for hit in two) == Counter(
        {"poetry": 2, "novel": 2, "essay": 1}
    )
    assert _search(client, books, group_field="nope").status_code == 400


def test_group_refetches_to_fill_the_limit(client: httpx.Client) -> None:
    name = f"grp{uuid.uuid4().hex[:8]}"
    create(
        client,
        name,
        {
            "vectors": [{"name": "kw", "type": "keyword", "index_fields": ["content"]}],
            "metadata_indexes": [{"key": "shop", "type": "string"}],
        },
    )
    # Ten near-identical "soup" docs from one shop rank first; other shops rank lower.
    docs = [doc(f"a{i}", "soup soup soup", i, metadata={"shop": "big"}) for i in range(10)]
    docs += [doc(f"z{i}", "soup and bread", i, metadata={"shop": f"s{i}"}) for i in range(4)]
    for body in docs:
        assert client.post(f"/v1/collections/{name}/documents/sync", json=body).status_code == 200
    grouped = {"query": "soup", "group_field": "shop", "group_max": 1, "limit": 4}
    one_fetch = _search(client, name, **grouped, group_max_fetches=1).json()["results"]
    refetched = _search(client, name, **grouped, group_max_fetches=3).json()["results"]
    assert 1 <= len(one_fetch) < 4  # the first window (6 per arm) is mostly the big shop
    assert len(refetched) == 4
    assert len({hit["metadata"]["shop"] for hit in refetched}) == 4


def test_facets_count_the_candidate_pool(client: httpx.Client, books: str) -> None:
    response = _search(client, books, facets=True)
    assert response.status_code == 200, response.text
    facets = response.json()["facet_counts"]
    assert facets["genre"] == {"novel": 3, "poetry": 2, "essay": 1}
    assert facets["year"] == {"2024": 2, "2020": 1, "2021": 1, "2022": 1, "2023": 1}
    assert facets["active"] == {"true": 4, "false": 2}
    filtered = _search(client, books, facets=True, metadata_filter="active = true").json()
    assert filtered["facet_counts"]["genre"] == {"novel": 2, "poetry": 1, "essay": 1}
    top = _search(client, books, facets=True, facet_options={"max_values": 1}).json()
    assert top["facet_counts"]["genre"] == {"novel": 3}
    assert _search(client, books).json()["facet_counts"] is None


def test_facets_without_indexes_are_empty(client: httpx.Client) -> None:
    name = f"nofacet{uuid.uuid4().hex[:8]}"
    create(client, name, {"vectors": [{"name": "kw", "type": "keyword"}]})
    client.post(f"/v1/collections/{name}/documents/sync", json=doc("x", "garden"))
    assert _search(client, name, facets=True).json()["facet_counts"] == {}


@pytest.fixture(scope="module")
def family(client: httpx.Client) -> tuple[str, str]:
    parents, children = f"par{uuid.uuid4().hex[:6]}", f"kid{uuid.uuid4().hex[:6]}"
    create(
        client,
        parents,
        {
            "vectors": [{"name": "kw", "type": "keyword"}],
            "metadata_indexes": [{"key": "family", "type": "string"}],
        },
    )
    create(
        client,
        children,
        {
            "vectors": [{"name": "kw", "type": "keyword"}],
            "metadata_indexes": [
                {"key": "parent_ref", "type": "string"},
                {"key": "age", "type": "integer"},
            ],
        },
    )
    for body in (
        doc("p1", "oak tree", metadata={"family": "f1"}),
        doc("p2", "oak bench", metadata={"family": "f2"}),
        doc("p3", "oak floor"),
    ):
        assert (
            client.post(f"/v1/collections/{parents}/documents/sync", json=body).status_code == 200
        )
    for body in (
        doc("c1", "acorn", metadata={"parent_ref": "p1", "age": 1}),
        doc("c2", "leaf", metadata={"parent_ref": "p1", "age": 5}),
        doc("c3", "nail", metadata={"parent_ref": "p2", "age": 3}),
        doc("p2", "same id as a parent", metadata={"age": 9}),
    ):
        assert (
            client.post(f"/v1/collections/{children}/documents/sync", json=body).status_code == 200
        )
    return parents, children


def _joined(client: httpx.Client, parents: str, join: Any, **body: Any) -> dict[str, Any]:
    response = client.post(
        f"/v1/collections/{parents}/search", json={"query": "oak", "join": join, **body}
    )
    assert response.status_code == 200, response.text
    return {hit["id"]: hit for hit in response.json()["results"]}


def test_join_attaches_the_right_children(client: httpx.Client, family: tuple[str, str]) -> None:
    parents, children = family
    hits = _joined(client, parents, f"{children}[$id=$$.meta.parent_ref]")
    kids = {pid: sorted(c["id"] for c in hit["joined"][children]) for pid, hit in hits.items()}
    assert kids == {"p1": ["c1", "c2"], "p2": ["c3"], "p3": []}


def test_join_defaults_to_ids_and_takes_a_child_filter(
    client: httpx.Client, family: tuple[str, str]
) -> None:
    parents, children = family
    by_id = _joined(client, parents, children)
    assert [c["id"] for c in by_id["p2"]["joined"][children]] == ["p2"]
    assert by_id["p1"]["joined"][children] == []
    filtered = _joined(client, parents, [f"{children}[$id=$$.meta.parent_ref](age > 2)"])
    assert [c["id"] for c in filtered["p1"]["joined"][children]] == ["c2"]
    excluded = _joined(client, parents, f"{children}[$id=$$.meta.parent_ref]", exclude=["content"])
    assert all(c["content"] is None for c in excluded["p1"]["joined"][children])


@pytest.mark.parametrize(
    ("join", "needle"),
    [
        ("nosuchchild", "not found"),
        ("{children}[$id=$$.meta.parent_ref", "Invalid join expression"),
        ("{children}[$id=$$.meta.age==]", "Invalid join expression"),
        ("{children}[id=parent_ref]", "Invalid join expression"),
        ("{children}(age >)", "Invalid join expression"),
    ],
)
def test_bad_join_is_400(
    client: httpx.Client, family: tuple[str, str], join: str, needle: str
) -> None:
    parents, children = family
    response = client.post(
        f"/v1/collections/{parents}/search",
        json={"query": "oak", "join": join.format(children=children)},
    )
    assert response.status_code == 400, response.text
    assert needle in response.json()["detail"]


def test_search_without_join_leaves_joined_out(client: httpx.Client, books: str) -> None:
    for hit in _search(client, books).json()["results"]:
        assert "joined" not in hit


def test_filters_joins_and_facets_through_amgix_client(
    stack: Any, books: str, family: tuple[str, str]
) -> None:
    parents, children = family

    async def drive() -> None:
        configuration = amgix_client.Configuration(host=stack.base_url)
        async with amgix_client.ApiClient(configuration) as api_client:
            api = amgix_client.AmgixApi(api_client)
            found = await api.search(
                books,
                SearchQuery(
                    query="garden",
                    metadata_filter=MetadataFilter1("year > 2021 AND active = true"),
                    facets=True,
                    limit=100,
                ),
            )
            assert {r.id for r in found.results} == {"b3", "b5", "b6"}
            assert found.facet_counts is not None and found.facet_counts["genre"]["novel"] == 2
            joined = await api.search(
                parents,
                SearchQuery(query="oak", join=Join1(f"{children}[$id=$$.meta.parent_ref]")),
            )
            kids = {r.id: sorted(c.id for c in (r.joined or {})[children]) for r in joined.results}
            assert kids["p1"] == ["c1", "c2"]

    asyncio.run(drive())
