"""An api's search node (search/node.py): not ready before its replica's first copy,
what it answers while loading and behind, when it starts consuming the search queue, its beat,
and close. The bus, Redis, the replica, the catalog and the query pipeline are stand-ins; the marks
are the real mapped file the worker writes, in a temporary folder. Every wait is on an event of
a stand-in, bounded by a timeout that only a broken node reaches."""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.bus import Bus
from core.enums import UnavailableReason
from core.errors import Unavailable
from core.heartbeats import parse_search_nodes
from core.messages import SearchRequest
from core.metrics import Recorder
from core.names import SEARCH_QUEUE, RedisKeys
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings
from search import node as search_node_module
from search.node import SearchNode
from store.protocol import StoreReader
from store.replication.marks import Marks
from store.replication.replica import Replica
from store.replication.replicator import Position

QUERY = SearchQuery(query="dune")
ANSWER = SearchResponse(results=[], facet_counts=None, query_time_ms=0.0)
API_INDEX = 3
NEWEST = Position(1, 5)
BOUND_S = 2.0  # what a wait may take before the node is held broken; none comes near it


class Served(BaseModel):
    """The search queue as the node asked the bus to serve it."""

    queue: str
    request_type: str
    concurrency: int
    priority: int
    ready_then: bool  # whether the node could answer when it began consuming


class FakeBus:
    """Records what the node consumes and when it stops; `log` keeps close's order."""

    def __init__(self) -> None:
        self.node: SearchNode | None = None
        self.served: list[Served] = []
        self.handler: Callable[[SearchRequest], Awaitable[BaseModel]] | None = None
        self.serving = asyncio.Event()
        self.log: list[str] = []

    async def serve(
        self,
        queue: str,
        request_type: type[Any],
        handler: Callable[[SearchRequest], Awaitable[BaseModel]],
        concurrency: int,
        priority: int = 0,
    ) -> None:
        assert self.node is not None
        self.served.append(
            Served(
                queue=queue,
                request_type=request_type.__name__,
                concurrency=concurrency,
                priority=priority,
                ready_then=self.node.ready,
            )
        )
        self.handler = handler
        self.serving.set()

    async def cancel_consumers(self) -> None:
        self.log.append("cancel consumers")

    async def drain_handlers(self, timeout_s: float) -> None:
        self.log.append(f"drain handlers {timeout_s}")


class FakeRedis:
    """The searchers hash: each beat written, and the fields deleted."""

    def __init__(self, log: list[str], fail_delete: bool = False) -> None:
        self.searchers: dict[bytes | str, bytes | str] = {}
        self.beats = 0
        self.beat = asyncio.Event()
        self._log = log
        self._fail_delete = fail_delete

    async def hset(self, key: str, field: str, value: str) -> int:
        assert key == RedisKeys.searchers()
        self.searchers[field] = value
        self.beats += 1
        self.beat.set()
        return 1

    async def hdel(self, key: str, field: str) -> int:
        assert key == RedisKeys.searchers()
        self._log.append(f"hdel {field}")
        if self._fail_delete:
            raise RedisError("connection lost")
        return int(self.searchers.pop(field, None) is not None)

    async def next_beat(self) -> dict[str, Any]:
        """The first beat written from now on, as a reader parses it."""
        self.beat.clear()
        async with asyncio.timeout(BOUND_S):
            await self.beat.wait()
        beats = parse_search_nodes(self.searchers)
        return beats[str(API_INDEX)].model_dump()


class LoadingReplica:
    """A replica whose first copy arrives (at `copied`) when the test lets it; caught up with
    any write at or before the position it holds, answering at once."""

    def __init__(self, copied: Position, log: list[str]) -> None:
        self.position: Position | None = None
        self.copies_taken = 0
        self.idle = False
        self.copied = copied
        self.entered = asyncio.Event()  # the node began loading
        self.release = asyncio.Event()  # the copy is in
        self.start_cancelled = False
        self.closed = False
        self._log = log

    async def start(self) -> None:
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.start_cancelled = True
            raise
        self.position = self.copied
        self.copies_taken += 1

    async def caught_up(self, visible: Position | None, timeout_s: float) -> bool:
        held = self.position
        return held is not None and (visible is None or visible <= held)

    async def close(self) -> None:
        self.closed = True
        self._log.append("replica close")


class ServerStore:
    """A Qdrant server's store, as a node without a replica holds it."""

    def __init__(self, log: list[str]) -> None:
        self._log = log

    async def close(self) -> None:
        self._log.append("store close")


class Recording:
    """The query pipeline: keeps the collections it searched."""

    def __init__(self, *args: object) -> None:
        self.searched: list[str] = []

    async def search(
        self, collection: str, query: SearchQuery, config: CollectionConfig
    ) -> SearchResponse:
        self.searched.append(collection)
        return ANSWER


