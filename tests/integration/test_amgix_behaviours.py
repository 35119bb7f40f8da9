"""Behaviours an Amgix user relies on, each as Amgix v1 does it (issues 13 and 31): object
metadata, datetimes back as given, exclude with join, a capped null group, vector name rules,
model errors, empty vectors (a custom one refused at the door, a precomputed sparse one stored
empty), sparse vectors over top_k, offline docs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.helpers import create, doc, get_doc, search_ids, wait_until

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def meta(client: httpx.Client) -> Iterator[str]:
    name = _name("meta")
    create(
        client,
        name,
        {
            "vectors": [{"name": "kw", "type": "keyword", "index_fields": ["name", "content"]}],
            "metadata_indexes": [
                {"key": "when", "type": "datetime"},
                {"key": "color", "type": "string"},
                {"key": "parent", "type": "string"},
            ],
        },
    )
    yield name
    client.delete(f"/v1/collections/{name}")


def _sync(client: httpx.Client, name: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"/v1/collections/{name}/documents/sync", json=body)


def _upsert(client: httpx.Client, name: str, route: str, body: dict[str, Any]) -> httpx.Response:
    """One document through the sync, async or bulk door."""
    base = f"/v1/collections/{name}/documents"
    if route == "sync":
        return client.post(f"{base}/sync", json=body)
    if route == "async":
        return client.post(base, json=body)
    return client.post(f"{base}/bulk", json={"documents": [body]})


OBJECTS: dict[str, Any] = {
    "wrapped": {"value": {"size": 3, "tags": ["a"]}, "type": "object"},
    "plain": {"k": [1, 2], "nested": {"x": None}},
    "rows": [{"x": 1}, {"x": 2}],
}


@pytest.mark.parametrize("route", ["sync", "async", "bulk"])
def test_object_metadata_is_accepted_and_comes_back_unchanged(
    client: httpx.Client, meta: str, route: str
) -> None:
    answer = _upsert(client, meta, route, doc(f"obj-{route}", "lantern harbor", metadata=OBJECTS))
    assert answer.status_code == 200, answer.text
    stored = wait_until(lambda: get_doc(client, meta, f"obj-{route}"), timeout=60)
    expected = {**OBJECTS, "wrapped": OBJECTS["wrapped"]["value"]}
    assert stored["metadata"] == expected
    hits = client.post(f"/v1/collections/{meta}/search", json={"query": "lantern"}).json()
    assert any(h["metadata"] == expected for h in hits["results"] if h["id"] == f"obj-{route}")


def test_an_object_wrapper_holding_no_object_is_422(client: httpx.Client, meta: str) -> None:
    answer = _sync(
        client, meta, doc("bad-obj", "x", metadata={"o": {"value": 3, "type": "object"}})
    )
    assert answer.status_code == 422 and "object" in answer.text


def test_a_datetime_comes_back_as_it_was_given_and_filters_as_a_datetime(
    client: httpx.Client, meta: str
) -> None:
    for doc_id, when in (("early", "2023-01-15T10:30:00Z"), ("late", "2024-06-01T08:00:00Z")):
        metadata = {"when": {"value": when, "type": "datetime"}}
        assert (
            _sync(client, meta, doc(doc_id, "calendar entry", metadata=metadata)).status_code == 200
        )
    stored = get_doc(client, meta, "early")
    assert stored is not None and stored["metadata"]["when"] == "2023-01-15T10:30:00Z"
    hits = search_ids(
        client, meta, "calendar", metadata_filter='when > "2023-06-01T00:00:00+00:00"'
    )
    assert hits == ["late"]


def test_excluded_fields_leave_joined_children_and_a_meta_join_still_works(
    client: httpx.Client, meta: str
) -> None:
    children = _name("kids")
    create(
        client,
        children,
        {
            "vectors": [{"name": "kw", "type": "keyword"}],
            "metadata_indexes": [{"key": "parent", "type": "string"}],
        },
    )
    try:
        parent = doc("mom", "orchard keeper", metadata={"parent": "fam1"})
        assert _sync(client, meta, parent).status_code == 200
        child = doc("kid", "apple picker", metadata={"parent": "fam1"})
        assert _sync(client, children, child).status_code == 200
        body = {
            "query": "orchard",
            "join": f"{children}[$.meta.parent=$$.meta.parent]",
            "exclude": ["metadata", "content"],
        }
        answer = client.post(f"/v1/collections/{meta}/search", json=body)
        assert answer.status_code == 200, answer.text
        (hit,) = [h for h in answer.json()["results"] if h["id"] == "mom"]
        assert hit["metadata"] is None and hit["content"] is None
        (joined,) = hit["joined"][children]
        assert joined["id"] == "kid"
        assert joined["metadata"] is None and joined["content"] is None
    finally:
        client.delete(f"/v1/collections/{children}")


def test_documents_without_a_group_value_form_one_capped_group(
    client: httpx.Client, meta: str
) -> None:
    for i in range(4):
        assert _sync(client, meta, doc(f"plain{i}", "meadow walk")).status_code == 200
    assert (
        _sync(client, meta, doc("red1", "meadow walk", metadata={"color": "red"})).status_code
        == 200
    )
    hits = search_ids(client, meta, "meadow", group_field="color", group_max=2, limit=10)
    assert len([h for h in hits if h.startswith("plain")]) == 2
    assert "red1" in hits


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/collections/{new}", {"vectors": [{"name": "bad name", "type": "keyword"}]}),
        ("/v1/collections/{new}", {"vectors": [{"name": "dollar$", "type": "keyword"}]}),
        (
            "/v1/collections/{meta}/search",
            {"query": "x", "vector_options": [{"vector_name": "a b"}]},
        ),
    ],
)
def test_a_vector_name_outside_the_rule_is_422_naming_the_allowed_characters(
    client: httpx.Client, meta: str, path: str, body: dict[str, Any]
) -> None:
    answer = client.post(path.format(new=_name("names"), meta=meta), json=body)
    assert answer.status_code == 422, answer.text
    assert "letters, numbers, underscores, and hyphens" in answer.text


def test_dimensions_that_do_not_match_the_model_say_model_validation_failed(
    client: httpx.Client,
) -> None:
    vector = {"name": "d", "type": "dense_model", "model": MINILM, "dimensions": 100}
    answer = client.post(f"/v1/collections/{_name('dims')}", json={"vectors": [vector]})
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"].startswith("Model validation failed:")


@pytest.mark.parametrize("dimensions", [0, -5])
def test_dimensions_below_one_are_422_naming_dimensions(
    client: httpx.Client, dimensions: int
) -> None:
    vector = {"name": "d", "type": "dense_custom", "dimensions": dimensions}
    answer = client.post(f"/v1/collections/{_name('dims')}", json={"vectors": [vector]})
    assert answer.status_code == 422, answer.text
    assert "dimensions must be" in answer.text


@pytest.fixture(scope="module")
def custom(client: httpx.Client) -> Iterator[str]:
    name = _name("custom")
    vectors = [
        {"name": "dc", "type": "dense_custom", "dimensions": 3, "index_fields": ["content"]},
        {"name": "sp", "type": "sparse_custom", "top_k": 3, "index_fields": ["content"]},
        {"name": "kw", "type": "keyword", "index_fields": ["content"]},
    ]
    create(client, name, {"vectors": vectors})
    yield name
    client.delete(f"/v1/collections/{name}")


@pytest.mark.parametrize("route", ["sync", "async", "bulk"])
@pytest.mark.parametrize("vector", ["dc", "sp"])
def test_an_empty_custom_vector_is_400_at_the_door_saying_what_to_fix(
    client: httpx.Client, custom: str, vector: str, route: str
) -> None:
    empty = [{"vector_name": vector, "field": "content", "vector": []}]
    answer = _upsert(client, custom, route, doc("e", "x", custom_vectors=empty))
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert f"custom vector '{vector}' (content) is empty" in detail
    assert "give at least one entry, or leave the vector out" in detail


def test_an_empty_precomputed_dense_vector_is_400_at_the_door(
    client: httpx.Client, custom: str
) -> None:
    empty = [{"vector_name": "dc", "field": "content", "dense_vector": []}]
    answer = client.post(f"/v1/collections/{custom}/documents", json=doc("e", "x", vectors=empty))
    assert answer.status_code == 400, answer.text
    assert "has 0 numbers but vector 'dc' has 3 dimensions" in answer.json()["detail"]


def test_an_empty_precomputed_sparse_vector_is_stored_and_returned_empty(
    client: httpx.Client, custom: str
) -> None:
    empty = {"vector_name": "kw", "field": "content", "sparse_indices": [], "sparse_values": []}
    for seconds in (0, 1):  # sent again unchanged, it stays as given
        body = doc("pe", "lighthouse keeper", seconds, vectors=[empty])
        assert _sync(client, custom, body).status_code == 200
        stored = client.get(f"/v1/collections/{custom}/documents/pe?with_vectors=true").json()
        (kw,) = [v for v in stored["vectors"] if v["vector_name"] == "kw"]
        assert (kw["field"], kw["sparse_indices"], kw["sparse_values"]) == ("content", [], [])
    assert _sync(client, custom, doc("pt", "lighthouse keeper")).status_code == 200
    arm = [{"vector_name": "kw", "field": "content"}]
    assert search_ids(client, custom, "lighthouse", vector_options=arm) == ["pt"]


def test_a_sparse_vector_over_top_k_fails_its_write_naming_the_max_allowed_top_k(
    client: httpx.Client, custom: str
) -> None:
    pairs = [[1, 0.5], [2, 0.5], [3, 0.5], [4, 0.5]]
    body = doc(
        "t", "x", custom_vectors=[{"vector_name": "sp", "field": "content", "vector": pairs}]
    )
    assert client.post(f"/v1/collections/{custom}/documents", json=body).status_code == 200

    def failed() -> dict[str, Any] | None:
        statuses = client.get(f"/v1/collections/{custom}/documents/t/status").json()["statuses"]
        return next((s for s in statuses if s["status"] == "failed"), None)

    entry = wait_until(failed, timeout=120, interval=0.5)
    assert "max allowed" in entry["info"] and "top_k" in entry["info"]
    assert get_doc(client, custom, "t") is None  # nothing was silently cut and stored


def test_api_docs_render_with_no_internet_and_root_opens_the_dashboard(
    client: httpx.Client,
) -> None:
    for page, script in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        html = client.get(page)
        assert html.status_code == 200
        assert "http://" not in html.text and "https://" not in html.text
        src = next(part.split('"')[0] for part in html.text.split('src="')[1:] if script in part)
        asset = client.get(src)
        assert asset.status_code == 200 and len(asset.content) > 100_000
    root = client.get("/", follow_redirects=False)
    assert root.status_code in (302, 307) and root.headers["location"] == "/dashboard/"
