"""Every 503 the api answers a client says why: the body's message, the X-Braid-Reason header,
one log line per reason per window (with how many were held back) and
braid_unavailable_total{reason}. The search node here is a stand-in that raises; the app, its
handlers and middlewares are the real ones."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from app.context import ApiContext
from app.http.shutdown import CancelledAs503
from app.http.unavailable import UnavailableAnswers
from app.main import create_app
from app.metrics.prometheus import render
from bench.common.scrape import promtool_problems
from core.enums import UnavailableReason
from core.errors import Unavailable
from core.metrics import UNAVAILABLE, Recorder
from core.metrics_publish import NodeState
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings
from core.throttle import LogThrottle

BEHIND = "this search node's replica has not yet applied the newest write; retry shortly"


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class BehindNode:
    """A search node whose replica is behind: every search is a 503."""

    ready = True

    def start(self) -> None: ...

    async def close(self) -> None: ...

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse:
        raise Unavailable(BEHIND, 3, UnavailableReason.REPLICA_BEHIND)


def counts(recorder: Recorder) -> dict[str, float]:
    return {
        labels[0]: value for name, labels, value in recorder.state() if name == UNAVAILABLE.name
    }


def app_with(node: BehindNode) -> tuple[TestClient, Recorder]:
    app = create_app(Settings())
    context = ApiContext(Settings(), None, None, None, None)  # type: ignore[arg-type]
    context.search = node
    app.state.context = context
    recorder = Recorder()
    app.state.unavailable = UnavailableAnswers(recorder)  # what braid_error records into
    return TestClient(app, raise_server_exceptions=False), recorder


def test_every_reason_is_a_series_from_zero() -> None:
    recorder = Recorder()
    UnavailableAnswers(recorder)
    assert counts(recorder) == {reason.value: 0 for reason in UnavailableReason}


def test_a_503_says_why_in_its_body_header_log_and_metric(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, recorder = app_with(BehindNode())
    with caplog.at_level(logging.WARNING, logger="app.http.unavailable"):
        answers = [
            client.post("/v1/collections/books/search", json={"query": "q"}) for _ in range(3)
        ]
    for answer in answers:
        assert answer.status_code == 503
        assert answer.json() == {"detail": BEHIND}
        assert answer.headers["retry-after"] == "3"
        assert answer.headers["x-braid-reason"] == "replica_behind"
    assert counts(recorder)["replica_behind"] == 3
    assert counts(recorder)["queue_full"] == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "app.http.unavailable"]
    assert lines == [f"503 replica_behind to POST /v1/collections/books/search: {BEHIND}"]


def test_the_log_holds_back_repeats_and_says_how_many(caplog: pytest.LogCaptureFixture) -> None:
    clock, recorder = Clock(), Recorder()
    answers = UnavailableAnswers(recorder, LogThrottle(10.0, clock))
    with caplog.at_level(logging.WARNING, logger="app.http.unavailable"):
        for at in (0.0, 1.0, 2.0, 3.0, 10.5):
            clock.now = at
            answers.answered(
                "POST", "/v1/collections/c/documents", UnavailableReason.QUEUE_FULL, "full"
            )
        answers.answered("GET", "/v1/collections", UnavailableReason.REDIS_DOWN, "redis down")
    assert [r.getMessage() for r in caplog.records] == [
        "503 queue_full to POST /v1/collections/c/documents: full",
        "503 queue_full to POST /v1/collections/c/documents: full "
        "(3 more queue_full 503s not logged since the last line)",
        "503 redis_down to GET /v1/collections: redis down",
    ]
    assert counts(recorder)["queue_full"] == 5 and counts(recorder)["redis_down"] == 1


def test_a_request_cut_off_by_a_stop_is_a_503_that_says_so() -> None:
    recorder = Recorder()

    async def cut_off(scope: Scope, receive: Receive, send: Send) -> None:
        raise asyncio.CancelledError

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    scope: dict[str, Any] = {"type": "http", "method": "GET", "path": "/v1/collections"}
    middleware = CancelledAs503(cut_off, UnavailableAnswers(recorder))
    asyncio.run(middleware(scope, receive, send))
    start = sent[0]
    assert start["status"] == 503
    assert (b"x-braid-reason", b"stopping") in start["headers"]
    assert b"retry" in sent[1]["body"]
    assert counts(recorder)["stopping"] == 1


def test_the_count_by_reason_is_exposed_to_prometheus() -> None:
    recorder = Recorder()
    answers = UnavailableAnswers(recorder)
    answers.answered("POST", "/p", UnavailableReason.NO_MODEL_HOLDER, "no holder; retry shortly")
    text = render(
        [NodeState("api-2", "api", 1_800_000_000.0, recorder.state())], [], 1_800_000_000.0
    )
    assert 'braid_unavailable_total{reason="no_model_holder",node="api-2",role="api"} 1\n' in text
    assert 'braid_unavailable_total{reason="queue_full",node="api-2",role="api"} 0\n' in text
    assert "# TYPE braid_unavailable_total counter\n" in text
    assert promtool_problems(text) == ""