class TableCatalog:
    def __init__(self, redis: object) -> None:
        pass

    async def require(self, name: str) -> CollectionConfig:
        return CollectionConfig.model_validate(
            {"vectors": [{"name": "kw", "type": "keyword", "index_fields": ["content"]}]}
        )


class Fixture:
    """A node over the stand-ins, with the worker's marks at `visible`."""

    def __init__(
        self,
        tmp_path: Path,
        pipelines: list[Recording],
        replica: bool = True,
        visible: tuple[int, int] | None = (1, 5),
        copied: Position = NEWEST,
        fail_delete: bool = False,
    ) -> None:
        self.settings = Settings(data_dir=tmp_path, api_index=API_INDEX, retry_after_s=3)
        self.worker_marks = Marks.open(self.settings.marks_path)
        if visible is not None:
            self.worker_marks.mark_visible(*visible)
        self.bus = FakeBus()
        self.log = self.bus.log
        self.redis = FakeRedis(self.log, fail_delete)
        self.replica = LoadingReplica(copied, self.log) if replica else None
        store = self.replica if self.replica is not None else ServerStore(self.log)
        self.node = SearchNode(
            self.settings,
            cast(Bus, self.bus),
            cast(Redis, self.redis),
            cast(Recorder, object()),
            cast(StoreReader, store),
            cast(Replica, self.replica) if self.replica is not None else None,
        )
        self.bus.node = self.node
        self.pipeline = pipelines[-1]  # the one the node built

    async def loading(self) -> None:
        """Return once the started node's replica is taking its first copy."""
        assert self.replica is not None
        async with asyncio.timeout(BOUND_S):
            await self.replica.entered.wait()

    async def loaded(self) -> None:
        """Let the replica's first copy in; return once the node consumes the queue."""
        assert self.replica is not None
        await self.loading()
        self.replica.release.set()
        async with asyncio.timeout(BOUND_S):
            await self.bus.serving.wait()


@pytest.fixture
def pipelines(monkeypatch: pytest.MonkeyPatch) -> list[Recording]:
    """The query pipelines the nodes built; the catalog a table; a node's gc.freeze left undone."""
    built: list[Recording] = []

    def pipeline(*args: object) -> Recording:
        built.append(Recording())
        return built[-1]

    monkeypatch.setattr(search_node_module, "QueryPipeline", pipeline)
    monkeypatch.setattr(search_node_module, "Catalog", TableCatalog)
    monkeypatch.setattr(gc, "freeze", lambda: None)
    return built


