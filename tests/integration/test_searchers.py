"""Search processes with the embedded store: each api process answers searches from its own
replica (search/node.py), and none ever answers from an older state than a client was told
about.

Its own stack with two api processes whose replicas apply each write 150 ms late
(BRAID_REPLICA_APPLY_DELAY_MS), so a search that did not wait for its replica would find the
version before. Which process served a search shows in the search nodes' heartbeat records
(Redis hash `braid:searchers`, by api index: pid, searches served, replica position, copies
taken). The kernel spreads new connections over the api processes (SO_REUSEPORT), so a search
sent on a fresh connection lands on either.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
import redis

from harness.stack import Stack
from store.edge.shard import SPARSE_MERGE_FROM
from tests.integration.helpers import (
    create,
    doc,
    doc_count,
    keyword_collection,
    queue_total,
    search_ids,
    search_nodes,
    wait_until,
)

SEARCHERS = 2  # api processes, each with its search node
LOAD_THREADS = 4
RESTART_S = 120.0
OPTIMIZE_AFTER = 200  # writes before the worker optimizes a shard


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    env = {
        "BRAID_API_PROCESSES": str(SEARCHERS),
        "BRAID_REPLICA_APPLY_DELAY_MS": "150",
        "BRAID_OPTIMIZE_MIN_CHANGES": str(OPTIMIZE_AFTER),
        # These tests watch the replicas apply the stream between searches; idle replicas,
        # which drop it until the next search, have a module of their own (test_idle_replicas).
        "BRAID_REPLICA_IDLE_S": "3600",
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


def loaded(board: redis.Redis) -> set[str]:
    """The api processes whose search node holds a replica (the others send searches on)."""
    return {index for index, state in search_nodes(board).items() if state.position}


def served(board: redis.Redis) -> dict[str, int]:
    return {index: state.searches for index, state in search_nodes(board).items()}


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


def found_anew(client: httpx.Client, name: str, doc_id: str) -> str | None:
    """`found_version` on a connection of its own, so it may land on any api process."""
    with httpx.Client(base_url=str(client.base_url), timeout=90.0) as fresh:
        return found_version(fresh, name, doc_id)


def test_a_sync_write_is_found_at_once_by_every_search_process(
    client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "ryw", keyword_collection())
    wait_until(lambda: len(loaded(board)) == SEARCHERS, timeout=RESTART_S)
    before = served(board)
    for version in range(1, 13):
        sync_version(client, "ryw", "d", version)
        # Several searches right after the 200, each on a new connection: they spread over both
        # api processes (and each must see this version, never the one before).
        results = [found_anew(client, "ryw", "d") for _ in range(4)]
        assert results == [f"lemon tart version{version}"] * 4
    # Every search node answered some of them (the heartbeat reports within two seconds).
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


def test_a_collection_made_again_with_another_config_is_searched_with_it_at_once(
    client: httpx.Client, board: redis.Redis
) -> None:
    """Search nodes keep each collection's parsed config until the worker marks a catalog
    change (store/replication/marks.py): one that kept the old config would ask the new shard
    for the old vector."""
    create(client, "remade", keyword_collection())
    sync_version(client, "remade", "x", 1)
    wait_until(lambda: len(loaded(board)) == SEARCHERS, timeout=RESTART_S)
    before = served(board)
    while not all(served(board).get(i, 0) > before.get(i, 0) for i in ("1", "2")):
        assert found_anew(client, "remade", "x") == "lemon tart version1"  # both keep the config
    assert client.delete("/v1/collections/remade").status_code == 200
    other = {"vectors": [{"name": "words", "type": "full_text", "index_fields": ["content"]}]}
    create(client, "remade", other)
    sync_version(client, "remade", "y", 2)
    after = served(board)
    while not all(served(board).get(i, 0) > after.get(i, 0) for i in ("1", "2")):
        assert found_anew(client, "remade", "y") == "lemon tart version2"  # on every process


def test_a_collection_made_again_with_another_config_checks_writes_against_it_at_once(
    client: httpx.Client, board: redis.Redis
) -> None:
    """An api process checks an async upsert against the config its search node keeps until the
    worker marks a catalog change: one that kept the old config would take a document the new
    one refuses. Each round is one connection, so one process: its upsert, then a search, which
    shows in that process's count of searches served."""
    year = {"metadata": {"year": "soon"}}

    def upsert_on_each_process(expected: int) -> None:
        before = served(board)
        while not all(served(board).get(i, 0) > before.get(i, 0) for i in ("1", "2")):
            with httpx.Client(base_url=str(client.base_url), timeout=90.0) as fresh:
                response = fresh.post(
                    "/v1/collections/checked/documents", json=doc("y", "lemon tart", **year)
                )
                assert response.status_code == expected, response.text
                search_ids(fresh, "checked", "lemon tart")  # counted as this process's

    create(client, "checked", keyword_collection())
    wait_until(lambda: len(loaded(board)) == SEARCHERS, timeout=RESTART_S)
    upsert_on_each_process(200)  # no index on `year`: any value; both processes keep the config
    assert client.delete("/v1/collections/checked").status_code == 200
    indexed = {**keyword_collection(), "metadata_indexes": [{"key": "year", "type": "integer"}]}
    create(client, "checked", indexed)
    upsert_on_each_process(400)  # `year` is an integer now, on every process


