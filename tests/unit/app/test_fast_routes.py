"""The fast paths answer exactly as the routes do: every request below gets the same status,
body and answer headers from the assembled app with FastRoutes and without it, whether the fast
path serves it or hands it to the route, and does the same work.

The search node, the catalog, the ledger and the broker here are stand-ins that answer from a
table and keep what they were given (no engine, no stack): what is compared is the HTTP around
them, which is all the fast paths replace. The integration suite drives the real ones through
the fast paths (every async upsert and search it sends)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from app.context import ApiContext
from app.fast_routes import FastRoutes
from app.main import create_app
from app.metrics.sampler import RequestMetrics
from core.errors import CollectionNotFound, InvalidInput, Unavailable
from core.ledger import QueuedWrite
from core.messages import DocumentMessage
from core.metrics import HTTP_RESPONSES, SEARCH_SECONDS
from core.schemas.collection import CollectionConfig
from core.schemas.common import MAX_JSON_DEPTH
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

    async def config(self, collection: str) -> CollectionConfig:
        return await TableCatalog().require(collection)


class TableCatalog:
    """Knows every collection but `missing`; `books` holds a vector for custom vectors."""

    async def require(self, name: str) -> CollectionConfig:
        if name == "missing":
            raise CollectionNotFound()
        return CollectionConfig.model_validate(
            {"vectors": [{"name": "kw", "type": "keyword", "index_fields": ["content"]}]}
        )


class Ledger:
    def __init__(self) -> None:
        self.queued: list[tuple[str, str]] = []
        self.finished: list[tuple[str, str]] = []

    async def enqueue(self, collection: str, items: list[QueuedWrite]) -> None:
        self.queued += [(collection, item.doc_id) for item in items]

    async def finish(self, collection: str, items: list[tuple[str, str]]) -> None:
        self.finished += [(collection, doc_id) for _, doc_id in items]


class Broker:
    """Confirms every publish but those to the collection `full` (a 503, as a full queue)."""

    def __init__(self) -> None:
        self.published: list[tuple[str, str]] = []

    async def publish(self, queue: str, message: DocumentMessage, **_: Any) -> None:
        if message.collection == "full":
            raise Unavailable("the document queue is full; retry later", 2)
        self.published += [(message.collection, w.doc_id) for w in message.writes]


@dataclass
class Stand:
    """What the app's context holds in these tests; compared after each request."""

    node: TableNode = field(default_factory=TableNode)
    ledger: Ledger = field(default_factory=Ledger)
    broker: Broker = field(default_factory=Broker)

    def done(self) -> tuple[object, ...]:
        searched = [(c, q.model_dump()) for c, q in self.node.searched]
        return searched, self.ledger.queued, self.ledger.finished, self.broker.published


def client(node: TableNode | Stand, fast: bool, **settings: Any) -> TestClient:
    """The assembled app (no lifespan), with or without the fast paths."""
    stand = node if isinstance(node, Stand) else Stand(node)
    app = create_app(Settings(**settings))
    if not fast:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not FastRoutes]
    context = ApiContext(
        Settings(**settings),
        stand.broker,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        TableCatalog(),  # type: ignore[arg-type]
        stand.ledger,  # type: ignore[arg-type]
    )
    context.search = stand.node
    app.state.context = context
    return TestClient(app, raise_server_exceptions=False)


def same_answer(fast: Response, route: Response) -> None:
    assert fast.status_code == route.status_code, (fast.text, route.text)
    assert fast.content == route.content
    for header in (
        "content-type",
        "content-length",
        "retry-after",
        "x-braid-reason",
        "www-authenticate",
    ):
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


UPSERT = "/v1/collections/books/documents"
DOC = {"id": "d1", "timestamp": "2026-01-01T00:00:00Z", "content": "dune"}
UPSERTS: dict[str, Request] = {
    "an upsert": lambda c: c.post(UPSERT, json=DOC),
    "json with a charset": lambda c: c.post(
        UPSERT,
        content=json.dumps(DOC).encode(),
        headers={"content-type": "application/json; charset=utf-8"},
    ),
    "no content type": lambda c: c.post(UPSERT, content=json.dumps(DOC).encode()),
    "malformed json": lambda c: c.post(UPSERT, content=b'{"id": ', headers=JSON),
    "a duplicate key": lambda c: c.post(
        UPSERT, content=b'{"id": "a", "id": "b", "timestamp": "2026-01-01T00:00:00Z"}', headers=JSON
    ),
    "no timestamp": lambda c: c.post(UPSERT, json={"id": "d1", "content": "dune"}),
    "a timestamp with an offset": lambda c: c.post(
        UPSERT, json={**DOC, "timestamp": "2026-01-01T00:00:00+02:00"}
    ),
    "a bad tag": lambda c: c.post(UPSERT, json={**DOC, "tags": ["a|b"]}),
    "an unknown field": lambda c: c.post(UPSERT, json={**DOC, "nope": 1}),
    "a vector the collection lacks": lambda c: c.post(
        UPSERT, json={**DOC, "custom_vectors": [{"vector_name": "x", "vector": [1.0]}]}
    ),
    "an invalid name": lambda c: c.post("/v1/collections/b%20ad!/documents", json=DOC),
    "a missing collection": lambda c: c.post("/v1/collections/missing/documents", json=DOC),
    "a full queue": lambda c: c.post("/v1/collections/full/documents", json=DOC),
    "a body over the limit": lambda c: c.post(
        UPSERT, content=b'{"content": "' + b"a" * (64 * 1024 * 1024) + b'"}', headers=JSON
    ),
}


