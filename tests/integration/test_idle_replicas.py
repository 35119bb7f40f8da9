"""Search-idle replicas: a search node no search has used for BRAID_REPLICA_IDLE_S drops the
stream of writes instead of applying it, and the next search it gets waits for a fresh copy, so
it finds every write the idle time dropped (store/replication/replica.py).

Its own stack with two api processes and a one-second idle time. The search nodes' heartbeat
records (Redis hash `braid:searchers`) say whether each replica is idle, the position it holds
and the copies it has taken; a search on a fresh connection lands on either api process.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import redis

from core.heartbeats import SearchNodeBeat
from harness.stack import Stack
from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    keyword_collection,
    search_nodes,
    wait_until,
)

SEARCHERS = 2
IDLE_S = 1
LOADED_S = 120.0


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    env = {"BRAID_API_PROCESSES": str(SEARCHERS), "BRAID_REPLICA_IDLE_S": str(IDLE_S)}
    with Stack(env) as running:
        yield running


@pytest.fixture(scope="module")
def client(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.base_url, timeout=90.0) as http:
        yield http


@pytest.fixture(scope="module")
def board(stack: Stack) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(stack.redis_url)
    yield connection
    connection.close()


def all_idle(board: redis.Redis) -> dict[str, SearchNodeBeat] | None:
    beats = search_nodes(board)
    if len(beats) == SEARCHERS and all(b.idle and b.position for b in beats.values()):
        return beats
    return None


def bulk(client: httpx.Client, name: str, first: int, count: int) -> None:
    documents = [doc(f"o{i}", f"fig chutney jar{i}") for i in range(first, first + count)]
    for start in range(0, count, 100):
        body = {"documents": documents[start : start + 100]}
        response = client.post(f"/v1/collections/{name}/documents/bulk", json=body)
        assert response.status_code == 200, response.text


def top_hit_anew(client: httpx.Client, name: str, query: str) -> str | None:
    """The first hit of a search sent on a connection of its own (either api process)."""
    with httpx.Client(base_url=str(client.base_url), timeout=90.0) as fresh:
        response = fresh.post(f"/v1/collections/{name}/search", json={"query": query})
    assert response.status_code == 200, response.text
    hits = response.json()["results"]
    return hits[0]["id"] if hits else None


def test_idle_replicas_drop_the_stream_and_a_search_finds_every_indexed_write(
    client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "jars", keyword_collection())
    bulk(client, "jars", 0, 200)
    wait_until(lambda: doc_count(client, "jars") == 200)
    # No search for a second: every replica drops the stream (the worker's ticks show it).
    idle = wait_until(lambda: all_idle(board), LOADED_S)
    bulk(client, "jars", 200, 300)
    wait_until(lambda: doc_count(client, "jars") == 500)
    dropped = wait_until(lambda: all_idle(board), LOADED_S)
    # Written and indexed, yet applied by no replica: nobody searched.
    assert {i: b.position for i, b in dropped.items()} == {i: b.position for i, b in idle.items()}

    def every_node_searched_and_current() -> bool:
        # Each search, whichever node it lands on, waits for that node's fresh copy and finds
        # a document the stream brought while the node was idle.
        assert top_hit_anew(client, "jars", "jar499") == "o499"
        beats = search_nodes(board)
        return all(beats[i].copies > idle[i].copies for i in idle)

    wait_until(every_node_searched_and_current, LOADED_S)
