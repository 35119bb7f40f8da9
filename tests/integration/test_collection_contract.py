"""Collections and documents (API.md §3–§4): config echo, store_content, empty, metadata, tags,
queue purge — the rows and rules not covered elsewhere."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    get_doc,
    search_ids,
    wait_until,
)

VECTOR_FIELDS = {
    "name",
    "type",
    "model",
    "revision",
    "query_model",
    "query_revision",
    "dimensions",
    "top_k",
    "wmtr_word_ratio",
    "index_fields",
    "language_default_code",
    "language_detect",
    "language_confidence",
    "normalization",
    "dense_distance",
    "keep_case",
}


def _name(prefix: str = "cc") -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def test_get_config_echoes_every_field_with_defaults(client: httpx.Client) -> None:
    name = _name()
    create(
        client,
        name,
        {
            "vectors": [
                {"name": "kw", "type": "KEYWORD", "wmtr_word_weight": 60},
                {"name": "ft", "type": "full_text", "language_default_code": "DE"},
                {"name": "emb", "type": "dense_custom", "dimensions": 4, "dense_distance": "DOT"},
                {"name": "sp", "type": "sparse_custom", "top_k": 10},
            ],
            "metadata_indexes": [
                {"key": "year", "type": "integer"},
                {"key": "when", "type": "datetime"},
            ],
        },
    )
    config = client.get(f"/v1/collections/{name}").json()
    assert set(config) == {"vectors", "store_content", "metadata_indexes"}
    assert config["store_content"] is True
    assert config["metadata_indexes"] == [
        {"key": "year", "type": "integer"},
        {"key": "when", "type": "datetime"},
    ]
    kw, ft, emb, sp = config["vectors"]
    for vector in config["vectors"]:
        assert set(vector) == VECTOR_FIELDS
    assert kw["type"] == "wmtr" and kw["wmtr_word_ratio"] == 60 and kw["top_k"] == 512
    assert kw["index_fields"] == ["content"] and kw["language_default_code"] == "en"
    assert kw["normalization"] is False and kw["dense_distance"] is None
    assert kw["language_detect"] is False and kw["language_confidence"] == 0.9
    assert ft["language_default_code"] == "de"
    assert emb["dimensions"] == 4 and emb["dense_distance"] == "dot" and emb["normalization"]
    assert sp["top_k"] == 10 and sp["normalization"] is False


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"metadata_indexes": [{"key": "k", "type": "keyword"}]}, "type"),
        ({"metadata_indexes": [{"key": "bad key", "type": "string"}]}, "key"),
        (
            {"metadata_indexes": [{"key": "k", "type": "string"}, {"key": "k", "type": "float"}]},
            "unique",
        ),
        ({"vectors": [{"name": "e", "type": "dense_custom"}]}, "dimensions"),
        ({"vectors": [{"name": "e", "type": "dense_custom", "dimensions": 8193}]}, "dimensions"),
        ({"vectors": [{"name": "k", "type": "wmtr", "dense_distance": "dot"}]}, "dense_distance"),
        ({"vectors": [{"name": "k", "type": "wmtr", "wmtr_word_ratio": 101}]}, "wmtr_word_ratio"),
        ({"vectors": [{"name": "k", "type": "wmtr", "index_fields": ["body"]}]}, "index_fields"),
        ({"vectors": [{"name": "k", "type": "wmtr", "keep_case": True}]}, "keep_case"),
        (
            {"vectors": [{"name": "k", "type": "wmtr", "language_default_code": "eng"}]},
            "language_default_code",
        ),
    ],
)
def test_bad_collection_config_is_422_naming_the_field(
    client: httpx.Client, config: dict[str, Any], needle: str
) -> None:
    response = client.post(f"/v1/collections/{_name()}", json=config)
    assert response.status_code == 422, response.text
    assert needle in response.text


def test_store_content_false_keeps_the_hash_and_still_detects_changes(
    client: httpx.Client,
) -> None:
    name = _name("nocontent")
    create(
        client,
        name,
        {"vectors": [{"name": "kw", "type": "keyword"}], "store_content": False},
    )
    sync = f"/v1/collections/{name}/documents/sync"
    assert client.post(sync, json=doc("a", "the quick brown fox", 0)).status_code == 200
    stored = get_doc(client, name, "a")
    assert stored is not None and stored["content"] is None and stored["content_hash"]
    assert search_ids(client, name, "brown fox") == ["a"]
    first_hash = stored["content_hash"]
    assert client.post(sync, json=doc("a", "the quick brown fox", 1, name="t")).status_code == 200
    assert (get_doc(client, name, "a") or {})["content_hash"] == first_hash
    assert client.post(sync, json=doc("a", "a lazy dog sleeps", 2)).status_code == 200
    assert (get_doc(client, name, "a") or {})["content_hash"] != first_hash
    assert search_ids(client, name, "brown fox") == []
    assert search_ids(client, name, "lazy dog") == ["a"]


def test_empty_removes_documents_and_keeps_the_config(client: httpx.Client) -> None:
    name = _name("empty")
    create(client, name, {"vectors": [{"name": "kw", "type": "keyword"}]})
    config = client.get(f"/v1/collections/{name}").json()
    bulk = {"documents": [doc(f"d{i}", f"apple {i}") for i in range(5)]}
    assert client.post(f"/v1/collections/{name}/documents/bulk", json=bulk).status_code == 200
    wait_until(lambda: doc_count(client, name) == 5)
    assert client.post(f"/v1/collections/{name}/empty").json() == {"ok": True}
    assert doc_count(client, name) == 0
    assert search_ids(client, name, "apple") == []
    assert client.get(f"/v1/collections/{name}").json() == config
    assert (
        client.post(f"/v1/collections/{name}/documents/sync", json=doc("z", "apple")).status_code
        == 200
    )
    assert search_ids(client, name, "apple") == ["z"]
    assert client.post(f"/v1/collections/{_name()}/empty").status_code == 404


def test_metadata_is_stored_flat_and_checked_against_indexes(client: httpx.Client) -> None:
    name = _name("meta")
    create(
        client,
        name,
        {
            "vectors": [{"name": "kw", "type": "keyword"}],
            "metadata_indexes": [
                {"key": "year", "type": "integer"},
                {"key": "when", "type": "datetime"},
                {"key": "on", "type": "boolean"},
            ],
        },
    )
    metadata = {
        "year": 2024,
        "when": {"value": "2024-05-01T10:00:00Z", "type": "datetime"},
        "on": True,
        "free": {"nested": [1, 2]},
        "none": None,
    }
    sync = f"/v1/collections/{name}/documents/sync"
    assert client.post(sync, json=doc("m", "text", metadata=metadata)).status_code == 200
    stored = (get_doc(client, name, "m") or {})["metadata"]
    assert stored["year"] == 2024 and stored["on"] is True and stored["free"] == {"nested": [1, 2]}
    assert stored["when"].startswith("2024-05-01T10:00:00")
    for bad, key in (
        ({"year": "2024"}, "year"),
        ({"year": 20.5}, "year"),
        ({"on": "yes"}, "on"),
        ({"when": "2024-05-01"}, "when"),
    ):
        response = client.post(sync, json=doc("m2", "text", metadata=bad))
        assert response.status_code == 400, response.text
        assert f"Metadata key '{key}'" in response.json()["detail"]
        queued = client.post(f"/v1/collections/{name}/documents", json=doc("m2", "t", metadata=bad))
        assert queued.status_code == 400, queued.text
    bad_wrapper = {"when": {"value": "not a date", "type": "datetime"}}
    assert client.post(sync, json=doc("m3", "t", metadata=bad_wrapper)).status_code == 422
    assert client.post(sync, json=doc("m3", "t", metadata={"bad key": 1})).status_code == 422


def test_tags_are_trimmed_and_returned(client: httpx.Client) -> None:
    name = _name("tags")
    create(client, name, {"vectors": [{"name": "kw", "type": "keyword"}]})
    sync = f"/v1/collections/{name}/documents/sync"
    assert client.post(sync, json=doc("t", "x", tags=["  a ", "b"])).status_code == 200
    assert (get_doc(client, name, "t") or {})["tags"] == ["a", "b"]
    for tags in (["a", " a"], ["a|b"], [""], ["x" * 101], [str(i) for i in range(51)]):
        assert client.post(sync, json=doc("t2", "x", tags=tags)).status_code == 422, tags


def test_get_document_returns_every_field(client: httpx.Client) -> None:
    name = _name("fields")
    create(client, name, {"vectors": [{"name": "kw", "type": "keyword"}]})
    client.post(f"/v1/collections/{name}/documents/sync", json=doc("f", "body"))
    stored = get_doc(client, name, "f")
    assert stored is not None
    for key in (
        "id",
        "timestamp",
        "tags",
        "name",
        "description",
        "content",
        "content_hash",
        "metadata",
        "custom_vectors",
        "vectors",
    ):
        assert key in stored
    assert stored["vectors"] is None and stored["name"] is None
    with_vectors = client.get(f"/v1/collections/{name}/documents/f", params={"with_vectors": True})
    (vector,) = with_vectors.json()["vectors"]
    assert vector["vector_name"] == "kw" and vector["field"] == "content"
    assert vector["vector_type"] == "wmtr" and vector["sparse_indices"]


def test_delete_queue_drops_queued_work_only(client: httpx.Client) -> None:
    name = _name("purge")
    create(client, name, {"vectors": [{"name": "kw", "type": "keyword"}]})
    client.post(f"/v1/collections/{name}/documents/sync", json=doc("kept", "stays"))
    assert client.delete(f"/v1/collections/{name}/queue").json() == {"ok": True}
    assert client.get(f"/v1/collections/{name}/queue/info").json()["total"] == 0
    assert doc_count(client, name) == 1
    assert client.delete(f"/v1/collections/{_name()}/queue").status_code == 404
