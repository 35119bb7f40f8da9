"""Fetch (cursor pages, metadata and tag filters, vectors) and export (a gzip stream), for real."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import amgix_client
import httpx
import pytest
from amgix_client.models import DocumentFetchRequest
from amgix_client.models.metadata_filter import MetadataFilter

from tests.integration.helpers import create, doc, doc_count, keyword_collection, wait_until

INDEXES = [
    {"key": "year", "type": "integer"},
    {"key": "active", "type": "boolean"},
    {"key": "score", "type": "float"},
    {"key": "label", "type": "string"},
    {"key": "when", "type": "datetime"},
]


def when(iso: str) -> dict[str, str]:
    return {"value": iso, "type": "datetime"}


# id: (tags, metadata)
CORPUS: dict[str, tuple[list[str], dict[str, Any] | None]] = {
    "a": (
        ["red", "big"],
        {
            "year": 2020,
            "active": True,
            "score": 1.5,
            "label": "alpha",
            "when": when("2024-01-01T00:00:00Z"),
        },
    ),
    "b": (
        ["red"],
        {
            "year": 2022,
            "active": True,
            "score": 2.0,
            "label": "beta",
            "when": when("2024-06-01T00:00:00Z"),
        },
    ),
    "c": (
        ["blue", "big"],
        {
            "year": 2023,
            "active": False,
            "score": 3.5,
            "label": "gamma",
            "when": when("2025-01-01T00:00:00Z"),
        },
    ),
    "d": (["blue"], {"year": 2024, "active": True, "label": None}),
    "e": ([], None),
}


def bulk(client: httpx.Client, name: str, documents: list[dict[str, Any]]) -> None:
    for start in range(0, len(documents), 100):
        body = {"documents": documents[start : start + 100]}
        response = client.post(f"/v1/collections/{name}/documents/bulk", json=body)
        assert response.status_code == 200, response.text
    wait_until(lambda: doc_count(client, name) == len(documents))


@pytest.fixture(scope="module")
def corpus(client: httpx.Client) -> str:
    name = f"fx{uuid.uuid4().hex[:10]}"
    create(client, name, {**keyword_collection(), "metadata_indexes": INDEXES})
    documents = [
        doc(d, f"document {d}", tags=tags, metadata=metadata)
        for d, (tags, metadata) in CORPUS.items()
    ]
    documents.append(doc("export", "the document called export", name="Exported"))
    bulk(client, name, documents)
    return name


def fetch(client: httpx.Client, name: str, **body: Any) -> httpx.Response:
    return client.post(f"/v1/collections/{name}/documents/fetch", json=body)


def fetched_ids(client: httpx.Client, name: str, **body: Any) -> set[str]:
    response = fetch(client, name, **body)
    assert response.status_code == 200, response.text
    return {d["id"] for d in response.json()["documents"]}


# --- paging ---


def test_fetch_pages_see_each_document_once_and_the_last_after_is_null(
    client: httpx.Client,
) -> None:
    name = f"fp{uuid.uuid4().hex[:10]}"
    create(client, name, keyword_collection())
    bulk(client, name, [doc(f"d{i:03}", f"text {i}") for i in range(260)])
    seen: list[str] = []
    after = None
    for _ in range(10):
        response = fetch(client, name, page_size=100, after=after)
        assert response.status_code == 200, response.text
        page = response.json()
        assert set(page) == {"documents", "after"}
        seen.extend(d["id"] for d in page["documents"])
        after = page["after"]
        if after is None:
            break
    assert after is None
    assert len(seen) == 260 and set(seen) == {f"d{i:03}" for i in range(260)}
    first = fetch(client, name, page_size=100).json()
    assert len(first["documents"]) == 100 and isinstance(first["after"], str)
    document = first["documents"][0]
    assert set(document) >= {"id", "timestamp", "tags", "name", "content", "metadata"}
    assert document["vectors"] is None


@pytest.mark.parametrize("page_size", [0, 1001, -1])
def test_fetch_page_size_out_of_range_is_422(
    client: httpx.Client, corpus: str, page_size: int
) -> None:
    assert fetch(client, corpus, page_size=page_size).status_code == 422


def test_fetch_with_a_cursor_nobody_handed_out_is_400(client: httpx.Client, corpus: str) -> None:
    response = fetch(client, corpus, after="not-a-cursor")
    assert response.status_code == 400 and "after" in response.json()["detail"]


def test_fetch_and_export_of_a_missing_collection_are_404(client: httpx.Client) -> None:
    for response in (
        fetch(client, "no-such-collection"),
        client.get("/v1/collections/no-such-collection/documents/export"),
    ):
        assert response.status_code == 404
        assert response.json()["detail"] == "Configuration not found"


# --- filters ---

FILTERS: dict[str, tuple[Any, set[str]]] = {
    "string_form_and": ("year > 2021 AND active = true", {"b", "d"}),
    "object_form_and": (
        {
            "and": [
                {"key": "year", "op": "gt", "value": 2021},
                {"key": "active", "op": "eq", "value": True},
            ]
        },
        {"b", "d"},
    ),
    "string_form_or_not": ("NOT (active = true) OR label = 'alpha'", {"a", "c", "e", "export"}),
    "datetime_range": (
        'when >= "2024-03-01T00:00:00Z" AND when < "2025-01-01T00:00:00Z"',
        {"b"},
    ),
    "datetime_object_lte": ({"key": "when", "op": "lte", "value": "2024-06-01"}, {"a", "b"}),
    "string_eq": ({"key": "label", "op": "eq", "value": "gamma"}, {"c"}),
    "string_neq": ('label != "gamma"', {"a", "b", "d", "e", "export"}),
    "float_range": ("score >= 2 AND score < 3.5", {"b"}),
    "is_null": ("label IS NULL", {"d", "e", "export"}),
    "is_not_null_object": ({"key": "year", "op": "is_null", "value": False}, {"a", "b", "c", "d"}),
}


@pytest.mark.parametrize("case", sorted(FILTERS))
def test_fetch_metadata_filter_returns_exactly_the_matching_documents(
    client: httpx.Client, corpus: str, case: str
) -> None:
    metadata_filter, want = FILTERS[case]
    assert fetched_ids(client, corpus, metadata_filter=metadata_filter) == want


BAD_FILTERS: dict[str, tuple[Any, int, str]] = {
    "unknown_key": ("color = 'red'", 400, "'color' is not in the collection's metadata_indexes"),
    "order_on_string_key": ('label < "m"', 400, "only eq, neq and is_null"),
    "type_mismatch": ({"key": "year", "op": "eq", "value": "2020"}, 400, "expects an integer"),
    "bad_datetime": ('when > "last week"', 400, "ISO 8601"),
    "syntax_error": ("year > AND", 422, "position"),
    "mixed_object": ({"and": [], "key": "year"}, 422, "exactly one of"),
    "unknown_op": ({"key": "year", "op": "between", "value": 1}, 422, "unknown filter op"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILTERS))
def test_fetch_bad_metadata_filter_is_refused(client: httpx.Client, corpus: str, case: str) -> None:
    metadata_filter, status, message = BAD_FILTERS[case]
    response = fetch(client, corpus, metadata_filter=metadata_filter)
    assert response.status_code == status, response.text
    assert message in json.dumps(response.json()["detail"])


def test_fetch_tags_match_any_or_all(client: httpx.Client, corpus: str) -> None:
    assert fetched_ids(client, corpus, document_tags=["big"]) == {"a", "c"}
    assert fetched_ids(client, corpus, document_tags=["red", "blue"]) == {"a", "b", "c", "d"}
    both = {"document_tags": ["red", "big"], "document_tags_match_all": True}
    assert fetched_ids(client, corpus, **both) == {"a"}
    with_filter = fetched_ids(
        client, corpus, document_tags=["blue"], metadata_filter="year >= 2024"
    )
    assert with_filter == {"d"}


def test_fetch_with_vectors_returns_each_vector_with_its_type(
    client: httpx.Client, corpus: str
) -> None:
    response = fetch(client, corpus, with_vectors=True, metadata_filter="label = 'alpha'")
    assert response.status_code == 200, response.text
    [document] = response.json()["documents"]
    vectors = document["vectors"]
    # the collection indexes name and content; this document has content only
    assert [(v["vector_name"], v["field"]) for v in vectors] == [("kw", "content")]
    for vector in vectors:
        assert vector["vector_type"] == "wmtr"
        assert len(vector["sparse_indices"]) == len(vector["sparse_values"]) > 0


# --- export ---


def test_export_streams_a_gzip_json_array_of_every_document(
    client: httpx.Client, corpus: str
) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    response = client.get(f"/v1/collections/{corpus}/documents/export")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    match = re.fullmatch(
        rf'attachment; filename="{corpus}-(\d{{8}}T\d{{6}}Z)\.json\.gz"',
        response.headers["content-disposition"],
    )
    assert match is not None, response.headers["content-disposition"]
    stamp = datetime.strptime(match[1], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert before <= stamp <= datetime.now(UTC)
    documents = json.loads(gzip.decompress(response.content))
    assert isinstance(documents, list)
    assert sorted(d["id"] for d in documents) == sorted([*CORPUS, "export"])
    by_id = {d["id"]: d for d in documents}
    assert by_id["a"]["metadata"]["year"] == 2020 and by_id["a"]["tags"] == ["red", "big"]
    assert by_id["a"]["vectors"] is None


def test_export_pages_through_more_than_one_fetch_page_and_carries_vectors(
    client: httpx.Client,
) -> None:
    name = f"fe{uuid.uuid4().hex[:10]}"
    create(client, name, keyword_collection())
    bulk(client, name, [doc(f"d{i:04}", f"text {i}") for i in range(1150)])
    response = client.get(f"/v1/collections/{name}/documents/export?with_vectors=true")
    assert response.status_code == 200
    documents = json.loads(gzip.decompress(response.content))
    assert sorted(d["id"] for d in documents) == [f"d{i:04}" for i in range(1150)]
    assert all(v["vector_type"] == "wmtr" for d in documents for v in d["vectors"])


def test_export_of_an_empty_collection_is_an_empty_array(client: httpx.Client) -> None:
    name = f"fz{uuid.uuid4().hex[:10]}"
    create(client, name, keyword_collection())
    response = client.get(f"/v1/collections/{name}/documents/export")
    assert response.status_code == 200
    assert json.loads(gzip.decompress(response.content)) == []


def test_document_called_export_is_read_with_document_true(
    client: httpx.Client, corpus: str
) -> None:
    response = client.get(f"/v1/collections/{corpus}/documents/export?document=true")
    assert response.status_code == 200, response.text
    assert response.json()["id"] == "export" and response.json()["name"] == "Exported"
    other = f"fn{uuid.uuid4().hex[:10]}"
    create(client, other, keyword_collection())
    missing = client.get(f"/v1/collections/{other}/documents/export?document=true")
    assert missing.status_code == 404


# --- amgix-client ---


async def _through_amgix_client(base_url: str, name: str) -> None:
    async with amgix_client.ApiClient(amgix_client.Configuration(host=base_url)) as api_client:
        api = amgix_client.AmgixApi(api_client)
        request = DocumentFetchRequest(
            page_size=2,
            metadata_filter=MetadataFilter("year > 2021 AND active = true"),
            with_vectors=True,
        )
        first = await api.fetch_documents(name, request)
        assert len(first.documents) == 2 and first.after is None
        assert {d.id for d in first.documents} == {"b", "d"}
        assert first.documents[0].vectors[0].vector_type == "wmtr"
        paged = await api.fetch_documents(name, DocumentFetchRequest(page_size=4))
        assert len(paged.documents) == 4 and paged.after is not None
        rest = await api.fetch_documents(name, DocumentFetchRequest(page_size=4, after=paged.after))
        assert rest.after is None
        assert {d.id for d in paged.documents + rest.documents} == {*CORPUS, "export"}
        exported = await api.export_documents(name)
        assert sorted(d["id"] for d in json.loads(gzip.decompress(exported))) == sorted(
            [*CORPUS, "export"]
        )


def test_fetch_and_export_through_amgix_client(stack, corpus: str) -> None:  # type: ignore[no-untyped-def]
    asyncio.run(_through_amgix_client(stack.base_url, corpus))
