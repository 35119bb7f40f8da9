"""The document consumer: collects queued writes into batches, applies them, then acks."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass

from aio_pika.abc import AbstractIncomingMessage

from core.delivery import channel_open, settle
from core.enums import DocumentStatus
from core.errors import RpcTimeout, dependency_error
from core.ledger import Ledger
from core.messages import WRITES_PER_MESSAGE, DocumentMessage, DocumentWrite
from core.retry import backoff_s, should_give_up
from worker.indexing import Indexer, Write

log = logging.getLogger(__name__)
REQUEUE_AFTER_FAILURE_S = 1.0
# Batches processed side by side: while the encoders embed two (one per document worker of a
# holder), another is planned (lexical vectors) or written to the store, so the model never
# waits. Documents shared by two batches are serialized by the per-document locks; the newest
# timestamp wins either way.
BATCHES_IN_FLIGHT = 3


def prefetch_for(batch_size: int) -> int:
    """Messages the worker takes ahead: BATCHES_IN_FLIGHT + 1 batches of full messages, so it
    holds as many documents as when every message carried one, and a write sent alone (one a
    message) still finds its batch gathered from many."""
    return max(batch_size * (BATCHES_IN_FLIGHT + 1) // WRITES_PER_MESSAGE, BATCHES_IN_FLIGHT + 1)


def held_prune_at(batch_size: int) -> int:
    """Messages held for the reaper before settled ones are let go: twice the prefetch, so a
    prune (a pass over what is held) comes at most once per prefetch of deliveries."""
    return 2 * prefetch_for(batch_size)


@dataclass(eq=False)
class Delivery:
    """A message as delivered, read once: its writes (none if unreadable), and the longest
    backoff one of them asked for before the message comes again."""

    raw: AbstractIncomingMessage
    message: DocumentMessage | None
    again_in: float | None = None

    @classmethod
    def read(cls, raw: AbstractIncomingMessage) -> Delivery:
        try:
            return cls(raw, DocumentMessage.model_validate_json(raw.body))
        except ValueError:
            return cls(raw, None)  # dropped when processed

    @property
    def writes(self) -> list[DocumentWrite]:
        return self.message.writes if self.message else []

    @property
    def queue_ids(self) -> tuple[str, ...]:
        """Its ledger items; an unreadable one's message id, as the api sends the first."""
        if self.message is None:
            return (self.raw.message_id,) if self.raw.message_id else ()
        return tuple(w.queue_id for w in self.message.writes)

    def again_after(self, delay_s: float) -> None:
        self.again_in = max(self.again_in or 0.0, delay_s)


