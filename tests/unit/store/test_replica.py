"""A replica taking the worker's optimized shard goes on serving and applying the stream.

The stores are the real engine (the worker's and the replica's copies, in a temporary folder);
only Braid's Bus is a stand-in: the test hands the replica the stream's messages, and a copy
request is the worker store's own `copy_to`, answered when the test lets it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from core.bus import Bus
from core.messages import CopyStore, StoreCopied, WorkerCall
from core.vectors import SparseVector
from store.edge import convert
from store.edge.store import EdgeStore
from store.protocol import CollectionSchema, PointWrite, SparseSlot
from store.replication import replica as replica_module
from store.replication.replica import Replica
from store.replication.replicator import Position
from store.replication.wire import Written

COLLECTION = "books"
EPOCH = 7
SEARCHED = 3600.0  # idle_s of a replica that never goes idle in a test


@dataclass
class Delivery:
    """A message of the stream as the replica settles it."""

    body: bytes
    acked: bool = False

    async def ack(self) -> None:
        self.acked = True


class WorkerBus:
    """The worker behind the bus: it writes its store and broadcasts each write; it copies its
    store when asked, between two writes (as the Replicator does, under one lock), unless the
    asker holds its newest write, and answers the copy once `answer_copies` is set."""

    def __init__(self, store: EdgeStore) -> None:
        self.store = store
        self.position = Position(EPOCH, 0)
        self.answer_copies = asyncio.Event()
        self.answer_copies.set()
        self.copies_asked = 0
        self._lock = asyncio.Lock()
        self._deliver: Callable[[Delivery], Awaitable[None]] | None = None

    async def listen(
        self, exchange: str, on_message: Any, prefetch: int, on_subscribed: Callable[[], None]
    ) -> None:
        self._deliver = on_message
        on_subscribed()

    async def call(
        self, queue: str, call: WorkerCall, reply_type: type[Any], timeout_s: float
    ) -> StoreCopied:
        assert isinstance(call.request, CopyStore)
        target = Path(call.request.target)
        self.copies_asked += 1
        async with self._lock:
            taken = self.position
            copied = call.request.held != taken
            if copied:
                await self.store.copy_to(target)
        await self.answer_copies.wait()  # the copy's transfer and load take their time
        return StoreCopied(epoch=taken.epoch, seq=taken.seq, copied=copied)

    async def upsert(self, doc_id: str) -> Position:
        point = PointWrite(doc_id, {"name": doc_id}, {"kw": SparseVector(indices=[1], values=[1])})
        async with self._lock:
            await self.store.upsert(COLLECTION, [point])
            self.position = written = Position(EPOCH, self.position.seq + 1)
            await self.send(
                Written(
                    epoch=EPOCH,
                    seq=written.seq,
                    op="upsert",
                    collection=COLLECTION,
                    points=[convert.stored_form(point)],
                )
            )
        return written

    async def optimized(self) -> None:
        await self.send(Written(epoch=EPOCH, seq=self.position.seq, op="optimized"))

    async def tick(self) -> Delivery:
        return await self.send(Written(epoch=EPOCH, seq=self.position.seq, op="tick"))

    async def send(self, written: Written) -> Delivery:
        """Broadcast: nobody listening yet, nobody gets it (a fanout exchange's way)."""
        delivery = Delivery(written.to_wire())
        if self._deliver is not None:
            await self._deliver(delivery)
        return delivery


@pytest.fixture
async def worker(tmp_path: Path) -> AsyncIterator[WorkerBus]:
    store = await EdgeStore.open(tmp_path / "worker")
    await store.create_collection(COLLECTION, CollectionSchema(sparse=[SparseSlot("kw")]))
    bus = WorkerBus(store)
    await bus.upsert("first")
    yield bus
    await store.close()


async def started_replica(
    worker: WorkerBus, root: Path, idle_s: float = SEARCHED, searched: bool = True
) -> Replica:
    """A replica holding its first copy; `searched`: it has had a search (it applies the stream
    until `idle_s` passes without another), else it has had none (it drops the stream)."""
    replica = Replica(root, cast(Bus, worker), idle_s)
    await replica.start()
    assert replica.position == worker.position
    if searched:
        assert await replica.caught_up(None, timeout_s=5.0)
    return replica


async def wait_for(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.01)


async def test_while_the_optimized_copy_is_taken_the_old_copy_applies_the_stream(
    worker: WorkerBus, tmp_path: Path
) -> None:
    replica = await started_replica(worker, tmp_path / "replica")
    try:
        worker.answer_copies.clear()
        await worker.optimized()
        await wait_for(lambda: worker.copies_asked == 2)
        written = await worker.upsert("second")  # acknowledged while the copy is on its way
        # A search that must see it is answered at once, from the copy the replica holds.
        assert await replica.caught_up(written, timeout_s=2.0)
        assert await replica.store.count(COLLECTION) == 2
        assert replica.copies_taken == 1
    finally:
        worker.answer_copies.set()
        await replica.close()


async def test_the_optimized_copy_takes_over_with_the_writes_made_after_it(
    worker: WorkerBus, tmp_path: Path
) -> None:
    replica = await started_replica(worker, tmp_path / "replica")
    try:
        old = replica.store
        worker.answer_copies.clear()
        await worker.optimized()
        await wait_for(lambda: worker.copies_asked == 2)  # the copy holds "first" only
        await worker.upsert("second")
        written = await worker.upsert("third")
        assert await replica.caught_up(written, timeout_s=2.0)
        worker.answer_copies.set()
        await wait_for(lambda: replica.copies_taken == 2)
        assert replica.store is not old and replica.position == written
        got = await replica.store.retrieve(COLLECTION, ["first", "second", "third"])
        assert sorted(got) == ["first", "second", "third"]
        # And the stream goes on on the new copy.
        assert await replica.caught_up(await worker.upsert("fourth"), timeout_s=2.0)
        assert await replica.store.count(COLLECTION) == 4
    finally:
        await replica.close()


async def test_a_copy_that_lacks_writes_too_many_to_keep_is_taken_again(
    worker: WorkerBus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replica_module, "KEPT_MAX_BYTES", 1)
    replica = await started_replica(worker, tmp_path / "replica")
    try:
        worker.answer_copies.clear()
        await worker.optimized()
        await wait_for(lambda: worker.copies_asked == 2)
        written = await worker.upsert("second")
        assert await replica.caught_up(written, timeout_s=2.0)
        worker.answer_copies.set()
        await wait_for(lambda: replica.copies_taken == 2)
        assert worker.copies_asked == 3  # the optimized copy lacked "second": a full one
        assert replica.position == written
        assert await replica.store.count(COLLECTION) == 2
    finally:
        await replica.close()


async def test_a_replica_reads_from_the_copy_it_holds_now(
    worker: WorkerBus, tmp_path: Path
) -> None:
    replica = Replica(tmp_path / "replica", cast(Bus, worker), SEARCHED)
    with pytest.raises(RuntimeError):  # a search node serves nothing before its first copy
        await replica.count(COLLECTION)
    await replica.start()
    try:
        assert await replica.caught_up(None, timeout_s=5.0)  # searched: it applies the stream
        assert await replica.list_collections() == [COLLECTION]
        await worker.optimized()
        await wait_for(lambda: replica.copies_taken == 2)
        written = await worker.upsert("second")
        assert await replica.caught_up(written, timeout_s=2.0)
        got = await replica.retrieve(COLLECTION, ["first", "second"])  # the new copy's
        assert sorted(got) == ["first", "second"]
        assert await replica.count(COLLECTION) == await replica.store.count(COLLECTION) == 2
    finally:
        await replica.close()


async def test_an_idle_replica_drops_the_stream_and_a_search_waits_for_every_write(
    worker: WorkerBus, tmp_path: Path
) -> None:
    # idle_s 0: no search since the start is already too long, so it drops what comes next.
    replica = await started_replica(worker, tmp_path / "replica", idle_s=0.0)
    try:
        marked = replica.position  # async writes follow: the marks stay where they were
        await worker.upsert("second")
        await wait_for(lambda: replica.idle)
        await worker.upsert("third")
        assert await replica.caught_up(marked, timeout_s=5.0)
        # The search went on only once a fresh copy held what the idle replica dropped.
        assert replica.copies_taken == 2 and worker.copies_asked == 2
        got = await replica.retrieve(COLLECTION, ["first", "second", "third"])
        assert sorted(got) == ["first", "second", "third"]
    finally:
        await replica.close()


async def test_an_idle_replica_that_missed_no_write_wakes_without_a_copy(
    worker: WorkerBus, tmp_path: Path
) -> None:
    replica = await started_replica(worker, tmp_path / "replica", idle_s=0.0)
    try:
        await worker.tick()  # the worker's heartbeat: no write since the copy
        await wait_for(lambda: replica.idle)
        await worker.tick()
        assert await replica.caught_up(worker.position, timeout_s=5.0)
        # It asked the worker, with the position it holds, and got no copy.
        assert replica.copies_taken == 1 and worker.copies_asked == 2
    finally:
        await replica.close()


async def test_a_replica_no_search_has_used_since_it_started_drops_the_stream(
    worker: WorkerBus, tmp_path: Path
) -> None:
    """A bulk load right after a start costs no replica anything: idle_s has not passed, but no
    search has come to wait for what it would apply."""
    replica = await started_replica(worker, tmp_path / "replica", searched=False)
    try:
        dropped = await worker.upsert("second")
        await wait_for(lambda: replica.idle)
        assert replica.position != dropped and replica.copies_taken == 1
        # Its first search waits for a copy that holds what it dropped.
        assert await replica.caught_up(dropped, timeout_s=5.0)
        assert replica.copies_taken == 2 and await replica.store.count(COLLECTION) == 2
    finally:
        await replica.close()


async def test_a_searched_replica_applies_the_stream(worker: WorkerBus, tmp_path: Path) -> None:
    replica = await started_replica(worker, tmp_path / "replica")
    try:
        for doc_id in ("second", "third"):
            assert await replica.caught_up(await worker.upsert(doc_id), timeout_s=5.0)
        assert not replica.idle and replica.copies_taken == 1
        assert await replica.store.count(COLLECTION) == 3
    finally:
        await replica.close()


async def test_an_idle_replica_takes_the_shard_optimized_while_it_was_idle(
    worker: WorkerBus, tmp_path: Path
) -> None:
    replica = await started_replica(worker, tmp_path / "replica", idle_s=0.0)
    try:
        await worker.tick()
        await wait_for(lambda: replica.idle)
        await worker.optimized()  # no write, but the worker's shard is now the better one
        last = await worker.tick()
        await wait_for(lambda: last.acked)  # dropped, like the optimize before it
        assert await replica.caught_up(worker.position, timeout_s=5.0)
        assert replica.copies_taken == 2
    finally:
        await replica.close()
