"""Roles per route (the table of API.md §1) and key handling, on the assembled app."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient

from app.http.auth import KeyRing, Role, authorize, required_role
from app.main import create_app
from core.settings import Settings

C = "/v1/collections/{collection_name}"
D = f"{C}/documents"
# API.md §1, written out route by route: public, search, admin; everything else read.
API_MD_ROLES: dict[tuple[str, str], Role] = {
    ("GET", "/v1/version"): Role.PUBLIC,
    ("GET", "/v1/health/check"): Role.PUBLIC,
    ("GET", "/v1/health/ready"): Role.PUBLIC,
    ("GET", "/v1/system/info"): Role.READ,
    ("GET", "/v1/metrics/current"): Role.READ,
    ("GET", "/v1/metrics/trends"): Role.READ,
    ("GET", "/v1/metrics/definitions"): Role.READ,
    ("GET", "/v1/metrics/prometheus"): Role.READ,
    ("GET", "/v1/collections"): Role.READ,
    ("POST", C): Role.ADMIN,
    ("GET", C): Role.READ,
    ("DELETE", C): Role.ADMIN,
    ("GET", f"{C}/exists"): Role.READ,
    ("GET", f"{C}/stats"): Role.READ,
    ("POST", f"{C}/empty"): Role.ADMIN,
    ("GET", f"{C}/queue/info"): Role.READ,
    ("GET", f"{C}/queue/failed"): Role.READ,  # Braid's own (the dashboard): a read like the rest
    ("DELETE", f"{C}/queue"): Role.ADMIN,
    ("POST", f"{C}/search"): Role.SEARCH,
    ("POST", D): Role.ADMIN,
    ("POST", f"{D}/sync"): Role.ADMIN,
    ("POST", f"{D}/bulk"): Role.ADMIN,
    ("POST", f"{D}/fetch"): Role.READ,
    ("GET", f"{D}/export"): Role.READ,
    ("GET", f"{D}/{{document_id}}"): Role.READ,
    ("DELETE", f"{D}/{{document_id}}"): Role.ADMIN,
    ("DELETE", f"{D}/{{document_id}}/sync"): Role.ADMIN,
    ("GET", f"{D}/{{document_id}}/status"): Role.READ,
    ("GET", "/dashboard/"): Role.PUBLIC,  # no data in the page; it reads read-role routes
}
KEYS = {
    "api_key": "admin-1",
    "alt_api_key": "admin-2",
    "read_key": "read-1",
    "alt_read_key": "read-2",
    "search_key": "search-1",
    "alt_search_key": "search-2",
}


def _routes() -> list[tuple[str, str, Any]]:
    """(method, path, effective route) of every API route as the app serves it."""
    app = create_app(Settings())
    routes = [
        (method, context.path, context)
        for context in iter_route_contexts(app.routes)
        if isinstance(context.original_route, APIRoute)
        for method in context.methods
    ]
    assert len(routes) >= 25
    return routes


def test_every_route_needs_the_role_api_md_gives_it() -> None:
    for method, path, _ in _routes():
        assert (method, path) in API_MD_ROLES, f"{method} {path}: add it to API.md's role table"
        assert required_role(method, path) is API_MD_ROLES[(method, path)], f"{method} {path}"


def test_every_route_runs_the_auth_dependency_first() -> None:
    for method, path, context in _routes():
        assert context.dependant.dependencies[0].call is authorize, f"{method} {path}"


def test_the_path_auth_sees_is_the_served_path() -> None:
    """authorize reads the matched APIRoute's path: include_router must add no prefix."""
    for method, path, context in _routes():
        assert context.original_route.path == path, f"{method} {path}"


def test_a_write_nobody_listed_needs_admin() -> None:
    assert required_role("POST", "/v1/something/new") is Role.ADMIN
    assert required_role("PUT", f"{C}/search") is Role.ADMIN
    assert required_role("GET", "/v1/something/new") is Role.READ
    assert required_role("HEAD", "/v1/version") is Role.PUBLIC


def test_each_key_grants_its_role_and_unknown_keys_nothing() -> None:
    ring = KeyRing(Settings(**KEYS))
    assert ring.enabled
    assert [ring.role_of(k) for k in KEYS.values()] == [
        Role.ADMIN,
        Role.ADMIN,
        Role.READ,
        Role.READ,
        Role.SEARCH,
        Role.SEARCH,
    ]
    assert ring.role_of("admin-") is None
    assert ring.role_of("") is None
    assert ring.role_of("clé-ünïcode") is None


def test_a_key_given_two_roles_gets_the_higher() -> None:
    assert KeyRing(Settings(read_key="same", api_key="same")).role_of("same") is Role.ADMIN


def test_auth_is_off_without_keys() -> None:
    assert not KeyRing(Settings()).enabled


@pytest.fixture
def guarded() -> TestClient:
    """The app with keys and no lifespan: only requests refused before any handler work."""
    return TestClient(create_app(Settings(**KEYS)), raise_server_exceptions=False)


def test_refusals_are_401_with_www_authenticate(guarded: TestClient) -> None:
    cases = [
        ("GET", "/v1/collections", {}),
        ("GET", "/v1/collections", {"api-key": "wrong"}),
        ("GET", "/v1/collections", {"Authorization": "Bearer wrong"}),
        ("GET", "/v1/collections", {"api-key": "search-1"}),
        ("POST", "/v1/collections/c", {"api-key": "read-2"}),
        ("DELETE", "/v1/collections/c/queue", {"Authorization": "Bearer read-1"}),
    ]
    for method, path, headers in cases:
        response = guarded.request(method, path, headers=headers, json={})
        assert response.status_code == 401, (method, path, headers, response.text)
        assert response.headers["www-authenticate"] == "Bearer"
        assert isinstance(response.json()["detail"], str)


def test_public_routes_answer_without_a_key(guarded: TestClient) -> None:
    assert guarded.get("/v1/version").status_code == 200
    assert guarded.get("/v1/health/check").json() == {"ok": True}
    assert guarded.get("/openapi.json").status_code == 200