class DocumentConsumer:
    """Takes messages of up to WRITES_PER_MESSAGE writes, in batches of `batch_size` writes. A
    message is settled once every write it carries is: acked when each was applied, dropped or
    marked failed; requeued after its backoff when one must be tried again, and then only the
    writes still live in the ledger are applied (the others were finished)."""

    def __init__(
        self, indexer: Indexer, ledger: Ledger, batch_size: int, batch_wait_s: float, max_tries: int
    ) -> None:
        self._indexer = indexer
        self._ledger = ledger
        self._batch_size = batch_size
        self._batch_wait_s = batch_wait_s
        self._max_tries = max_tries
        self._inbox: asyncio.Queue[Delivery] = asyncio.Queue()
        self._stopping = asyncio.Event()
        self._waiting: set[asyncio.Task[None]] = set()  # messages held for a backoff
        # For the reaper (`touched`): the messages not known settled, with their queue ids, and
        # the queue ids of the ones received or settled since it last asked.
        self._held: dict[AbstractIncomingMessage, tuple[str, ...]] = {}
        self._prune_at = held_prune_at(batch_size)
        self._seen: set[str] = set()
        self._lost = False  # a held message's channel closed since it last asked

    async def on_message(self, message: AbstractIncomingMessage) -> None:
        delivery = Delivery.read(message)
        self._held[message] = delivery.queue_ids
        self._seen.update(delivery.queue_ids)
        if len(self._held) > self._prune_at:
            self._prune()
        await self._inbox.put(delivery)

    def touched(self) -> frozenset[str] | None:
        """The queue ids of the messages received or settled since the last call, or still
        unsettled: the reaper must spare them. None if a channel closed under one, as the broker
        may then deliver it again, perhaps unseen yet."""
        self._prune()
        touched = frozenset(self._seen.union(*self._held.values()))
        lost, self._lost, self._seen = self._lost, False, set()
        return None if lost else touched

    def _prune(self) -> None:
        """Let go of settled messages (their bodies), keeping their ids until `touched`."""
        for message in [m for m in self._held if m.processed or not channel_open(m)]:
            self._lost |= not channel_open(message)
            self._seen.update(self._held.pop(message))

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        """Take batches off the inbox and process up to BATCHES_IN_FLIGHT side by side; on stop,
        finish the ones in hand (cancelled, their messages stay unacked and come back)."""
        room = asyncio.Semaphore(BATCHES_IN_FLIGHT)
        running: set[asyncio.Task[None]] = set()
        try:
            while not self._stopping.is_set():
                await room.acquire()
                batch = await self._next_batch()
                if not batch:
                    room.release()
                    continue
                task = asyncio.create_task(self._process_or_requeue(batch))
                running.add(task)
                task.add_done_callback(running.discard)
                task.add_done_callback(lambda _: room.release())
        finally:
            if running:
                await _finish_all(running)

    async def _process_or_requeue(self, batch: list[Delivery]) -> None:
        try:
            await self._process(batch)
        except Exception as exc:  # bookkeeping failed (Redis down): the batch comes back
            log.warning("a batch of %d could not be processed (%s); requeued", len(batch), exc)
            for delivery in batch:
                if not delivery.raw.processed:
                    self._later(delivery.raw, REQUEUE_AFTER_FAILURE_S)

    async def _next_batch(self) -> list[Delivery]:
        """Deliveries until they carry `batch_size` writes or the wait after the first is over."""
        try:
            first = await asyncio.wait_for(self._inbox.get(), timeout=0.5)
        except TimeoutError:
            return []
        batch = [first]
        writes = len(first.writes)
        deadline = asyncio.get_running_loop().time() + self._batch_wait_s
        while writes < self._batch_size:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 and self._inbox.empty():
                break
            try:
                delivery = await asyncio.wait_for(self._inbox.get(), timeout=max(remaining, 0))
            except TimeoutError:
                break
            batch.append(delivery)
            writes += len(delivery.writes)
        return batch

    async def _process(self, batch: list[Delivery]) -> None:
        by_collection: dict[str, list[Delivery]] = defaultdict(list)
        for delivery in batch:
            if not channel_open(delivery.raw):
                continue  # delivered before the broker connection dropped: it comes again
            if delivery.message is None:
                log.error("dropping unreadable document message")
                await settle(delivery.raw)
                continue
            by_collection[delivery.message.collection].append(delivery)
        for collection, deliveries in by_collection.items():
            await self._process_collection(collection, deliveries)
            await self._settle(deliveries)

    async def _process_collection(self, collection: str, deliveries: list[Delivery]) -> None:
        """Apply the live writes in one go; out of the ledger (one round trip) before the acks.
        Writes no longer live were cancelled by a newer delete, a purge or a dropped collection."""
        items = [(d, w) for d in deliveries for w in d.writes]
        live = await self._ledger.live_items(collection, [w.queue_id for _, w in items])
        items = [(d, w) for d, w in items if w.queue_id in live]
        if not items:
            return
        try:
            await self._indexer.apply(collection, [_write(w) for _, w in items])
        except Exception as exc:  # process boundary for this batch
            log.exception("indexing %d writes into %s failed", len(items), collection)
            if _transient(exc) or len(items) == 1:
                await self._retry_or_fail(collection, items, live, _reason(exc), _transient(exc))
            else:
                await self._isolate(collection, items, live)
            return
        await self._finish(collection, items)

    async def _isolate(
        self,
        collection: str,
        items: list[tuple[Delivery, DocumentWrite]],
        live: dict[str, dict[str, object]],
    ) -> None:
        """Apply a failed batch one write at a time, so a poison document fails alone."""
        for delivery, w in items:
            try:
                await self._indexer.apply(collection, [_write(w)])
            except Exception as exc:  # this write alone fails: retry it, then mark it failed
                log.warning("write %s of %s failed: %s", w.queue_id, w.doc_id, _reason(exc))
                await self._retry_or_fail(
                    collection, [(delivery, w)], live, _reason(exc), _transient(exc)
                )
            else:
                await self._finish(collection, [(delivery, w)])

    async def _finish(self, collection: str, items: list[tuple[Delivery, DocumentWrite]]) -> None:
        await self._ledger.finish(collection, [(w.queue_id, w.doc_id) for _, w in items])

    async def _settle(self, deliveries: list[Delivery]) -> None:
        """Ack each message whose writes are all done; the others go back on the queue after
        their backoff, each in a task of its own."""
        await asyncio.gather(*(settle(d.raw) for d in deliveries if d.again_in is None))
        for delivery in deliveries:
            if delivery.again_in is not None:
                self._later(delivery.raw, delivery.again_in)

    async def _retry_or_fail(
        self,
        collection: str,
        items: list[tuple[Delivery, DocumentWrite]],
        live: dict[str, dict[str, object]],
        reason: str,
        transient: bool = False,
    ) -> None:
        """Count a try; give up (failed, kept visible) or have its message come again after a
        backoff.

        A transient failure (a dependency down) never gives up: the write waits for it to come
        back. The backoff runs in a task holding the unacked message, so the consumer goes on
        with the rest of the queue meanwhile; if the worker dies, the broker redelivers it.
        """
        for delivery, w in items:
            try_count = int(str(live[w.queue_id].get("try_count", 0))) + 1
            if not transient and should_give_up(try_count, self._max_tries):
                await self._ledger.restate(
                    collection, w.queue_id, DocumentStatus.FAILED, reason, try_count
                )
                self._indexer.count(collection, w.op, "failed")
            else:
                await self._ledger.restate(
                    collection, w.queue_id, DocumentStatus.REQUEUED, reason, try_count
                )
                delivery.again_after(backoff_s(try_count))

    def _later(self, raw: AbstractIncomingMessage, delay_s: float) -> None:
        task = asyncio.create_task(_requeue_after(raw, delay_s))
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)


async def _finish_all(running: set[asyncio.Task[None]]) -> None:
    """Wait for the batches in hand, even if the wait itself is cancelled (then cancel them)."""
    try:
        await asyncio.gather(*running)
    except asyncio.CancelledError:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


async def _requeue_after(raw: AbstractIncomingMessage, delay_s: float) -> None:
    await asyncio.sleep(delay_s)
    await settle(raw, requeue=True)  # if the channel closed meanwhile, the broker redelivers it


def _write(write: DocumentWrite) -> Write:
    return Write(write.op, write.doc_id, write.timestamp, write.document)


def _transient(exc: Exception) -> bool:
    """A dependency is down or slow: the whole batch waits; nothing is wrong with a document."""
    return isinstance(exc, RpcTimeout) or dependency_error(exc) is not None


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
