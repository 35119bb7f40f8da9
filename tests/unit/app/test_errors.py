"""Bodies that are not decodable JSON are validation errors (422), never 400 or 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from core.settings import Settings


@pytest.mark.parametrize(
    "raw", [b'{"query": "caf\xe9"}', b"\xff\xfe\x00", b'{"query": ', b'{"query": "x"} trailing']
)
def test_undecodable_json_bodies_are_422(raw: bytes) -> None:
    # No lifespan: the body is refused before any handler needs the bus or Redis.
    client = TestClient(create_app(Settings()), raise_server_exceptions=False)
    response = client.post(
        "/v1/collections/c/search", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["type"] == "json_invalid"
