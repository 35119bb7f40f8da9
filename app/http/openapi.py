"""The OpenAPI description: Amgix's operation ids, error answers, no security on public routes."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel

from app.http.auth import Role, required_role

C = "/v1/collections/{collection_name}"
D = f"{C}/documents"

# amgix-client's method names are these ids; a client generated from /openapi.json gets them too.
OPERATION_IDS: dict[tuple[str, str], str] = {
    ("GET", "/v1/version"): "version",
    ("GET", "/v1/health/check"): "health_check",
    ("GET", "/v1/health/ready"): "health_ready",
    ("GET", "/v1/system/info"): "system_info",
    ("GET", "/v1/metrics/current"): "metrics_current",
    ("GET", "/v1/metrics/trends"): "metrics_trends",
    ("GET", "/v1/metrics/definitions"): "metrics_definitions",
    ("GET", "/v1/metrics/prometheus"): "metrics_prometheus",
    ("GET", "/v1/collections"): "list_collections",
    ("POST", C): "create_collection",
    ("GET", C): "get_collection_config",
    ("DELETE", C): "delete_collection",
    ("GET", f"{C}/exists"): "collection_exists",
    ("GET", f"{C}/stats"): "get_collection_stats",
    ("POST", f"{C}/empty"): "empty_collection",
    ("GET", f"{C}/queue/info"): "get_collection_queue_info",
    ("DELETE", f"{C}/queue"): "delete_collection_queue",
    ("POST", f"{C}/search"): "search",
    ("POST", D): "upsert_document",
    ("POST", f"{D}/sync"): "upsert_document_sync",
    ("POST", f"{D}/bulk"): "upsert_documents_bulk",
    ("POST", f"{D}/fetch"): "fetch_documents",
    ("GET", f"{D}/export"): "export_documents",
    ("GET", f"{D}/{{document_id}}"): "get_document",
    ("DELETE", f"{D}/{{document_id}}"): "delete_document",
    ("DELETE", f"{D}/{{document_id}}/sync"): "delete_document_sync",
    ("GET", f"{D}/{{document_id}}/status"): "get_document_status",
}


CONFLICTS = frozenset({"create_collection", "upsert_document_sync"})


class ErrorResponse(BaseModel):
    """Every non-validation error: `{"detail": "<message>"}`."""

    detail: str


_ERROR = {"model": ErrorResponse}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {**_ERROR, "description": "Missing or invalid API key, or too low a role"},
    404: {**_ERROR, "description": "Collection or document not found"},
    500: {**_ERROR, "description": "Internal error"},
    503: {**_ERROR, "description": "Overloaded or a dependency is down (see Retry-After)"},
    504: {**_ERROR, "description": "An internal call timed out"},
}


ERROR_STATUSES = frozenset(str(s) for s in ERROR_RESPONSES)


def operation_id(route: APIRoute) -> str:
    """FastAPI's generate_unique_id_function: the Amgix name, else the handler's name."""
    for method in sorted(route.methods or ()):
        found = OPERATION_IDS.get((method, route.path))
        if found:
            return found
    return route.name


def _add_client_errors(method: str, operation: dict[str, Any]) -> None:
    """400 for what a body can get wrong against its collection; 409 where API.md names it."""
    responses = operation.setdefault("responses", {})
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
    for status, response in responses.items():
        if status in ERROR_STATUSES and "application/json" not in response.get("content", {}):
            response["content"] = error  # errors are JSON even where the answer is text
    if method.upper() != "GET":
        responses.setdefault("400", {"description": "Invalid for the collection", "content": error})
        responses.setdefault("413", {"description": "Body over its limit", "content": error})
    if operation.get("operationId") in CONFLICTS:
        responses.setdefault("409", {"description": "Conflict", "content": error})


def install_openapi(app: FastAPI) -> None:
    """Build the schema once. Public operations carry no security requirement, and none does
    when no API key is configured (the api then asks for none)."""
    secured = app.state.keys.enabled

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(
                title=app.title, version=app.version, routes=app.routes, description=app.description
            )
            for path, operations in spec.get("paths", {}).items():
                for method, operation in operations.items():
                    _add_client_errors(method, operation)
                    if not secured or required_role(method, path) is Role.PUBLIC:
                        operation.pop("security", None)
                        operation.get("responses", {}).pop("401", None)
                    if required_role(method, path) is Role.PUBLIC:
                        operation.get("responses", {}).pop("404", None)
            if not secured:
                spec.get("components", {}).pop("securitySchemes", None)
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
