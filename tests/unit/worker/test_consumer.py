"""The document consumer, against hand-written fakes of a delivery, its channel, the ledger and
the indexer: how deliveries are grouped into batches, what a batch that fails leaves behind
(requeued, failed, isolated), and that a message whose channel is gone is let go, never settled.

Batching goes through `run()` with the deliveries already in the inbox, so the grouping does not
depend on timing. The rest hands one batch to the consumer's per-batch step, as `run()` does;
the backoffs are made zero (the delay asked for is recorded) so a requeue can be awaited as an
event."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from aio_pika.abc import AbstractIncomingMessage
from aiormq.exceptions import ChannelInvalidStateError

import worker.consumer as consumer_module
from core.enums import DocumentStatus, OpType
from core.errors import RpcTimeout
from core.ledger import Ledger
from core.messages import DocumentMessage, DocumentWrite
from core.schemas.document import Document
from worker.consumer import Delivery, DocumentConsumer
from worker.indexing import Indexer, Write

GUARD_S = 2.0  # a safety net for a wait on an event, never a stand-in for one
FOREVER_S = 60.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class FakeChannel:
    def __init__(self) -> None:
        self.is_closed = False


class FakeMessage:
    """A delivery: its settlements are recorded; settling it on a closed channel raises, as
    aio-pika does, and `channel` raises once the channel is gone altogether."""

    def __init__(self, body: bytes, message_id: str | None) -> None:
        self.body = body
        self.message_id = message_id
        self.channel_state: FakeChannel | None = FakeChannel()
        self.tries: list[str] = []  # every ack/nack attempted, on a live channel or not
        self.settlements: list[str] = []  # the ones that went through: "ack", "requeue", "drop"
        self.settled = asyncio.Event()

    @property
    def channel(self) -> FakeChannel:
        if self.channel_state is None:
            raise ChannelInvalidStateError("the channel is gone")
        return self.channel_state

    @property
    def processed(self) -> bool:
        return bool(self.settlements)

    async def ack(self) -> None:
        self._settle("ack")

    async def nack(self, requeue: bool = True) -> None:
        self._settle("requeue" if requeue else "drop")

    def _settle(self, how: str) -> None:
        self.tries.append(how)
        if self.channel.is_closed:
            raise ChannelInvalidStateError("the channel is closed")
        self.settlements.append(how)
        self.settled.set()


def write(queue_id: str, doc_id: str | None = None) -> DocumentWrite:
    doc_id = doc_id or f"doc-{queue_id}"
    document = Document.model_validate({"id": doc_id, "timestamp": T0, "content": "text"})
    return DocumentWrite(
        queue_id=queue_id, op=OpType.UPSERT, doc_id=doc_id, timestamp=T0, document=document
    )


def delivery(queue_id: str, doc_id: str | None = None, collection: str = "c") -> FakeMessage:
    """A message of one write."""
    return carrying(write(queue_id, doc_id), collection=collection)


def carrying(*writes: DocumentWrite, collection: str = "c") -> FakeMessage:
    """A message of several writes, as the api sends a bulk request's documents."""
    message = DocumentMessage(collection=collection, writes=list(writes))
    return FakeMessage(message.model_dump_json().encode(), writes[0].queue_id)


def incoming(*messages: FakeMessage) -> list[AbstractIncomingMessage]:
    return [cast(AbstractIncomingMessage, m) for m in messages]


class FakeLedger:
    """The queue items by collection; what the consumer finished and restated, in order."""

    def __init__(self, journal: list[str]) -> None:
        self.items: dict[str, dict[str, dict[str, object]]] = {}
        self.down_for: set[str] = set()  # collections whose lookups fail (Redis down)
        self.asked: list[list[str]] = []
        self.finished: list[tuple[str, str]] = []
        self.restated: list[tuple[str, DocumentStatus, int]] = []
        self._journal = journal

    def queue(self, *messages: FakeMessage, try_count: int = 0) -> None:
        for message in messages:
            parsed = DocumentMessage.model_validate_json(message.body)
            items = self.items.setdefault(parsed.collection, {})
            for queued in parsed.writes:
                items[queued.queue_id] = {"status": "queued", "try_count": try_count}

    async def live_items(self, collection: str, queue_ids: list[str]) -> dict[str, Any]:
        if collection in self.down_for:
            raise ConnectionError("redis is down")
        self.asked.append(queue_ids)
        items = self.items.get(collection, {})
        return {qid: items[qid] for qid in queue_ids if qid in items}

    async def finish(self, collection: str, items: list[tuple[str, str]]) -> int:
        self.finished += items
        for queue_id, _ in items:  # as the ledger does: a finished write is no longer live
            self.items.get(collection, {}).pop(queue_id, None)
        self._journal += [f"finish {qid}" for qid, _ in items]
        return len(items)

    async def restate(
        self, collection: str, queue_id: str, status: DocumentStatus, info: str, try_count: int
    ) -> None:
        self.restated.append((queue_id, status, try_count))


