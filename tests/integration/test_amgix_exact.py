"""Three behaviours Amgix's own suite checks, as it checks them (issue 48): a join keyed on a
parent metadata key that is not indexed, with the answer excluding metadata; provided vectors as a
complete set; a keyword field of stop words only, encoded empty and sent back as given. Beside
them: a precomputed sparse vector over top_k, a join written child side first and a join of a
missing collection when nothing matches, each a 400."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.helpers import create, doc, search_ids

Body = dict[str, Any]


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def _sync(client: httpx.Client, name: str, body: Body) -> httpx.Response:
    return client.post(f"/v1/collections/{name}/documents/sync", json=body)


def _upsert(client: httpx.Client, name: str, route: str, body: Body) -> httpx.Response:
    base = f"/v1/collections/{name}/documents"
    if route == "sync":
        return client.post(f"{base}/sync", json=body)
    if route == "async":
        return client.post(base, json=body)
    return client.post(f"{base}/bulk", json={"documents": [body]})


# --- 1. a join on a parent key that is not indexed, with `exclude: ["metadata"]` ---------------


@pytest.fixture(scope="module")
def family(client: httpx.Client) -> Iterator[tuple[str, str]]:
    """P (a trigrams vector over name and content, no metadata_indexes) and C (indexes
    parent_ref), one document each, joined by P's metadata parent_key."""
    parents, children = _name("P"), _name("C")
    vectors = [{"name": "tri", "type": "trigrams", "index_fields": ["name", "content"]}]
    create(client, parents, {"vectors": vectors})
    create(
        client,
        children,
        {"vectors": vectors, "metadata_indexes": [{"key": "parent_ref", "type": "string"}]},
    )
    parent = doc("parent-1", "meta join parent", metadata={"parent_key": "meta-join-key-1"})
    child = doc("child-1", "meta join child", metadata={"parent_ref": "meta-join-key-1"})
    assert _sync(client, parents, parent).status_code == 200
    assert _sync(client, children, child).status_code == 200
    yield parents, children
    for name in (parents, children):
        client.delete(f"/v1/collections/{name}")


def test_a_join_on_a_parent_key_that_is_not_indexed_joins_and_exclude_nulls_both_sides(
    client: httpx.Client, family: tuple[str, str]
) -> None:
    parents, children = family
    body = {
        "query": "meta join parent",
        "join": f"{children}[$.meta.parent_key=$$.meta.parent_ref]",
        "exclude": ["metadata", "content"],
    }
    answer = client.post(f"/v1/collections/{parents}/search", json=body)
    assert answer.status_code == 200, answer.text
    (hit,) = answer.json()["results"]
    assert hit["id"] == "parent-1"
    assert "metadata" in hit and hit["metadata"] is None
    assert "content" in hit and hit["content"] is None
    assert list(hit["joined"]) == [children]
    (joined,) = hit["joined"][children]
    assert joined["id"] == "child-1"
    assert "metadata" in joined and joined["metadata"] is None
    assert "content" in joined and joined["content"] is None


def test_fetch_joins_on_a_parent_key_that_is_not_indexed(
    client: httpx.Client, family: tuple[str, str]
) -> None:
    parents, children = family
    join = f"{children}[$.meta.parent_key=$$.meta.parent_ref]"
    answer = client.post(f"/v1/collections/{parents}/documents/fetch", json={"join": join})
    assert answer.status_code == 200, answer.text
    (document,) = answer.json()["documents"]
    (joined,) = document["joined"][children]
    assert joined["id"] == "child-1" and joined["metadata"] == {"parent_ref": "meta-join-key-1"}


@pytest.mark.parametrize(
    ("join", "needle"),
    [
        ("{children}[$.meta.parent_key=$$.meta.not_indexed]", "metadata_indexes"),
        ("{children}[$$.meta.parent_ref=$.meta.parent_key]", "Invalid join expression"),
        ("nosuchchild", "'nosuchchild' not found"),
    ],
)
@pytest.mark.parametrize("query", ["meta join parent", "zzyzx"])  # a hit, and none
def test_a_join_is_checked_whether_or_not_the_search_finds_anything(
    client: httpx.Client, family: tuple[str, str], join: str, needle: str, query: str
) -> None:
    parents, children = family
    body = {"query": query, "join": join.format(children=children)}
    answer = client.post(f"/v1/collections/{parents}/search", json=body)
    assert answer.status_code == 400, answer.text
    assert needle in answer.json()["detail"]


def test_fetch_checks_a_join_of_a_missing_collection_on_an_empty_page(
    client: httpx.Client,
) -> None:
    empty = _name("empty")
    create(client, empty, {"vectors": [{"name": "kw", "type": "keyword"}]})
    try:
        body = {"join": "nosuchchild"}
        answer = client.post(f"/v1/collections/{empty}/documents/fetch", json=body)
        assert answer.status_code == 400, answer.text
        assert "'nosuchchild' not found" in answer.json()["detail"]
    finally:
        client.delete(f"/v1/collections/{empty}")


