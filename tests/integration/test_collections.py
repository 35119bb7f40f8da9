"""Collections and input validation over HTTP: the 4xx answers of API.md."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.integration.helpers import MODEL, create, doc, hybrid_collection, keyword_collection, ts


def _name() -> str:
    return f"c{uuid.uuid4().hex[:10]}"


def test_version_and_liveness(client: httpx.Client) -> None:
    assert client.get("/v1/version").json()["version"].endswith("(Braid One)")
    assert client.get("/v1/health/check").json() == {"ok": True}
    ready = client.get("/v1/health/ready")
    assert ready.status_code == 200
    assert ready.json() == {
        "database": True,
        "rabbitmq": True,
        "index": True,
        "query": True,
        "ready": True,
    }


def test_collection_lifecycle(client: httpx.Client) -> None:
    name = _name()
    assert client.get(f"/v1/collections/{name}/exists").json() == {"exists": False}
    create(client, name, hybrid_collection())
    assert name in client.get("/v1/collections").json()
    assert client.get(f"/v1/collections/{name}/exists").json() == {"exists": True}
    config = client.get(f"/v1/collections/{name}").json()
    kw, dense = config["vectors"]
    assert kw["type"] == "wmtr" and kw["top_k"] == 512 and kw["index_fields"] == ["name", "content"]
    assert dense["dimensions"] == 384 and dense["dense_distance"] == "cosine"
    assert config["store_content"] is True
    stats = client.get(f"/v1/collections/{name}/stats").json()
    assert stats["doc_count"] == 0 and stats["queue"]["total"] == 0
    duplicate = client.post(f"/v1/collections/{name}", json=keyword_collection())
    assert duplicate.status_code == 409
    assert duplicate.json()["detail"] == f"Collection '{name}' already exists"
    assert client.delete(f"/v1/collections/{name}").json() == {"ok": True}
    assert client.get(f"/v1/collections/{name}").status_code == 404
    assert client.get(f"/v1/collections/{name}/exists").json() == {"exists": False}


def test_empty_vectors_default_to_noop(client: httpx.Client) -> None:
    name = _name()
    create(client, name, {"vectors": []})
    assert client.get(f"/v1/collections/{name}").json()["vectors"][0]["type"] == "noop"
    client.post(f"/v1/collections/{name}/documents/sync", json=doc("n", "anything"))
    search = client.post(f"/v1/collections/{name}/search", json={"query": "anything"})
    assert search.json()["results"] == []
    assert client.get(f"/v1/collections/{name}/documents/n").json()["content"] == "anything"


@pytest.mark.parametrize(
    ("config", "status", "needle"),
    [
        ({"vectors": [{"name": "d", "type": "dense_model"}]}, 422, "model"),
        ({"vectors": [{"name": "k", "type": "keyword", "model": MODEL}]}, 422, "model"),
        ({"vectors": [{"name": "k", "type": "bogus"}]}, 422, "type"),
        (
            {"vectors": [{"name": "k", "type": "wmtr"}, {"name": "k", "type": "wmtr"}]},
            422,
            "unique",
        ),
        ({"vectors": [{"name": "k", "type": "wmtr", "top_k": 0}]}, 422, "top_k"),
        ({"vectors": [{"name": "k", "type": "wmtr", "normalization": True}]}, 422, "normalization"),
        ({"vectors": [{"name": "k", "type": "wmtr"}], "extra": 1}, 422, "extra"),
        (
            {"vectors": [{"name": "d", "type": "dense_model", "model": "no/such-model"}]},
            400,
            "Model validation failed",
        ),
        (
            {"vectors": [{"name": "d", "type": "dense_model", "model": MODEL, "dimensions": 12}]},
            400,
            "dimensions",
        ),
    ],
)
def test_bad_collection_config(
    client: httpx.Client, config: dict, status: int, needle: str
) -> None:  # type: ignore[type-arg]
    response = client.post(f"/v1/collections/{_name()}", json=config)
    assert response.status_code == status, response.text
    assert needle in str(response.json()["detail"])


@pytest.mark.parametrize(
    ("name", "needle"), [("bad.name", "letters"), ("x" * 101, "letters"), ("%20", "empty")]
)
def test_bad_collection_name_is_422(client: httpx.Client, name: str, needle: str) -> None:
    response = client.post(f"/v1/collections/{name}", json=keyword_collection())
    assert response.status_code == 422
    assert needle in str(response.json()["detail"])


def test_missing_collection_is_404_everywhere(client: httpx.Client) -> None:
    base = "/v1/collections/nope"
    for response in (
        client.get(base),
        client.get(f"{base}/stats"),
        client.delete(base),
        client.post(f"{base}/documents", json=doc("a", "x")),
        client.get(f"{base}/documents/a"),
    ):
        assert response.status_code == 404
        assert response.json()["detail"] == "Configuration not found"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"id": "a", "timestamp": "2026-01-01T00:00:00"}, "timezone"),
        ({"id": "a", "timestamp": "2026-01-01T00:00:00+02:00"}, "UTC"),
        ({"id": "", "timestamp": ts()}, "empty"),
        ({"id": "a b", "timestamp": ts()}, "letters"),
        ({"timestamp": ts()}, "id"),
        ({"id": "a", "timestamp": ts(), "tags": ["x|y"]}, "|"),
        ({"id": "a", "timestamp": ts(), "tags": ["x", " x "]}, "repeat"),
        ({"id": "a", "timestamp": ts(), "name": "n" * 1501}, "1500"),
        ({"id": "a", "timestamp": ts(), "metadata": {"bad key": 1}}, "letters"),
        ({"id": "a", "timestamp": ts(), "surprise": 1}, "surprise"),
        ({"id": 5, "timestamp": ts()}, "string"),
    ],
)
def test_bad_document_is_422_naming_the_problem(
    client: httpx.Client, body: dict, needle: str
) -> None:  # type: ignore[type-arg]
    name = _name()
    create(client, name, keyword_collection())
    response = client.post(f"/v1/collections/{name}/documents", json=body)
    assert response.status_code == 422, response.text
    assert needle in str(response.json()["detail"])


def test_document_get_and_status(client: httpx.Client) -> None:
    name = _name()
    create(client, name, keyword_collection())
    client.post(f"/v1/collections/{name}/documents/sync", json=doc(" g ", "text", tags=["t"]))
    stored = client.get(f"/v1/collections/{name}/documents/g").json()
    assert stored["id"] == "g" and stored["tags"] == ["t"] and stored["description"] is None
    assert stored["timestamp"].startswith("2026-01-01T00:00:00")
    statuses = client.get(f"/v1/collections/{name}/documents/g/status").json()["statuses"]
    assert [s["status"] for s in statuses] == ["indexed"]
    assert client.get(f"/v1/collections/{name}/documents/zzz").status_code == 404
    assert client.get(f"/v1/collections/{name}/documents/zzz/status").status_code == 404
