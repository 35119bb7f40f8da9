"""API keys and roles on a stack with every key set (API.md §1), over HTTP and amgix-client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import amgix_client
import httpx
import pytest
from amgix_client.exceptions import UnauthorizedException
from amgix_client.models import CollectionConfig, Document, SearchQuery

from harness.stack import Stack
from tests.integration.helpers import doc, keyword_collection, ts

KEYS = {
    "admin": "adm-7f3c",
    "alt_admin": "adm-alt-91d2",
    "read": "read-4be1",
    "alt_read": "read-alt-0c55",
    "search": "srch-2a90",
    "alt_search": "srch-alt-77e3",
}
ENV = {
    "BRAID_API_KEY": KEYS["admin"],
    "BRAID_ALT_API_KEY": KEYS["alt_admin"],
    "BRAID_READ_KEY": KEYS["read"],
    "BRAID_ALT_READ_KEY": KEYS["alt_read"],
    "BRAID_SEARCH_KEY": KEYS["search"],
    "BRAID_ALT_SEARCH_KEY": KEYS["alt_search"],
}
NAME = "authz"
C = f"/v1/collections/{NAME}"


@pytest.fixture(scope="module")
def keyed() -> Iterator[Stack]:
    stack = Stack(ENV)
    try:
        stack.start()
        with httpx.Client(base_url=stack.base_url, timeout=60) as http:
            created = http.post(C, json=keyword_collection(), headers={"api-key": KEYS["admin"]})
            assert created.status_code == 200, created.text
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def http(keyed: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=keyed.base_url, timeout=60) as client:
        yield client


def _as(key: str | None, bearer: bool = False) -> dict[str, str]:
    if key is None:
        return {}
    return {"Authorization": f"Bearer {key}"} if bearer else {"api-key": key}


# (method, path, body) per role level: the least role each needs.
SEARCH_CALL = ("POST", f"{C}/search", {"query": "hello"})
READ_CALLS = [
    ("GET", C, None),
    ("GET", "/v1/collections", None),
    ("GET", f"{C}/stats", None),
    ("GET", "/v1/metrics/current", None),
    ("GET", "/v1/system/info", None),
]
ADMIN_CALLS = [
    ("POST", f"{C}/documents", doc("d1", "hello world")),
    ("POST", f"{C}/documents/bulk", {"documents": [doc("d2", "hello")]}),
    ("DELETE", f"{C}/documents/d9?request_timestamp={ts(5)}", None),
    ("DELETE", f"{C}/queue", None),
    ("POST", "/v1/collections/authz-made", keyword_collection()),
]
LEVEL = {"search": 1, "read": 2, "admin": 3}
CALLS = [(SEARCH_CALL, 1)] + [(c, 2) for c in READ_CALLS] + [(c, 3) for c in ADMIN_CALLS]


@pytest.mark.parametrize("bearer", [False, True], ids=["api-key", "bearer"])
@pytest.mark.parametrize("who", list(KEYS))
def test_each_key_may_do_what_its_role_allows_and_nothing_more(
    http: httpx.Client, who: str, bearer: bool
) -> None:
    level = LEVEL[who.removeprefix("alt_")]
    for (method, path, body), needed in CALLS:
        response = http.request(method, path, json=body, headers=_as(KEYS[who], bearer))
        if level >= needed:
            assert response.status_code == 200, (who, method, path, response.text)
        else:
            assert response.status_code == 401, (who, method, path, response.text)
            assert response.headers["WWW-Authenticate"] == "Bearer"
    http.delete("/v1/collections/authz-made", headers=_as(KEYS["admin"]))


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"api-key": "nope"},
        {"Authorization": "Bearer nope"},
        {"Authorization": f"Basic {KEYS['admin']}"},
        {"api-key": KEYS["admin"] + "x"},
    ],
    ids=["none", "wrong-header", "wrong-bearer", "not-bearer", "longer"],
)
def test_a_missing_or_wrong_key_is_refused_with_401(
    http: httpx.Client, headers: dict[str, str]
) -> None:
    for method, path, body in [SEARCH_CALL, READ_CALLS[0], ADMIN_CALLS[0]]:
        response = http.request(method, path, json=body, headers=headers)
        assert response.status_code == 401, (method, path, response.text)
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert isinstance(response.json()["detail"], str)


def test_public_routes_need_no_key(http: httpx.Client) -> None:
    assert http.get("/v1/version").status_code == 200
    assert http.get("/v1/health/check").json() == {"ok": True}
    assert http.get("/v1/health/ready").status_code == 200
    assert http.get("/openapi.json").status_code == 200
    assert http.get("/docs").status_code == 200


def test_with_keys_the_schema_declares_them_on_every_guarded_operation(
    http: httpx.Client,
) -> None:
    spec = http.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["ApiKeyHeader"] == {"type": "apiKey", "in": "header", "name": "api-key"}
    assert schemes["BearerAuth"] == {"type": "http", "scheme": "bearer"}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if path.startswith(("/v1/version", "/v1/health")):
                assert "security" not in operation and "401" not in operation["responses"]
                continue
            error = operation["responses"]["401"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorResponse"}, (method, path)
            assert {"ApiKeyHeader": []} in operation["security"], (method, path)


def test_the_dashboard_page_is_public_but_its_data_needs_a_read_key(http: httpx.Client) -> None:
    page = http.get("/dashboard/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/v1/metrics/current" in page.text and "/v1/collections" in page.text
    assert http.get("/v1/metrics/current").status_code == 401
    assert http.get("/v1/collections", headers=_as(KEYS["read"])).status_code == 200


async def _client_calls(base_url: str, configuration: amgix_client.Configuration) -> list[str]:
    """What a search-role client may and may not do, as outcomes."""
    configuration.host = base_url
    outcomes = []
    async with amgix_client.ApiClient(configuration) as api_client:
        api = amgix_client.AmgixApi(api_client)
        found = await api.search(NAME, SearchQuery(query="hello"))
        outcomes.append(f"search:{type(found.results).__name__}")
        try:
            await api.create_collection("authz-client", CollectionConfig())
            outcomes.append("create:ok")
        except UnauthorizedException:
            outcomes.append("create:401")
    return outcomes


@pytest.mark.parametrize("form", ["api_key", "access_token"])
def test_amgix_client_sends_the_key_in_either_form(keyed: Stack, form: str) -> None:
    if form == "api_key":
        configuration = amgix_client.Configuration(api_key={"ApiKeyHeader": KEYS["alt_search"]})
    else:
        configuration = amgix_client.Configuration(access_token=KEYS["search"])
    outcomes = asyncio.run(_client_calls(keyed.base_url, configuration))
    assert outcomes == ["search:list", "create:401"]


def test_amgix_client_with_the_admin_key_may_write(keyed: Stack) -> None:
    async def drive() -> bool:
        configuration = amgix_client.Configuration(
            host=keyed.base_url, api_key={"ApiKeyHeader": KEYS["admin"]}
        )
        async with amgix_client.ApiClient(configuration) as api_client:
            api = amgix_client.AmgixApi(api_client)
            document = Document(
                id="viaclient", timestamp=datetime(2026, 1, 2, tzinfo=UTC), content="hi"
            )
            return bool((await api.upsert_document(NAME, document)).ok)

    assert asyncio.run(drive())