class FakeIndexer:
    """Records the document ids of each `apply`; fails a call holding a poison document, or
    every call while `down` is set."""

    def __init__(self) -> None:
        self.applied: list[list[str]] = []
        self.poison: set[str] = set()
        self.down: Exception | None = None
        self.counted: list[tuple[str, OpType, str]] = []

    async def apply(self, collection: str, writes: list[Write]) -> dict[str, object]:
        doc_ids = [w.doc_id for w in writes]
        self.applied.append(doc_ids)
        if self.down is not None:
            raise self.down
        if self.poison & set(doc_ids):
            raise ValueError("a poison document")
        return {}

    def count(self, collection: str, op: OpType, outcome: str) -> None:
        self.counted.append((collection, op, outcome))


class Rig:
    def __init__(self, batch_size: int = 64, batch_wait_s: float = 0.0, max_tries: int = 3):
        self.journal: list[str] = []
        self.ledger = FakeLedger(self.journal)
        self.indexer = FakeIndexer()
        self.consumer = DocumentConsumer(
            cast(Indexer, self.indexer),
            cast(Ledger, self.ledger),
            batch_size,
            batch_wait_s,
            max_tries,
        )

    async def process(self, *messages: FakeMessage) -> None:
        """One batch through the consumer's per-batch step (what `run()` starts for each)."""
        await self.consumer._process_or_requeue([Delivery.read(m) for m in incoming(*messages)])

    async def consume(self, *messages: FakeMessage) -> None:
        """Deliver the messages, then run the consumer until each of them is settled."""
        for raw in incoming(*messages):
            await self.consumer.on_message(raw)
        running = asyncio.create_task(self.consumer.run())
        try:
            async with asyncio.timeout(GUARD_S):
                for message in messages:
                    await message.settled.wait()
        finally:
            self.consumer.stop()
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running


async def settled(*messages: FakeMessage) -> None:
    async with asyncio.timeout(GUARD_S):
        for message in messages:
            await message.settled.wait()


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """No delay before a requeue; the tries whose backoff was asked for, in order."""
    asked: list[int] = []

    def no_backoff(try_count: int) -> float:
        asked.append(try_count)
        return 0.0

    monkeypatch.setattr(consumer_module, "backoff_s", no_backoff)
    monkeypatch.setattr(consumer_module, "REQUEUE_AFTER_FAILURE_S", 0.0)
    yield asked


# --- batching ---


async def test_waiting_deliveries_are_grouped_in_batches_of_batch_size_in_arrival_order() -> None:
    rig = Rig(batch_size=2, batch_wait_s=FOREVER_S)  # a full batch never waits for its deadline
    messages = [delivery(f"q{i}") for i in range(4)]
    rig.ledger.queue(*messages)
    await rig.consume(*messages)
    assert sorted(rig.indexer.applied) == [["doc-q0", "doc-q1"], ["doc-q2", "doc-q3"]]
    assert [m.settlements for m in messages] == [["ack"]] * 4


async def test_a_batch_whose_wait_is_over_is_flushed_with_what_it_holds() -> None:
    rig = Rig(batch_size=64, batch_wait_s=0.0)
    message = delivery("q1")
    rig.ledger.queue(message)
    await rig.consume(message)
    assert rig.indexer.applied == [["doc-q1"]]


async def test_a_batch_counts_writes_not_messages() -> None:
    rig = Rig(batch_size=4, batch_wait_s=FOREVER_S)
    messages = [carrying(write(f"q{i}a"), write(f"q{i}b")) for i in range(4)]
    rig.ledger.queue(*messages)
    await rig.consume(*messages)
    pairs = [[f"doc-q{i}a", f"doc-q{i}b"] for i in range(4)]
    assert sorted(rig.indexer.applied) == [pairs[0] + pairs[1], pairs[2] + pairs[3]]


# --- one batch, all well ---