WITHOUT_KEYS = {f"search, {k}": v for k, v in CASES.items()} | {
    f"upsert, {k}": v for k, v in UPSERTS.items()
}


@pytest.mark.parametrize("case", list(WITHOUT_KEYS))
def test_without_keys_the_fast_paths_answer_and_work_as_the_routes(case: str) -> None:
    fast, route = Stand(), Stand()
    same_answer(WITHOUT_KEYS[case](client(fast, True)), WITHOUT_KEYS[case](client(route, False)))
    assert fast.done() == route.done()


@pytest.mark.parametrize(
    ("key", "queued"), [("admin-1", True), ("read-1", False), ("search-1", False), (None, False)]
)
def test_only_an_admin_key_may_upsert_on_the_fast_path(key: str | None, queued: bool) -> None:
    headers = {**JSON, "api-key": key} if key else JSON
    stands = Stand(), Stand()
    answers = [
        client(stand, on, **KEYS).post(UPSERT, content=json.dumps(DOC).encode(), headers=headers)
        for stand, on in zip(stands, (True, False), strict=True)
    ]
    same_answer(*answers)
    assert stands[0].done() == stands[1].done()
    assert bool(stands[0].broker.published) is queued


CONDITION = b'{"key": "n", "op": "eq", "value": 1}'


def _filter(operator: str, depth: int) -> bytes:
    """A metadata_filter of `depth` nested and (object and list: two JSON levels each) or not."""
    opening, closing = (b'{"and": [', b"]}") if operator == "and" else (b'{"not": ', b"}")
    return opening * depth + CONDITION + closing * depth


def _search(metadata_filter: bytes) -> Request:
    body = b'{"query": "dune", "metadata_filter": ' + metadata_filter + b"}"
    return lambda c: c.post(SEARCH, content=body, headers=JSON)


def _upsert(metadata: bytes) -> Request:
    body = json.dumps(DOC).encode()[:-1] + b', "metadata": {"m": ' + metadata + b"}}"
    return lambda c: c.post(UPSERT, content=body, headers=JSON)


def _text(expression: str) -> bytes:
    return json.dumps(expression).encode()


# (request, the limit its answer names); each nests past a limit.
BODY_LIMIT = f"at most {MAX_JSON_DEPTH} levels"


def _arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


TOO_DEEP: dict[str, tuple[Request, str]] = {
    "and 33 deep (68 JSON levels)": (_search(_filter("and", 33)), "at most 32 levels"),
    "and 1,000 deep": (_search(_filter("and", 1_000)), BODY_LIMIT),
    "and 5,000 deep": (_search(_filter("and", 5_000)), BODY_LIMIT),
    "not 33 deep": (_search(_filter("not", 33)), "at most 32 levels"),
    "( 33 deep": (_search(_text("(" * 33 + "n = 1" + ")" * 33)), "at most 32 levels"),
    "( 5,000 deep": (_search(_text("(" * 5_000 + "n = 1" + ")" * 5_000)), "at most 32 levels"),
    "NOT 4,000 deep": (_search(_text("NOT " * 4_000 + "n = 1")), "at most 32 levels"),
    "a search 73 deep": (_search(_arrays(MAX_JSON_DEPTH)), BODY_LIMIT),
    "a search 100,000 deep": (_search(b"[" * 99_999 + b"]" * 99_999), BODY_LIMIT),
    "metadata 73 deep": (_upsert(_arrays(MAX_JSON_DEPTH - 1)), BODY_LIMIT),
    "metadata 100,000 deep": (_upsert(b"[" * 99_998 + b"]" * 99_998), BODY_LIMIT),
}


@pytest.mark.parametrize("case", list(TOO_DEEP))
def test_a_body_past_a_depth_limit_is_the_same_422_on_both_paths(case: str) -> None:
    send, limit = TOO_DEEP[case]
    fast, route = Stand(), Stand()
    answers = send(client(fast, True)), send(client(route, False))
    same_answer(*answers)
    assert fast.done() == route.done() == Stand().done()  # nothing searched or queued
    assert answers[0].status_code == 422, answers[0].text[:300]
    assert limit in answers[0].text
    assert all(error["input"] == {} for error in answers[0].json()["detail"])  # nothing echoed


@pytest.mark.parametrize(
    "send",
    [
        _search(_filter("and", 31)),  # 64 JSON levels with the body and the condition
        _search(_filter("not", 32)),
        _search(_text("(" * 32 + "n = 1" + ")" * 32)),
        _upsert(b"[" * 62 + b"]" * 62),
    ],
)
def test_a_body_at_the_depth_limits_is_served_fast(send: Request) -> None:
    fast = Stand()
    assert send(client(fast, True)).status_code == 200
    assert fast.node.searched or fast.broker.published