@pytest.fixture
def beat_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeat rewrites its record at every turn of the loop, not every 2 s."""
    monkeypatch.setattr(search_node_module, "SEARCH_NODE_BEAT_S", 0.0)


async def test_a_node_answers_503_starting_until_its_replicas_first_copy_is_loaded(
    tmp_path: Path, pipelines: list[Recording]
) -> None:
    built = Fixture(tmp_path, pipelines)
    node, replica = built.node, built.replica
    assert replica is not None
    assert not node.ready
    node.start()
    try:
        await built.loading()
        assert not node.ready  # loading
        with pytest.raises(Unavailable) as raised:
            await node.search("books", QUERY)
        assert raised.value.reason == UnavailableReason.STARTING
        assert raised.value.retry_after_s == 3
        assert built.pipeline.searched == []
        await built.loaded()
        assert node.ready
        assert await node.search("books", QUERY) == ANSWER
        assert built.pipeline.searched == ["books"]
    finally:
        await node.close()


async def test_it_consumes_the_search_queue_only_once_ready_and_ahead_of_the_worker(
    tmp_path: Path, pipelines: list[Recording]
) -> None:
    built = Fixture(tmp_path, pipelines)
    node, replica = built.node, built.replica
    assert replica is not None
    node.start()
    try:
        await built.loading()
        assert built.bus.served == []  # the worker serves the queue while this node loads
        await built.loaded()
        assert built.bus.served == [
            Served(
                queue=SEARCH_QUEUE,
                request_type="SearchRequest",
                concurrency=32,
                priority=10,  # the worker consumes at 0: the queue comes here first
                ready_then=True,
            )
        ]
        assert built.bus.handler is not None
        queued = SearchRequest(collection="films", query=QUERY)
        assert await built.bus.handler(queued) == ANSWER  # the same door as the fast path
        assert built.pipeline.searched == ["films"]
    finally:
        await node.close()


async def test_a_loaded_node_behind_the_newest_acknowledged_write_answers_503_not_older_state(
    tmp_path: Path, pipelines: list[Recording]
) -> None:
    built = Fixture(tmp_path, pipelines, visible=(1, 4), copied=Position(1, 4))
    node, replica = built.node, built.replica
    assert replica is not None
    node.start()
    try:
        await built.loaded()
        assert await node.search("books", QUERY) == ANSWER
        built.worker_marks.mark_visible(1, 5)  # a client was told 1:5 succeeded
        with pytest.raises(Unavailable) as raised:
            await node.search("books", QUERY)
        assert raised.value.reason == UnavailableReason.REPLICA_BEHIND
        assert "holds 1:4" in str(raised.value) and "at 1:5" in str(raised.value)
        assert built.bus.handler is not None
        with pytest.raises(Unavailable):  # nor from the queue
            await built.bus.handler(SearchRequest(collection="books", query=QUERY))
        assert built.pipeline.searched == ["books"]  # only the search before the write
        replica.position = Position(1, 5)  # the replica applied it
        assert await node.search("books", QUERY) == ANSWER
        assert built.pipeline.searched == ["books", "books"]
    finally:
        await node.close()


async def test_its_beat_says_searches_answered_the_replicas_position_and_copies(
    tmp_path: Path, pipelines: list[Recording], beat_every_tick: None
) -> None:
    built = Fixture(tmp_path, pipelines, visible=(1, 5), copied=Position(1, 5))
    node = built.node
    node.start()
    try:
        loading = await built.redis.next_beat()
        assert loading["pid"] == os.getpid()
        assert (loading["searches"], loading["position"], loading["copies"]) == (0, None, 0)
        with pytest.raises(Unavailable):  # a 503 is no search answered
            await node.search("books", QUERY)
        await built.loaded()
        await node.search("books", QUERY)
        assert built.bus.handler is not None
        await built.bus.handler(SearchRequest(collection="books", query=QUERY))
        loaded = await built.redis.next_beat()
        assert (loaded["searches"], loaded["position"], loaded["copies"]) == (2, "1:5", 1)
        assert loaded["ts"] >= loading["ts"] and not loaded["idle"]
        assert built.replica is not None
        built.replica.idle = True  # no search for BRAID_REPLICA_IDLE_S: it drops the stream
        assert (await built.redis.next_beat())["idle"]
    finally:
        await node.close()


async def test_a_node_without_a_replica_is_ready_at_once_and_beats_no_position(
    tmp_path: Path, pipelines: list[Recording], beat_every_tick: None
) -> None:
    built = Fixture(tmp_path, pipelines, replica=False)
    node = built.node
    assert node.ready
    node.start()
    try:
        async with asyncio.timeout(BOUND_S):
            await built.bus.serving.wait()
        assert [served.priority for served in built.bus.served] == [10]
        assert await node.search("books", QUERY) == ANSWER
        beat = await built.redis.next_beat()
        assert (beat["searches"], beat["position"], beat["copies"]) == (1, None, 0)
    finally:
        await node.close()
    assert built.log[-2:] == ["store close", f"hdel {API_INDEX}"]


async def test_close_stops_consuming_first_then_releases_the_replica_marks_and_beat(
    tmp_path: Path, pipelines: list[Recording], beat_every_tick: None
) -> None:
    built = Fixture(tmp_path, pipelines)
    node, replica = built.node, built.replica
    assert replica is not None
    opened: list[Marks] = []
    read_only = Marks.read_only

    def keep(path: Path) -> Marks:
        opened.append(read_only(path))
        return opened[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Marks, "read_only", keep)
        node.start()
        await built.loaded()
    await built.redis.next_beat()
    assert str(API_INDEX) in built.redis.searchers
    await node.close()
    assert built.log == [
        "cancel consumers",
        "drain handlers 1.5",
        "replica close",
        f"hdel {API_INDEX}",
    ]
    assert built.redis.searchers == {}  # no beat of a node that is gone
    beats = built.redis.beats
    for _ in range(5):  # turns of the loop in which a running heartbeat would write again
        await asyncio.sleep(0)
    assert built.redis.beats == beats
    with pytest.raises(ValueError):  # the node's view of the marks is unmapped
        opened[0].read()


async def test_close_while_loading_cancels_the_load_and_never_consumes_the_queue(
    tmp_path: Path, pipelines: list[Recording]
) -> None:
    built = Fixture(tmp_path, pipelines)
    node, replica = built.node, built.replica
    assert replica is not None
    node.start()
    await built.loading()
    async with asyncio.timeout(BOUND_S):  # a load left running would hold close forever
        await node.close()
    assert replica.start_cancelled and replica.closed
    assert built.bus.served == [] and not node.ready
    assert built.log[-1] == f"hdel {API_INDEX}"


async def test_a_redis_error_removing_the_beat_does_not_fail_close(
    tmp_path: Path, pipelines: list[Recording]
) -> None:
    built = Fixture(tmp_path, pipelines, fail_delete=True)
    node, replica = built.node, built.replica
    assert replica is not None
    node.start()
    await built.loaded()
    await node.close()  # raises nothing
    assert replica.closed and built.log[-1] == f"hdel {API_INDEX}"