def test_unchanged_texts_resent_with_new_tags_reach_every_search_process(
    client: httpx.Client,
) -> None:
    """A re-sent document whose text did not change is a payload-only overwrite: the worker
    applies a batch of them as one write, and the replicas must apply each document's own
    payload."""
    create(client, "retag", keyword_collection())
    ids = [f"r{i}" for i in range(6)]
    first = [doc(i, f"lemon tart number {i}", 1, tags=["old"]) for i in ids]
    again = [doc(i, f"lemon tart number {i}", 2, tags=[f"new-{i}"]) for i in ids]
    for documents in (first, again):  # one request each: the worker takes it in one batch or few
        body = {"documents": documents}
        response = client.post("/v1/collections/retag/documents/bulk", json=body)
        assert response.status_code == 200, response.text
        wait_until(lambda: queue_total(client, "retag") == 0)
    sync_version(client, "retag", "marker", 1)  # the replicas hold all before it, once answered
    expected = {f"new-{i}": [i] for i in ids} | {"old": []}
    for tag, found in expected.items():
        body = {"query": "lemon tart", "document_tags": [tag]}
        with httpx.Client(base_url=str(client.base_url), timeout=90.0) as fresh:
            for _ in range(2):  # two searches a connection, a new connection for each tag
                response = fresh.post("/v1/collections/retag/search", json=body)
                assert response.status_code == 200, response.text
                assert [hit["id"] for hit in response.json()["results"]] == found


class Load:
    """Searches in a loop from a few threads, keeping every status code, and counting the
    searches whose connection dropped (each thread reconnects and goes on)."""

    def __init__(self, base_url: str, name: str, threads: int = LOAD_THREADS) -> None:
        self.codes: list[int] = []
        self.dropped = 0
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
        while not self._stop.is_set():
            with httpx.Client(base_url=base_url, timeout=90.0) as http:
                try:
                    while not self._stop.is_set():
                        response = http.post(
                            f"/v1/collections/{name}/search", json={"query": "lemon"}
                        )
                        self.codes.append(response.status_code)
                except httpx.TransportError:  # the process holding the connection died
                    self.dropped += 1


def test_a_search_process_killed_under_load_loses_only_searches_in_flight(
    stack: Stack, client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "crash", keyword_collection())
    sync_version(client, "crash", "k", 1)
    with Load(stack.base_url, "crash") as load:
        wait_until(lambda: len(load.codes) >= 50)
        old = stack.kill9("api:api-1")
        new = stack.wait_restarted("api:api-1", old, timeout=RESTART_S)
        # The new api-1 has its copy (it sent its searches on until then).
        wait_until(lambda: search_nodes(board)["1"].pid == new and "1" in loaded(board), RESTART_S)
        sync_version(client, "crash", "k", 2)  # written while the new api-1 serves
        seen = len(load.codes)
        wait_until(lambda: len(load.codes) >= seen + 50)
    # Every search answered was answered well; the only ones lost were those in flight on the
    # killed process's connections, at most one per thread.
    assert set(load.codes) == {200}, sorted(set(load.codes))
    assert load.dropped <= LOAD_THREADS
    restarted = served(board)["1"]

    def current_on_new_process() -> bool:
        assert found_anew(client, "crash", "k") == "lemon tart version2"
        return served(board)["1"] > restarted

    wait_until(current_on_new_process, RESTART_S)


def test_a_worker_restart_makes_every_replica_copy_the_store_again(
    stack: Stack, client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "again", keyword_collection())
    sync_version(client, "again", "w", 1)
    copies = {index: state.copies for index, state in search_nodes(board).items()}
    old = stack.kill9("worker")
    stack.wait_restarted("worker", old, timeout=RESTART_S)
    wait_until(lambda: all(search_nodes(board)[i].copies > copies[i] for i in copies), RESTART_S)
    sync_version(client, "again", "w", 2)
    for _ in range(8):
        assert found_version(client, "again", "w") == "lemon tart version2"


def test_replicas_copy_the_shard_the_worker_optimized_instead_of_optimizing_their_own(
    client: httpx.Client, board: redis.Redis
) -> None:
    create(client, "optimized", keyword_collection())
    copies = {index: state.copies for index, state in search_nodes(board).items()}
    # A keyword shard is optimized when it has doubled, from SPARSE_MERGE_FROM × OPTIMIZE_AFTER.
    written = SPARSE_MERGE_FROM * OPTIMIZE_AFTER + 100
    documents = [doc(f"o{i}", f"fig chutney jar{i}") for i in range(written)]
    for start in range(0, len(documents), 100):
        response = client.post(
            "/v1/collections/optimized/documents/bulk",
            json={"documents": documents[start : start + 100]},
        )
        assert response.status_code == 200, response.text
    wait_until(lambda: doc_count(client, "optimized") == len(documents))
    wait_until(lambda: all(search_nodes(board)[i].copies > copies[i] for i in copies), RESTART_S)
    for _ in range(4):  # whichever searcher answers holds every document
        assert search_ids(client, "optimized", "jar250")[:1] == ["o250"]
