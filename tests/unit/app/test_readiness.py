"""Readiness is judged from what was observed: 200, 218 or 503 as API.md says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.services.readiness import INDEX_QUEUES, QUERY_QUEUES, Observed, judge
from core.delivery import QueueState
from core.enums import EmbedKind
from core.heartbeats import WorkerBeat
from core.names import (
    DOCUMENTS_QUEUE,
    REPLICATION_EXCHANGE,
    SEARCH_QUEUE,
    WORKER_RPC_QUEUE,
    embed_queue,
    holder_queue,
)
from core.watchdog import ProgressRecord, Stall

NOW = 1_000_000.0
ALL_CONSUMED = {q: QueueState(0, 1) for q in (*INDEX_QUEUES, *QUERY_QUEUES)}
HEALTHY = Observed(
    broker_connected=True,
    worker_beat=WorkerBeat(ts=NOW - 1, store=True, broker=True),
    queues=ALL_CONSUMED,
    holder_alive=True,
    now=NOW,
)


def test_everything_up_is_ready() -> None:
    state, status = judge(HEALTHY)
    assert status == 200 and state.ready and state.index and state.query


@pytest.mark.parametrize(("queue", "side"), [(DOCUMENTS_QUEUE, "index"), (SEARCH_QUEUE, "query")])
def test_one_side_without_a_consumer_is_218(queue: str, side: str) -> None:
    seen = replace(HEALTHY, queues={**ALL_CONSUMED, queue: QueueState(7, 0)})
    state, status = judge(seen)
    assert status == 218 and not state.ready
    assert getattr(state, side) is False
    assert state.database and state.rabbitmq


@pytest.mark.parametrize(
    "change",
    [
        {"broker_connected": False},
        {"worker_beat": None},
        {"worker_beat": WorkerBeat(ts=NOW - 60, store=True)},  # the worker stopped beating
        {"worker_beat": WorkerBeat(ts=NOW, store=False)},  # the store does not answer
        {"holder_alive": False},
        {"queues": {q: None for q in ALL_CONSUMED}},  # the broker lost every queue
        {"queues": {q: QueueState(0, 0) for q in ALL_CONSUMED}},  # nobody consumes
    ],
)
def test_a_side_down_is_503(change: dict[str, object]) -> None:
    state, status = judge(replace(HEALTHY, **change))  # type: ignore[arg-type]
    assert status == 503 and not state.ready


def _stalled_on(*sources: str) -> dict[str, ProgressRecord]:
    stalls = [Stall(source=s, ready=40, idle_s=31.0) for s in sources]
    return {"some-process": ProgressRecord(ts=NOW - 1, stalled=stalls)}


@pytest.mark.parametrize(
    ("source", "side"),
    [
        (DOCUMENTS_QUEUE, "index"),
        (WORKER_RPC_QUEUE, "index"),
        (holder_queue(EmbedKind.DOCUMENT), "index"),
        (embed_queue(EmbedKind.DOCUMENT), "index"),
        (SEARCH_QUEUE, "query"),
        (holder_queue(EmbedKind.QUERY), "query"),
        (REPLICATION_EXCHANGE, "query"),
    ],
)
def test_a_stalled_consumer_stops_its_side_218(source: str, side: str) -> None:
    """Consumed, connected, beating, and still taking nothing: not ready."""
    state, status = judge(replace(HEALTHY, progress=_stalled_on(source)))
    assert status == 218 and not state.ready
    assert getattr(state, side) is False
    assert getattr(state, "query" if side == "index" else "index") is True


@pytest.mark.parametrize(
    "sources",
    [(DOCUMENTS_QUEUE, SEARCH_QUEUE), ("braid.something.new",)],
)
def test_stalls_on_both_sides_or_an_unknown_queue_are_503(sources: tuple[str, ...]) -> None:
    state, status = judge(replace(HEALTHY, progress=_stalled_on(*sources)))
    assert status == 503 and not state.index and not state.query


def test_a_process_with_no_stall_leaves_readiness_at_200() -> None:
    _, status = judge(replace(HEALTHY, progress=_stalled_on()))
    assert status == 200
