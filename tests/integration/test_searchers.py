"""Search processes (worker/searchd.py) with the embedded store: each serves searches from its own
replica, and none ever answers from an older state than a client was told about.

Its own stack with two searchers whose replicas apply each write 150 ms late
(BRAID_REPLICA_APPLY_DELAY_MS), so a search that did not wait for its replica would find the
version before. Which process served a search shows in the searchers' heartbeat records (Redis
hash `braid:searchers`: pid, searches served, replica position, copies taken).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from harness.stack import Stack
from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    keyword_collection,
    search_ids,
    wait_until,
)

SEARCHERS = 2
RESTART_S = 120.0
OPTIMIZE_AFTER = 200  # writes before the worker optimizes a shard


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    env = {
        "BRAID_SEARCHERS": str(SEARCHERS),
        "BRAID_REPLICA_APPLY_DELAY_MS": "150",
        "BRAID_OPTIMIZE_MIN_CHANGES": str(OPTIMIZE_AFTER),
    }
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


def searchers(board: redis.Redis) -> dict[str, dict[str, Any]]:
    return {k.decode(): json.loads(v) for k, v in board.hgetall("braid:searchers").items()}


def served(board: redis.Redis) -> dict[str, int]:
    return {index: state["searches"] for index, state in searchers(board).items()}


def sync_version(client: httpx.Client, name: str, doc_id: str, version: int) -> None:
    body = {
        "id": doc_id,
        "timestamp": f"2026-01-01T00:{version // 60:02d}:{version % 60:02d}Z",
        "content": f"lemon tart version{version}",
    }
    response = client.post(f"/v1/collections/{name}/documents/sync", json=body)
    assert response.status_code == 200, response.text


def found_version(client: httpx.Client, name: str, doc_id: str) -> str | None:
    response = client.post(f"/v1/collections/{name}/search", json={"query": "lemon tart"})
    assert response.status_code == 200, response.text
    hits = [hit for hit in response.json()["results"] if hit["id"] == doc_id]
    return hits[0]["content"] if hits else None


def test_a_sync_write_is_found_at_once_by_every_search_process(
    client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "ryw", keyword_collection())
    wait_until(lambda: len(searchers(board)) == SEARCHERS, timeout=30)
    before = served(board)
    for version in range(1, 13):
        sync_version(client, "ryw", "d", version)
        # Several searches right after the 200: they spread over both searchers (and each must
        # see this version, never the one before).
        with httpx.Client(base_url=str(client.base_url), timeout=90.0) as other:
            results = [found_version(other, "ryw", "d") for _ in range(4)]
        assert results == [f"lemon tart version{version}"] * 4
    # Every searcher answered some of them (the heartbeat reports within two seconds).
    wait_until(lambda: all(served(board).get(i, 0) > before.get(i, 0) for i in ("1", "2")))


def test_a_collection_made_and_dropped_is_seen_by_the_replicas_at_once(
    client: httpx.Client,
) -> None:
    create(client, "fresh", keyword_collection())
    sync_version(client, "fresh", "x", 1)
    for _ in range(4):
        assert found_version(client, "fresh", "x") == "lemon tart version1"
    assert client.delete("/v1/collections/fresh").status_code == 200
    for _ in range(4):
        response = client.post("/v1/collections/fresh/search", json={"query": "lemon"})
        assert response.status_code == 404, response.text
    # Made again under the same name: the replicas dropped the old one, so its document is gone.
    create(client, "fresh", keyword_collection())
    sync_version(client, "fresh", "y", 2)
    for _ in range(4):
        response = client.post("/v1/collections/fresh/search", json={"query": "lemon tart"})
        assert response.status_code == 200, response.text
        assert [hit["id"] for hit in response.json()["results"]] == ["y"]


class Load:
    """Searches in a loop from a few threads, keeping every status code."""

    def __init__(self, base_url: str, name: str, threads: int = 4) -> None:
        self.codes: list[int] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(base_url, name), daemon=True)
            for _ in range(threads)
        ]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=120)

    def _loop(self, base_url: str, name: str) -> None:
        with httpx.Client(base_url=base_url, timeout=90.0) as http:
            while not self._stop.is_set():
                response = http.post(f"/v1/collections/{name}/search", json={"query": "lemon"})
                self.codes.append(response.status_code)


def test_a_searcher_killed_under_load_loses_no_search_and_comes_back_current(
    stack: Stack, client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "crash", keyword_collection())
    sync_version(client, "crash", "k", 1)
    with Load(stack.base_url, "crash") as load:
        wait_until(lambda: len(load.codes) >= 50)
        old = stack.kill9("searcher:searcher-1")
        new = stack.wait_restarted("searcher:searcher-1", old, timeout=RESTART_S)
        # The new searcher-1 has its copy and takes searches again.
        wait_until(
            lambda: searchers(board)["1"]["pid"] == new and searchers(board)["1"]["searches"],
            RESTART_S,
        )
        sync_version(client, "crash", "k", 2)  # written while the new searcher-1 serves
        seen = len(load.codes)
        wait_until(lambda: len(load.codes) >= seen + 50)
    # The searches searcher-1 held when it died went back to the queue and were answered.
    assert set(load.codes) == {200}, sorted(set(load.codes))
    restarted = served(board)["1"]
    for _ in range(12):
        assert found_version(client, "crash", "k") == "lemon tart version2"
    wait_until(lambda: served(board)["1"] > restarted)


def test_a_worker_restart_makes_every_replica_copy_the_store_again(
    stack: Stack, client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "again", keyword_collection())
    sync_version(client, "again", "w", 1)
    copies = {index: state["copies"] for index, state in searchers(board).items()}
    old = stack.kill9("worker")
    stack.wait_restarted("worker", old, timeout=RESTART_S)
    wait_until(lambda: all(searchers(board)[i]["copies"] > copies[i] for i in copies), RESTART_S)
    sync_version(client, "again", "w", 2)
    for _ in range(8):
        assert found_version(client, "again", "w") == "lemon tart version2"


def test_replicas_copy_the_shard_the_worker_optimized_instead_of_optimizing_their_own(
    client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "optimized", keyword_collection())
    copies = {index: state["copies"] for index, state in searchers(board).items()}
    documents = [doc(f"o{i}", f"fig chutney jar{i}") for i in range(OPTIMIZE_AFTER + 100)]
    for start in range(0, len(documents), 100):
        response = client.post(
            "/v1/collections/optimized/documents/bulk",
            json={"documents": documents[start : start + 100]},
        )
        assert response.status_code == 200, response.text
    wait_until(lambda: doc_count(client, "optimized") == len(documents))
    wait_until(lambda: all(searchers(board)[i]["copies"] > copies[i] for i in copies), RESTART_S)
    for _ in range(4):  # whichever searcher answers holds every document
        assert search_ids(client, "optimized", "jar250")[:1] == ["o250"]
