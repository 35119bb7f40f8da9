"""Bodies that are not decodable JSON are validation errors (422), never 400 or 500; a 422
echoes no input nested past the limits."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient

from app.http.errors import validation_error
from app.main import create_app
from core.filters import TOO_DEEP
from core.schemas.common import MAX_FILTER_DEPTH
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


def _render(errors: list[dict[str, Any]]) -> Any:
    response = asyncio.run(
        validation_error(Request({"type": "http"}), RequestValidationError(errors))
    )
    assert response.status_code == 422
    return json.loads(bytes(response.body))["detail"]


def test_an_input_nested_past_the_limit_is_neither_echoed_nor_walked() -> None:
    # FastAPI's encoder recurses through an error's input: 5,000 levels were a RecursionError (500).
    deep: list[Any] = []
    for _ in range(5_000):
        deep = [deep]
    shallow = [[["x"]]]
    detail = _render(
        [
            {"type": "extra_forbidden", "loc": ("body", "x"), "msg": "Extra", "input": deep},
            {"type": "list_type", "loc": ("body", "y"), "msg": "List", "input": shallow},
        ]
    )
    assert [error["input"] for error in detail] == [{}, shallow]


def test_a_filter_refused_for_its_depth_is_not_echoed() -> None:
    filter_input = {"not": {"key": "a", "op": "eq", "value": "secret"}}
    message = f"a filter nests at most {MAX_FILTER_DEPTH} levels deep"
    error = {"type": TOO_DEEP, "loc": ("body", "metadata_filter"), "msg": message}
    detail = _render([{**error, "input": filter_input}])
    assert detail == [{**error, "loc": list(error["loc"]), "input": {}}]
