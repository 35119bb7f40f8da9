"""The search fast path answers exactly as the route does: every request below gets the same
status, body and answer headers from the assembled app with FastSearch and without it, whether
the fast path serves it or hands it to the route.

The search node here is a stand-in that answers from a table (no engine, no stack): what is
compared is the HTTP around it, which is all the fast path replaces."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from app.context import ApiContext
from app.fast_search import FastSearch
from app.main import create_app
from app.metrics_sampler import RequestMetrics
from core.errors import CollectionNotFound, InvalidInput, Unavailable
from core.metrics import HTTP_RESPONSES, SEARCH_SECONDS
from core.schemas.search import SearchQuery, SearchResponse, SearchResult
from core.settings import Settings

KEYS = {"api_key": "admin-1", "read_key": "read-1", "search_key": "search-1"}
SEARCH = "/v1/collections/books/search"
JSON = {"content-type": "application/json"}
SEARCH_KEY = {**JSON, "api-key": "search-1"}
STAMP = datetime(2026, 1, 1, tzinfo=UTC)


class TableNode:
    """Answers each collection from a table; a collection named for an error raises it."""

    def __init__(self, ready: bool = True) -> None:
        self.ready = ready
        self.searched: list[tuple[str, SearchQuery]] = []

    def start(self) -> None: ...

    async def close(self) -> None: ...

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse:
        self.searched.append((collection, query))
        errors: dict[str, Exception] = {
            "missing": CollectionNotFound(),
            "busy": Unavailable("still applying the newest writes; retry", 2),
            "bad": InvalidInput("vector_options: unknown vector_name 'x'"),
            "broken": RuntimeError("a bug"),
        }
        if collection in errors:
            raise errors[collection]
        hit = SearchResult(
            id=f"{collection}:1", timestamp=STAMP, name=query.query, score=1.0, vector_scores=[]
        )
        return SearchResponse(results=[hit][: query.limit], facet_counts=None, query_time_ms=0.5)


def client(node: TableNode, fast: bool, **settings: Any) -> TestClient:
    """The assembled app (no lifespan), with or without the fast path."""
    app = create_app(Settings(**settings))
    if not fast:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not FastSearch]
    context = ApiContext(Settings(**settings), None, None, None, None)  # type: ignore[arg-type]
    context.search = node
    app.state.context = context
    return TestClient(app, raise_server_exceptions=False)


def same_answer(fast: Response, route: Response) -> None:
    assert fast.status_code == route.status_code, (fast.text, route.text)
    assert fast.content == route.content
    for header in ("content-type", "content-length", "retry-after", "www-authenticate"):
        assert fast.headers.get(header) == route.headers.get(header), header


Request = Callable[[TestClient], Response]
CASES: dict[str, Request] = {
    "a search": lambda c: c.post(SEARCH, json={"query": "dune", "limit": 3}),
    "json with a charset": lambda c: c.post(
        SEARCH,
        content=b'{"query": "dune"}',
        headers={"content-type": "application/json; charset=utf-8"},
    ),
    "a +json type": lambda c: c.post(
        SEARCH, content=b'{"query": "dune"}', headers={"content-type": "application/x+json"}
    ),
    "no content type": lambda c: c.post(SEARCH, content=b'{"query": "dune"}'),
    "a text type": lambda c: c.post(
        SEARCH, content=b'{"query": "dune"}', headers={"content-type": "text/plain"}
    ),
    "malformed json": lambda c: c.post(SEARCH, content=b'{"query": ', headers=JSON),
    "NaN": lambda c: c.post(SEARCH, content=b'{"query": "a", "limit": NaN}', headers=JSON),
    "an empty body": lambda c: c.post(SEARCH, content=b"", headers=JSON),
    "a wrong field type": lambda c: c.post(SEARCH, json={"query": "dune", "limit": "ten"}),
    "an unknown field": lambda c: c.post(SEARCH, json={"query": "dune", "nope": 1}),
    "a list body": lambda c: c.post(SEARCH, json=["dune"]),
    "an invalid name": lambda c: c.post("/v1/collections/b%20ad!/search", json={"query": "dune"}),
    "a missing collection": lambda c: c.post(
        "/v1/collections/missing/search", json={"query": "dune"}
    ),
    "an overloaded node": lambda c: c.post("/v1/collections/busy/search", json={"query": "x"}),
    "a bad query": lambda c: c.post("/v1/collections/bad/search", json={"query": "x"}),
    "a bug": lambda c: c.post("/v1/collections/broken/search", json={"query": "x"}),
    "a GET": lambda c: c.get(SEARCH),
    "a body over the limit": lambda c: c.post(
        SEARCH, content=b'{"query": "' + b"a" * (2 * 1024 * 1024) + b'"}', headers=JSON
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_without_keys_the_fast_path_answers_as_the_route(case: str) -> None:
    fast, route = TableNode(), TableNode()
    same_answer(CASES[case](client(fast, True)), CASES[case](client(route, False)))
    assert fast.searched == route.searched


KEYED: dict[str, dict[str, str]] = {
    "no key": JSON,
    "a wrong key": {**JSON, "api-key": "nope"},
    "a search key": SEARCH_KEY,
    "a read key": {**JSON, "api-key": "read-1"},
    "a bearer search key": {**JSON, "authorization": "Bearer search-1"},
    "a bearer in lower case": {**JSON, "authorization": "bearer search-1"},
    "a basic scheme": {**JSON, "authorization": "Basic search-1"},
    "a wrong key beside a right one": {
        **JSON,
        "api-key": "nope",
        "authorization": "Bearer search-1",
    },
}


@pytest.mark.parametrize("case", list(KEYED))
def test_with_keys_the_fast_path_grants_and_refuses_as_the_route(case: str) -> None:
    fast, route = TableNode(), TableNode()
    answers = [
        client(node, on, **KEYS).post(SEARCH, content=b'{"query": "dune"}', headers=KEYED[case])
        for node, on in ((fast, True), (route, False))
    ]
    same_answer(*answers)
    assert fast.searched == route.searched


def test_a_node_still_loading_leaves_the_search_to_the_route() -> None:
    """The route sends it to the search queue (no bus here: its error is the route's own)."""
    fast, route = TableNode(ready=False), TableNode(ready=False)
    same_answer(CASES["a search"](client(fast, True)), CASES["a search"](client(route, False)))
    assert fast.searched == route.searched == []


def test_a_search_served_fast_is_counted_as_the_search_route() -> None:
    test_client = client(TableNode(), True)
    assert CASES["a search"](test_client).status_code == 200
    metrics = next(m for m in test_client.app.user_middleware if m.cls is RequestMetrics)
    series = [(name, labels) for name, labels, _ in metrics.kwargs["recorder"].state()]
    assert (SEARCH_SECONDS.name, ["books"]) in series
    assert (HTTP_RESPONSES.name, ["200"]) in series
