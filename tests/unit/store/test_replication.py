"""The replication stream's pieces that need no broker: positions, the message codec, and when a
replica holds a write a client was told about."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import cast

import pytest
import qdrant_edge as qe
from redis.asyncio import Redis

from core.bus import Bus
from core.enums import DenseDistance
from core.heartbeats import SearchNodeBeat
from core.names import RedisKeys
from core.vectors import SparseVector
from store.edge import convert
from store.edge.store import EdgeStore
from store.protocol import CollectionSchema, DenseSlot, PointWrite, SparseSlot
from store.replication.marks import Marks
from store.replication.replica import Replica
from store.replication.replicator import REPLICATION_CHUNK, Position, Replicator, all_idle
from store.replication.wire import UnreadableWrite, Written


def test_an_upsert_crosses_the_wire_with_its_vectors_and_payload() -> None:
    point = PointWrite(
        "doc-1",
        {"name": "n", "metadata": {"year": 2024, "tags": ["a"]}},
        {"kw:content": SparseVector(indices=[3, 9], values=[0.5, 1.25]), "dense": [0.1, -0.2]},
    )
    other = PointWrite("doc-2", {}, {"kw:content": SparseVector(indices=[], values=[])})
    sent = [convert.stored_form(point), convert.stored_form(other)]
    written = Written(epoch=2, seq=5, op="upsert", collection="c", points=sent)
    back = Written.from_wire(written.to_wire())
    assert (back.epoch, back.seq, back.op, back.collection) == (2, 5, "upsert", "c")
    assert [_edge(p) for p in back.edge_points] == [
        (convert.point_id("doc-1"), sent[0].payload, {"kw:content": ([3, 9], [0.5, 1.25])}),
        (convert.point_id("doc-2"), sent[1].payload, {"kw:content": ([], [])}),
    ]  # the numbers as the worker wrote them
    assert back.edge_points[0].vector["dense"] == pytest.approx([0.1, -0.2])  # float32 in there


def _edge(point: qe.Point) -> tuple[object, object, dict[str, object]]:
    sparse = {
        slot: (list(v.indices), list(v.values))
        for slot, v in point.vector.items()
        if isinstance(v, qe.SparseVector)
    }
    return point.id, point.payload, sparse


@pytest.mark.parametrize(
    "body",
    [b"", b"not a message", b'{"epoch": 1}', Written(1, 1, "tick").to_wire()[:-1]]
    + [Written(1, 1, "upsert", "c", [PointWrite("a", {}, {"d": [1.0]})]).to_wire()[:-1]],
)
def test_bytes_that_are_not_a_whole_message_are_unreadable(body: bytes) -> None:
    with pytest.raises(UnreadableWrite):
        Written.from_wire(body)


def test_a_payload_overwrite_crosses_the_wire_with_each_documents_payload() -> None:
    payloads = {"a": {"name": "n", "metadata": {"year": 2024}}, "b": {"name": "m"}}
    written = Written(epoch=2, seq=6, op="overwrite", collection="c", payloads=payloads)
    assert Written.from_wire(written.to_wire()).payloads == payloads


def test_a_created_collection_crosses_the_wire_with_its_schema() -> None:
    schema = CollectionSchema(
        dense=[DenseSlot("dense", 384, DenseDistance.DOT)],
        sparse=[SparseSlot("kw:name", True), SparseSlot("custom", False)],
        metadata_indexes={"year": "integer"},
    )
    written = Written(epoch=1, seq=1, op="create", collection="c", collection_schema=asdict(schema))
    assert Written.from_wire(written.to_wire()).store_schema() == schema


def _replica_at(position: Position | None) -> Replica:
    replica = Replica(Path("/nonexistent"), cast(Bus, None), idle_s=3600.0)
    replica._position = position  # what a copy or the applied writes would have set
    return replica


@pytest.mark.parametrize(
    ("visible", "holds"),
    [
        (None, True),  # nothing acknowledged yet
        (Position(4, 10), True),
        (Position(4, 11), False),  # the write after ours: wait for it
        (Position(3, 99), True),  # an older epoch: the copy was taken after all of it
        (Position(5, 0), False),  # a newer epoch: the worker restarted, a new copy is due
    ],
)
def test_a_replica_holds_what_was_acknowledged_up_to_its_position(
    visible: Position | None, holds: bool
) -> None:
    assert _replica_at(Position(4, 10))._holds(visible) is holds


def test_a_replica_without_a_copy_holds_nothing() -> None:
    assert _replica_at(None)._holds(None) is False


async def test_caught_up_gives_up_after_its_timeout() -> None:
    replica = _replica_at(Position(1, 1))
    assert await replica.caught_up(Position(1, 2), timeout_s=0.01) is False
    assert await replica.caught_up(Position(1, 1), timeout_s=0.01) is True


class Broadcasts:
    """A Bus stand-in that keeps what the replicator broadcasts."""

    def __init__(self) -> None:
        self.sent: list[Written] = []

    async def broadcast(self, exchange: str, body: bytes) -> None:
        self.sent.append(Written.from_wire(body))


async def test_a_large_upsert_is_one_store_write_broadcast_in_chunks_in_order(
    tmp_path: Path,
) -> None:
    """A search node applies each message on its event loop, between searches: a worker batch
    larger than REPLICATION_CHUNK goes out in consecutive messages that hold it all."""
    store = await EdgeStore.open(tmp_path / "store")
    bus = Broadcasts()
    replicator = Replicator(store, cast(Bus, bus), cast(Redis, None), cast(Marks, None))
    await replicator.create_collection("c", CollectionSchema(sparse=[SparseSlot("kw", True)]))
    points = [
        PointWrite(f"d{i}", {"name": f"n{i}"}, {"kw": SparseVector(indices=[i], values=[1.0])})
        for i in range(REPLICATION_CHUNK * 2 + 5)
    ]
    try:
        await replicator.upsert("c", points)
        assert await store.count("c") == len(points)
    finally:
        await store.close()
    upserts = [m for m in bus.sent if m.op == "upsert"]
    assert [len(m.edge_points) for m in upserts] == [REPLICATION_CHUNK, REPLICATION_CHUNK, 5]
    assert [m.seq for m in upserts] == [bus.sent[0].seq + 1 + i for i in range(3)]
    sent = [(p.id, p.payload) for m in upserts for p in m.edge_points]
    assert sent == [
        (convert.point_id(p.doc_id), convert.to_payload(p.doc_id, p.payload)) for p in points
    ]


def _beat(ts: float, idle: bool) -> SearchNodeBeat:
    return SearchNodeBeat(ts=ts, pid=1, searches=0, position="1:1", copies=1, idle=idle)


@pytest.mark.parametrize(
    ("beats", "quiet"),
    [
        ([], True),  # no search node beating: nobody to broadcast to
        ([(5.0, True), (5.0, True)], True),
        ([(5.0, True), (5.0, False)], False),  # one replica applies the stream
        ([(5.0, True), (0.5, True)], False),  # one said so before the last copy: it may be awake
        ([(5.0, True), (-60.0, False)], True),  # a beat a minute old: that node is gone
    ],
)
def test_the_writes_go_out_unless_every_search_node_said_after_the_last_copy_it_is_idle(
    beats: list[tuple[float, bool]], quiet: bool
) -> None:
    now = time.time()
    nodes = [_beat(now - 5.0 + at, idle) for at, idle in beats]
    assert all_idle(nodes, copied_at=now - 4.0) is quiet


class Beats:
    """The search nodes' beats as the replicator reads them (Redis's hash, held here)."""

    def __init__(self) -> None:
        self.hash: dict[str, str] = {}

    async def hgetall(self, key: str) -> dict[str, str]:
        assert key == RedisKeys.searchers()
        return self.hash


async def test_writes_go_out_to_nobody_while_every_replica_is_idle_and_again_from_a_copy(
    tmp_path: Path,
) -> None:
    store = await EdgeStore.open(tmp_path / "store")
    bus, beats = Broadcasts(), Beats()
    replicator = Replicator(store, cast(Bus, bus), cast(Redis, beats), cast(Marks, None))
    kw = CollectionSchema(sparse=[SparseSlot("kw", True)])
    try:
        await replicator.create_collection("c", kw)
        held, _ = await replicator.copy(tmp_path / "replica", None)
        beats.hash["1"] = _beat(time.time() + 1, idle=True).to_redis()
        await replicator.tick()  # every replica is idle
        point = PointWrite("a", {}, {"kw": SparseVector(indices=[1], values=[1.0])})
        await replicator.upsert("c", [point])
        await replicator.tick()
        assert [m.op for m in bus.sent] == ["create", "tick", "tick"]
        assert bus.sent[-1].seq == held.seq + 1  # the write took its number
        # A replica that wakes asks first: it lacks the write, so it gets a copy; and a write
        # after it goes out again.
        position, copied = await replicator.copy(tmp_path / "woken", None, held)
        assert (position, copied) == (Position(held.epoch, held.seq + 1), True)
        await replicator.upsert("c", [point])
        assert [(m.op, m.seq) for m in bus.sent[-1:]] == [("upsert", held.seq + 2)]
        # One that holds the newest write gets no copy.
        _, copied = await replicator.copy(
            tmp_path / "current", None, Position(held.epoch, held.seq + 2)
        )
        assert not copied and not (tmp_path / "current").exists()
    finally:
        await store.close()
