"""Where an api sends a search (app/services/search.py): to its own search node once that is
ready, to the search queue before (or with none), the queue's answer passed on as it came."""

from __future__ import annotations

from typing import Any, cast

from app.context import ApiContext
from app.services.search import local_search, search
from core.bus import Bus
from core.messages import SearchRequest
from core.names import SEARCH_QUEUE
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings

QUERY = SearchQuery(query="dune")
NODE_ANSWER = SearchResponse(results=[], facet_counts=None, query_time_ms=0.5)
QUEUE_ANSWER = b'{"results":[],"facet_counts":null,"query_time_ms":9.0}'


class Node:
    def __init__(self, ready: bool) -> None:
        self.ready = ready
        self.searched: list[str] = []

    def start(self) -> None: ...

    async def close(self) -> None: ...

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse:
        self.searched.append(collection)
        return NODE_ANSWER


class Queue:
    """The bus: keeps each call to a queue and answers with the queue's raw JSON."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, float]] = []

    async def call_raw(self, queue: str, request: Any, timeout_s: float) -> bytes:
        self.calls.append((queue, request, timeout_s))
        return QUEUE_ANSWER


def context(node: Node | None) -> tuple[ApiContext, Queue]:
    bus = Queue()
    settings = Settings(rpc_timeout_s=7)
    ctx = ApiContext(settings, cast(Bus, bus), None, None, None)  # type: ignore[arg-type]
    ctx.search = node
    return ctx, bus


async def test_a_ready_node_answers_here_and_the_queue_is_not_asked() -> None:
    node = Node(ready=True)
    ctx, bus = context(node)
    assert local_search(ctx) is node
    assert await search(ctx, "books", QUERY) == NODE_ANSWER.model_dump_json().encode()
    assert node.searched == ["books"] and bus.calls == []


async def test_a_node_still_loading_sends_the_search_to_the_queue() -> None:
    node = Node(ready=False)
    ctx, bus = context(node)
    assert local_search(ctx) is None
    assert await search(ctx, "books", QUERY) == QUEUE_ANSWER  # as it came, not read again
    request = SearchRequest(collection="books", query=QUERY)
    assert bus.calls == [(SEARCH_QUEUE, request, 7)] and node.searched == []


async def test_an_api_without_a_node_sends_every_search_to_the_queue() -> None:
    ctx, bus = context(None)
    assert local_search(ctx) is None
    assert await search(ctx, "books", QUERY) == QUEUE_ANSWER
    assert [queue for queue, _, _ in bus.calls] == [SEARCH_QUEUE]