# --- 2. provided vectors are a complete set ------------------------------------------------------


@pytest.fixture(scope="module")
def given(client: httpx.Client) -> Iterator[str]:
    """A keyword vector over name and content (top_k 3) and a custom one: two computed slots."""
    name = _name("given")
    vectors = [
        {"name": "kw", "type": "keyword", "index_fields": ["name", "content"], "top_k": 3},
        {"name": "dc", "type": "dense_custom", "dimensions": 2, "index_fields": ["content"]},
    ]
    create(client, name, {"vectors": vectors})
    yield name
    client.delete(f"/v1/collections/{name}")


def _kw(field: str, indices: list[int]) -> Body:
    return {
        "vector_name": "kw",
        "field": field,
        "sparse_indices": indices,
        "sparse_values": [1.0] * len(indices),
    }


@pytest.mark.parametrize("route", ["sync", "async", "bulk"])
@pytest.mark.parametrize(
    ("vectors", "needles"),
    [
        ([], ["complete non-custom vector set", "kw (name)", "kw (content)"]),
        ([_kw("content", [1])], ["complete non-custom vector set", "missing: kw (name)"]),
        (
            [_kw("name", [1]), _kw("content", [2]), {**_kw("name", [3]), "vector_name": "x"}],
            ["unexpected vector", "no vector 'x'"],
        ),
        ([_kw("name", [1]), _kw("content", [1, 2, 3, 4])], ["max allowed", "top_k of 3"]),
    ],
)
def test_provided_vectors_that_are_not_a_complete_set_are_400_at_the_door(
    client: httpx.Client, given: str, route: str, vectors: list[Body], needles: list[str]
) -> None:
    answer = _upsert(client, given, route, doc("v", "x", name="A title", vectors=vectors))
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert all(needle in detail for needle in needles), detail
    assert client.get(f"/v1/collections/{given}/documents/v").status_code == 404


def test_a_complete_set_is_stored_as_given_and_custom_vectors_need_not_be_in_it(
    client: httpx.Client, given: str
) -> None:
    vectors = [_kw("name", [5]), _kw("content", [6, 7])]
    assert _sync(client, given, doc("full", "x", vectors=vectors)).status_code == 200
    stored = client.get(f"/v1/collections/{given}/documents/full?with_vectors=true").json()
    slots = {(v["vector_name"], v["field"]): v["sparse_indices"] for v in stored["vectors"]}
    assert slots == {("kw", "name"): [5], ("kw", "content"): [6, 7]}


def test_an_exported_document_with_a_blank_field_goes_back_as_it_came(
    client: httpx.Client, given: str
) -> None:
    """A blank field has no vector to export: its slot may be left out of the set."""
    assert _sync(client, given, doc("plain", "lighthouse keeper")).status_code == 200
    url = f"/v1/collections/{given}/documents/plain?with_vectors=true"
    exported = client.get(url).json()
    assert [(v["vector_name"], v["field"]) for v in exported["vectors"]] == [("kw", "content")]
    again = {**exported, "timestamp": doc("plain", "", 1)["timestamp"]}
    assert _sync(client, given, again).status_code == 200, "the export came back refused"
    assert client.get(url).json()["vectors"] == exported["vectors"]


# --- 3. a field of stop words only encodes to an empty keyword vector ----------------------------


def test_a_name_of_stop_words_only_has_an_empty_keyword_vector_that_goes_back_as_given(
    client: httpx.Client,
) -> None:
    name = _name("stops")
    create(
        client,
        name,
        {"vectors": [{"name": "keyword", "type": "keyword", "index_fields": ["name", "content"]}]},
    )
    try:
        first = {**doc("i-do", "wedding vows"), "name": "I Do"}
        assert _sync(client, name, first).status_code == 200
        url = f"/v1/collections/{name}/documents/i-do?with_vectors=true"
        vectors = client.get(url).json()["vectors"]
        by_field = {v["field"]: v for v in vectors}
        assert by_field["name"]["sparse_indices"] == [] and by_field["name"]["sparse_values"] == []
        assert by_field["content"]["sparse_indices"]  # the content's words are no stop words
        again = {**doc("i-do", "wedding vows", 1), "name": "I Do", "vectors": vectors}
        assert _sync(client, name, again).status_code == 200
        back = {v["field"]: v for v in client.get(url).json()["vectors"]}
        assert back["name"]["sparse_indices"] == [] and back["name"]["sparse_values"] == []
        assert back["content"]["sparse_indices"] == by_field["content"]["sparse_indices"]
        assert search_ids(client, name, "wedding") == ["i-do"]
    finally:
        client.delete(f"/v1/collections/{name}")