async def test_an_applied_batch_leaves_the_ledger_before_its_messages_are_acked() -> None:
    rig = Rig()
    first, second = delivery("q1"), delivery("q2")
    rig.ledger.queue(first, second)
    first_ack = first.ack

    async def journaled_ack() -> None:
        rig.journal.append("ack q1")
        await first_ack()

    first.ack = journaled_ack  # type: ignore[method-assign]
    await rig.process(first, second)
    assert rig.indexer.applied == [["doc-q1", "doc-q2"]]  # one apply for the batch
    assert rig.ledger.finished == [("q1", "doc-q1"), ("q2", "doc-q2")]
    assert rig.journal == ["finish q1", "finish q2", "ack q1"]
    assert first.settlements == second.settlements == ["ack"]


async def test_a_batch_is_applied_once_per_collection() -> None:
    rig = Rig()
    messages = delivery("q1", collection="a"), delivery("q2", collection="b"), delivery("q3", "x")
    rig.ledger.queue(*messages)
    await rig.process(*messages)
    assert rig.indexer.applied == [["doc-q1"], ["doc-q2"], ["x"]]
    assert rig.ledger.asked == [["q1"], ["q2"], ["q3"]]


async def test_a_message_no_longer_live_in_the_ledger_is_acked_without_indexing() -> None:
    rig = Rig()
    live, cancelled = delivery("q1"), delivery("q2")
    rig.ledger.queue(live)  # q2 was cancelled by a newer delete, a purge or a drop
    await rig.process(live, cancelled)
    assert rig.indexer.applied == [["doc-q1"]]
    assert rig.ledger.finished == [("q1", "doc-q1")]
    assert live.settlements == cancelled.settlements == ["ack"]


async def test_an_unreadable_message_is_acked_and_dropped() -> None:
    rig = Rig()
    unreadable, good = FakeMessage(b"not json", "q0"), delivery("q1")
    rig.ledger.queue(good)
    await rig.process(unreadable, good)
    assert unreadable.settlements == ["ack"]
    assert rig.ledger.asked == [["q1"]] and rig.indexer.applied == [["doc-q1"]]


async def test_a_message_of_several_writes_is_applied_with_its_batch_and_acked_once() -> None:
    rig = Rig()
    bulk, single = carrying(write("q1"), write("q2"), write("q3")), delivery("q4")
    rig.ledger.queue(bulk, single)
    await rig.process(bulk, single)
    assert rig.indexer.applied == [["doc-q1", "doc-q2", "doc-q3", "doc-q4"]]
    assert [qid for qid, _ in rig.ledger.finished] == ["q1", "q2", "q3", "q4"]
    assert bulk.settlements == single.settlements == ["ack"]


async def test_only_the_live_writes_of_a_message_are_applied() -> None:
    rig = Rig()
    bulk = carrying(write("q1"), write("q2"))
    rig.ledger.queue(bulk)
    del rig.ledger.items["c"]["q2"]  # cancelled by a newer delete
    await rig.process(bulk)
    assert rig.indexer.applied == [["doc-q1"]]
    assert bulk.settlements == ["ack"]


async def test_a_message_of_one_write_as_queued_before_messages_held_several_is_read() -> None:
    """An upgrade finds messages of the older shape on the queue: each is one write."""
    rig = Rig()
    queued = write("q1")
    older = FakeMessage(
        json.dumps({"collection": "c", **queued.model_dump(mode="json")}).encode(), "q1"
    )
    rig.ledger.queue(delivery("q1"))
    await rig.process(older)
    assert rig.indexer.applied == [["doc-q1"]]
    assert older.settlements == ["ack"]


# --- retries ---


@pytest.mark.parametrize(
    ("tries_before", "max_tries", "status", "settlement"),
    [
        (0, 3, DocumentStatus.REQUEUED, "requeue"),
        (1, 3, DocumentStatus.REQUEUED, "requeue"),
        (2, 3, DocumentStatus.FAILED, "ack"),
        (7, 3, DocumentStatus.FAILED, "ack"),
        (0, 1, DocumentStatus.FAILED, "ack"),
    ],
)
async def test_a_failing_write_is_requeued_until_its_last_try_then_marked_failed_and_acked(
    backoffs: list[int],
    tries_before: int,
    max_tries: int,
    status: DocumentStatus,
    settlement: str,
) -> None:
    rig = Rig(max_tries=max_tries)
    message = delivery("q1")
    rig.indexer.poison = {"doc-q1"}
    rig.ledger.queue(message, try_count=tries_before)
    await rig.process(message)
    await settled(message)
    assert rig.ledger.restated == [("q1", status, tries_before + 1)]
    assert message.settlements == [settlement]
    assert rig.ledger.finished == []
    failed = status is DocumentStatus.FAILED
    assert rig.indexer.counted == ([("c", OpType.UPSERT, "failed")] if failed else [])
    assert backoffs == ([] if failed else [tries_before + 1])  # the delay is that try's backoff


