"""/openapi.json describes every route of API.md §2 with amgix-client's operation names."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from amgix_client.api import amgix_api

C = "/v1/collections/{collection_name}"
D = f"{C}/documents"
API_MD_ROUTES = [
    ("get", "/v1/version"),
    ("get", "/v1/health/check"),
    ("get", "/v1/health/ready"),
    ("get", "/v1/system/info"),
    ("get", "/v1/metrics/current"),
    ("get", "/v1/metrics/trends"),
    ("get", "/v1/metrics/definitions"),
    ("get", "/v1/metrics/prometheus"),
    ("post", C),
    ("get", "/v1/collections"),
    ("get", C),
    ("delete", C),
    ("get", f"{C}/exists"),
    ("get", f"{C}/stats"),
    ("post", f"{C}/empty"),
    ("post", D),
    ("post", f"{D}/sync"),
    ("post", f"{D}/bulk"),
    ("get", f"{D}/{{document_id}}"),
    ("post", f"{D}/fetch"),
    ("get", f"{D}/export"),
    ("delete", f"{D}/{{document_id}}"),
    ("delete", f"{D}/{{document_id}}/sync"),
    ("get", f"{D}/{{document_id}}/status"),
    ("get", f"{C}/queue/info"),
    ("delete", f"{C}/queue"),
    ("post", f"{C}/search"),
]
BODY_ROUTES = {("post", C), ("post", D), ("post", f"{D}/sync"), ("post", f"{D}/bulk")}
BODY_ROUTES |= {("post", f"{D}/fetch"), ("post", f"{C}/search")}


def amgix_client_operations() -> dict[tuple[str, str], str]:
    """(method, path) -> method name, read from amgix-client's generated serializers."""
    source = inspect.getsource(amgix_api)
    found = re.findall(
        r"def _(\w+)_serialize\(.*?method='(\w+)',\s*resource_path='([^']+)'", source, re.S
    )
    return {(method.lower(), path): name for name, method, path in found}


@pytest.fixture(scope="module")
def spec(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_api_md_route_is_described(spec: dict[str, Any]) -> None:
    described = {(m, p) for p, ops in spec["paths"].items() for m in ops}
    missing = [route for route in API_MD_ROUTES if route not in described]
    assert not missing


def test_operation_ids_are_amgix_client_method_names(spec: dict[str, Any]) -> None:
    expected = amgix_client_operations()
    assert len(expected) == 27
    for (method, path), name in expected.items():
        operation = spec["paths"].get(path, {}).get(method)
        assert operation is not None, f"{method} {path}"
        assert operation["operationId"] == name, f"{method} {path}"
    ids = [op["operationId"] for ops in spec["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))


def test_bodies_and_answers_name_their_schemas(spec: dict[str, Any]) -> None:
    for method, path in API_MD_ROUTES:
        operation = spec["paths"][path][method]
        if (method, path) in BODY_ROUTES:
            body = operation["requestBody"]["content"]["application/json"]["schema"]
            assert "$ref" in body, f"{method} {path}"
        assert "200" in operation["responses"], f"{method} {path}"
        if "requestBody" in operation or "parameters" in operation:
            assert "422" in operation["responses"], f"{method} {path}"
        # With no API key configured the api asks for none, and the schema says so.
        assert "401" not in operation["responses"] and "security" not in operation


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_every_schema_reference_resolves(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    refs = set(_refs(spec))
    assert len(refs) > 10
    for ref in refs:
        assert ref.startswith("#/components/schemas/")
        assert ref.rsplit("/", 1)[1] in schemas, ref
    for name in ("CollectionConfig", "Document", "SearchQuery", "HTTPValidationError"):
        assert name in schemas
    assert "securitySchemes" not in spec["components"]  # no key configured on this stack
