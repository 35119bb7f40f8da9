"""Request bodies are bounded per route, refused before anything reads them, never echoed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from app.http.limits import DEFAULT_LIMIT, MIB, RequestLimits, limit_for


def test_each_route_has_its_limit() -> None:
    assert limit_for("/v1/collections/c/documents/bulk").max_bytes == 32 * MIB
    assert limit_for("/v1/collections/c/documents").max_bytes == 8 * MIB
    assert limit_for("/v1/collections/c/documents/sync").max_bytes == 8 * MIB
    assert limit_for("/v1/collections/c/search").max_bytes == 2 * MIB
    assert limit_for("/v1/collections/c") is DEFAULT_LIMIT
    assert limit_for("/v1/collections/c/documents/fetch") is DEFAULT_LIMIT


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = FastAPI()
    read: list[int] = []

    @app.post("/v1/collections/{name}/search")
    async def search(request: Request) -> dict[str, int]:
        body = await request.body()
        read.append(len(body))
        return {"read": len(body)}

    app.add_middleware(RequestLimits, body_timeout_s=5)
    app.state.read = read
    with TestClient(app) as test_client:
        yield test_client


def test_a_declared_length_over_the_limit_is_refused_unread(client: TestClient) -> None:
    body = b"x" * (2 * MIB + 1)
    response = client.post("/v1/collections/c/search", content=body)
    assert response.status_code == 413
    assert "2 MiB" in response.json()["detail"]
    assert response.headers["connection"] == "close"
    assert len(response.content) < 200  # the input is not echoed back
    assert client.app.state.read == []  # type: ignore[attr-defined]


def test_a_chunked_body_is_cut_when_it_passes_the_limit(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(3):
            yield b"y" * MIB

    response = client.post("/v1/collections/c/search", content=chunks())
    assert response.status_code == 413
    assert client.app.state.read == []  # type: ignore[attr-defined]


def test_a_body_within_the_limit_is_served(client: TestClient) -> None:
    response = client.post("/v1/collections/c/search", content=b"z" * 1000)
    assert response.status_code == 200 and response.json() == {"read": 1000}