async def test_a_requeued_write_is_held_unsettled_until_its_backoff_is_over(
    backoffs: list[int],
) -> None:
    rig = Rig()
    message = delivery("q1")
    rig.indexer.poison = {"doc-q1"}
    rig.ledger.queue(message)
    await rig.process(message)
    assert message.tries == []  # the backoff runs in a task of its own, after the batch
    await settled(message)
    assert message.settlements == ["requeue"]


@pytest.mark.parametrize("outage", [ConnectionError("encoder unreachable"), RpcTimeout("slow")])
async def test_a_dependency_outage_requeues_the_whole_batch_and_never_gives_up(
    backoffs: list[int], outage: Exception
) -> None:
    rig = Rig(max_tries=3)
    messages = delivery("q1"), delivery("q2")
    rig.ledger.queue(*messages, try_count=10)  # far past max_tries
    rig.indexer.down = outage
    await rig.process(*messages)
    await settled(*messages)
    assert rig.indexer.applied == [["doc-q1", "doc-q2"]]  # not split up one write at a time
    assert rig.ledger.restated == [
        ("q1", DocumentStatus.REQUEUED, 11),
        ("q2", DocumentStatus.REQUEUED, 11),
    ]
    assert [m.settlements for m in messages] == [["requeue"], ["requeue"]]
    assert rig.indexer.counted == []


async def test_a_batch_whose_bookkeeping_fails_is_requeued_except_what_was_settled(
    backoffs: list[int],
) -> None:
    rig = Rig()
    done, stuck = delivery("q1", collection="a"), delivery("q2", collection="b")
    rig.ledger.queue(done, stuck)
    rig.ledger.down_for = {"b"}
    await rig.process(done, stuck)
    await settled(stuck)
    assert done.settlements == ["ack"]
    assert stuck.settlements == ["requeue"]
    assert rig.ledger.restated == []  # nothing counted: the ledger could not be read


# --- poison isolation ---


async def test_a_poison_document_fails_alone_and_the_rest_of_its_batch_is_indexed(
    backoffs: list[int],
) -> None:
    rig = Rig(max_tries=3)
    good, poison, other = delivery("q1"), delivery("q2"), delivery("q3")
    rig.ledger.queue(good, poison, other)
    rig.indexer.poison = {"doc-q2"}
    await rig.process(good, poison, other)
    await settled(poison)
    whole = ["doc-q1", "doc-q2", "doc-q3"]
    assert rig.indexer.applied == [whole, ["doc-q1"], ["doc-q2"], ["doc-q3"]]
    assert rig.ledger.finished == [("q1", "doc-q1"), ("q3", "doc-q3")]
    assert good.settlements == other.settlements == ["ack"]
    assert rig.ledger.restated == [("q2", DocumentStatus.REQUEUED, 1)]
    assert poison.settlements == ["requeue"]


async def test_a_poison_document_on_its_last_try_is_marked_failed_and_the_rest_indexed() -> None:
    rig = Rig(max_tries=3)
    good, poison = delivery("q1"), delivery("q2")
    rig.ledger.queue(good)
    rig.ledger.queue(poison, try_count=2)
    rig.indexer.poison = {"doc-q2"}
    await rig.process(good, poison)
    assert rig.ledger.finished == [("q1", "doc-q1")]
    assert rig.ledger.restated == [("q2", DocumentStatus.FAILED, 3)]
    assert rig.indexer.counted == [("c", OpType.UPSERT, "failed")]
    assert good.settlements == poison.settlements == ["ack"]


async def test_an_outage_while_a_batch_is_split_marks_no_write_failed(
    backoffs: list[int],
) -> None:
    """The batch fails on a poison document, then the broker or Redis goes down while it is
    applied one write at a time: those writes wait for it, even past their last try."""
    rig = Rig(max_tries=3)
    good, poison = delivery("q1"), delivery("q2")
    rig.ledger.queue(good, poison, try_count=2)  # a real failure now would be their last try
    rig.indexer.poison = {"doc-q2"}
    indexer_apply = rig.indexer.apply

    async def poison_then_outage(collection: str, writes: list[Write]) -> Any:
        if rig.indexer.applied:  # the whole batch failed: now one write at a time
            rig.indexer.down = ConnectionError("the broker is gone")
        return await indexer_apply(collection, writes)

    rig.indexer.apply = poison_then_outage  # type: ignore[method-assign]
    await rig.process(good, poison)
    await settled(good, poison)
    assert rig.ledger.restated == [
        ("q1", DocumentStatus.REQUEUED, 3),
        ("q2", DocumentStatus.REQUEUED, 3),
    ]
    assert good.settlements == poison.settlements == ["requeue"]
    assert rig.indexer.counted == []


async def test_a_poison_write_sends_its_message_back_and_only_it_is_applied_again(
    backoffs: list[int],
) -> None:
    """Its neighbours in the message are indexed and out of the ledger; the message comes
    again after the poison's backoff, and then only the poison is still live."""
    rig = Rig(max_tries=2)
    bulk = carrying(write("q1"), write("q2"), write("q3"))
    rig.ledger.queue(bulk)
    rig.indexer.poison = {"doc-q2"}
    await rig.process(bulk)
    await settled(bulk)
    assert [qid for qid, _ in rig.ledger.finished] == ["q1", "q3"]
    assert bulk.settlements == ["requeue"]
    assert backoffs == [1]

    again = carrying(write("q1"), write("q2"), write("q3"))  # the broker delivers it again
    rig.ledger.items["c"]["q2"]["try_count"] = 1  # as restated
    await rig.process(again)
    assert rig.indexer.applied[-1] == ["doc-q2"]
    assert rig.ledger.restated[-1] == ("q2", DocumentStatus.FAILED, 2)
    assert again.settlements == ["ack"]  # given up: kept visible as failed, the message done


# --- channel loss ---


async def test_a_message_whose_channel_is_gone_is_neither_indexed_nor_settled() -> None:
    rig = Rig()
    live, closed, gone = delivery("q1"), delivery("q2"), delivery("q3")
    rig.ledger.queue(live, closed, gone)
    assert closed.channel_state is not None
    closed.channel_state.is_closed = True  # closed: the broker redelivers it
    gone.channel_state = None  # aio-pika raises for a channel gone altogether
    await rig.process(live, closed, gone)
    assert rig.ledger.asked == [["q1"]]
    assert rig.indexer.applied == [["doc-q1"]]
    assert rig.ledger.finished == [("q1", "doc-q1")]
    assert live.settlements == ["ack"]
    assert closed.tries == gone.tries == []  # no ack tried on a dead channel


async def test_a_channel_that_dies_mid_batch_fails_only_that_ack(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rig = Rig()
    survivor, orphan = delivery("q1"), delivery("q2")
    rig.ledger.queue(survivor, orphan)
    indexer_apply = rig.indexer.apply

    async def apply_then_lose_the_channel(collection: str, writes: list[Write]) -> Any:
        assert orphan.channel_state is not None
        orphan.channel_state.is_closed = True
        return await indexer_apply(collection, writes)

    rig.indexer.apply = apply_then_lose_the_channel  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="worker.consumer"):
        await rig.process(survivor, orphan)
    assert caplog.records == []  # the failed ack raised nothing: the batch was not requeued
    assert rig.ledger.finished == [("q1", "doc-q1"), ("q2", "doc-q2")]
    assert survivor.settlements == ["ack"]
    assert orphan.tries == ["ack"] and orphan.settlements == []


# --- what the reaper is told ---


async def test_the_reaper_is_told_held_messages_and_settled_ones_only_once() -> None:
    rig = Rig()
    first, second = delivery("q1"), delivery("q2")
    for message in incoming(first, second):
        await rig.consumer.on_message(message)
    assert rig.consumer.touched() == frozenset({"q1", "q2"})
    await first.ack()
    assert rig.consumer.touched() == frozenset({"q1", "q2"})  # q1 settled since the last look
    assert rig.consumer.touched() == frozenset({"q2"})  # then only the one still unsettled


async def test_the_reaper_is_told_every_write_of_a_held_message() -> None:
    rig = Rig()
    bulk = carrying(write("q1"), write("q2"))
    for message in incoming(bulk):
        await rig.consumer.on_message(message)
    assert rig.consumer.touched() == frozenset({"q1", "q2"})


async def test_the_reaper_is_told_nothing_is_safe_after_a_held_message_lost_its_channel() -> None:
    rig = Rig()
    lost, held = delivery("q1"), delivery("q2")
    for message in incoming(lost, held):
        await rig.consumer.on_message(message)
    lost.channel_state = None  # the broker may deliver q1 again, perhaps unseen yet
    assert rig.consumer.touched() is None
    assert rig.consumer.touched() == frozenset({"q2"})  # the next look is as before
