"""The document consumer: collects queue messages into batches, applies them, then acks."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from aio_pika.abc import AbstractIncomingMessage

from core.delivery import channel_open, settle
from core.enums import DocumentStatus
from core.errors import RpcTimeout, dependency_error
from core.ledger import Ledger
from core.messages import DocumentMessage
from core.retry import backoff_s, should_give_up
from worker.indexing import Indexer, Write

log = logging.getLogger(__name__)
REQUEUE_AFTER_FAILURE_S = 1.0
# Batches processed side by side: while the encoders embed two (one per document worker of a
# holder), another is planned (lexical vectors) or written to the store, so the model never
# waits. Documents shared by two batches are serialized by the per-document locks; the newest
# timestamp wins either way.
BATCHES_IN_FLIGHT = 3
HELD_PRUNE_AT = 1024  # messages held for the reaper before settled ones are let go


class DocumentConsumer:
    def __init__(
        self, indexer: Indexer, ledger: Ledger, batch_size: int, batch_wait_s: float, max_tries: int
    ) -> None:
        self._indexer = indexer
        self._ledger = ledger
        self._batch_size = batch_size
        self._batch_wait_s = batch_wait_s
        self._max_tries = max_tries
        self._inbox: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()
        self._stopping = asyncio.Event()
        self._waiting: set[asyncio.Task[None]] = set()  # messages held for a backoff
        # For the reaper (`touched`): the messages not known settled, and the queue ids of the
        # ones received or settled since it last asked.
        self._held: dict[AbstractIncomingMessage, str] = {}
        self._seen: set[str] = set()
        self._lost = False  # a held message's channel closed since it last asked

    async def on_message(self, message: AbstractIncomingMessage) -> None:
        queue_id = _queue_id(message)
        self._held[message] = queue_id
        self._seen.add(queue_id)
        if len(self._held) > HELD_PRUNE_AT:
            self._prune()
        await self._inbox.put(message)

    def touched(self) -> frozenset[str] | None:
        """The queue ids of the messages received or settled since the last call, or still
        unsettled: the reaper must spare them. None if a channel closed under one, as the broker
        may then deliver it again, perhaps unseen yet."""
        self._prune()
        touched = frozenset(self._seen | set(self._held.values()))
        lost, self._lost, self._seen = self._lost, False, set()
        return None if lost else touched

    def _prune(self) -> None:
        """Let go of settled messages (their bodies), keeping their ids until `touched`."""
        for message in [m for m in self._held if m.processed or not channel_open(m)]:
            self._lost |= not channel_open(message)
            self._seen.add(self._held.pop(message))

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

    async def _process_or_requeue(self, batch: list[AbstractIncomingMessage]) -> None:
        try:
            await self._process(batch)
        except Exception as exc:  # bookkeeping failed (Redis down): the batch comes back
            log.warning("a batch of %d could not be processed (%s); requeued", len(batch), exc)
            for message in batch:
                if not message.processed:
                    self._later(message, REQUEUE_AFTER_FAILURE_S)

    async def _next_batch(self) -> list[AbstractIncomingMessage]:
        try:
            first = await asyncio.wait_for(self._inbox.get(), timeout=0.5)
        except TimeoutError:
            return []
        batch = [first]
        deadline = asyncio.get_running_loop().time() + self._batch_wait_s
        while len(batch) < self._batch_size:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 and self._inbox.empty():
                break
            try:
                batch.append(await asyncio.wait_for(self._inbox.get(), timeout=max(remaining, 0)))
            except TimeoutError:
                break
        return batch

    async def _process(self, batch: list[AbstractIncomingMessage]) -> None:
        by_collection: dict[str, list[tuple[AbstractIncomingMessage, DocumentMessage]]] = (
            defaultdict(list)
        )
        for message in batch:
            if not channel_open(message):
                continue  # delivered before the broker connection dropped: it comes again
            try:
                parsed = DocumentMessage.model_validate_json(message.body)
            except ValueError:
                log.error("dropping unreadable document message")
                await settle(message)
                continue
            by_collection[parsed.collection].append((message, parsed))
        for collection, items in by_collection.items():
            await self._process_collection(collection, items)

    async def _process_collection(
        self, collection: str, items: list[tuple[AbstractIncomingMessage, DocumentMessage]]
    ) -> None:
        live = await self._ledger.live_items(collection, [m.queue_id for _, m in items])
        dead = [(raw, m) for raw, m in items if m.queue_id not in live]
        for raw, _ in dead:
            await settle(raw)  # cancelled by a newer delete, a purge or a dropped collection
        items = [(raw, m) for raw, m in items if m.queue_id in live]
        if not items:
            return
        try:
            await self._indexer.apply(collection, [_write(m) for _, m in items])
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
        items: list[tuple[AbstractIncomingMessage, DocumentMessage]],
        live: dict[str, dict[str, object]],
    ) -> None:
        """Apply a failed batch one write at a time, so a poison document fails alone."""
        for raw, m in items:
            try:
                await self._indexer.apply(collection, [_write(m)])
            except Exception as exc:  # this write alone fails: retry it, then mark it failed
                log.warning("write %s of %s failed: %s", m.queue_id, m.doc_id, _reason(exc))
                await self._retry_or_fail(
                    collection, [(raw, m)], live, _reason(exc), _transient(exc)
                )
            else:
                await self._finish(collection, [(raw, m)])

    async def _finish(
        self, collection: str, items: list[tuple[AbstractIncomingMessage, DocumentMessage]]
    ) -> None:
        """Processed: out of the ledger first (one round trip), then acked."""
        await self._ledger.finish(collection, [(m.queue_id, m.doc_id) for _, m in items])
        await asyncio.gather(*(settle(raw) for raw, _ in items))

    async def _retry_or_fail(
        self,
        collection: str,
        items: list[tuple[AbstractIncomingMessage, DocumentMessage]],
        live: dict[str, dict[str, object]],
        reason: str,
        transient: bool = False,
    ) -> None:
        """Count a try; give up (failed, kept visible) or requeue after a backoff.

        A transient failure (a dependency down) never gives up: the write waits for it to come
        back. The backoff runs in a task holding the unacked message, so the consumer goes on
        with the rest of the queue meanwhile; if the worker dies, the broker redelivers it.
        """
        for raw, m in items:
            try_count = int(str(live[m.queue_id].get("try_count", 0))) + 1
            if not transient and should_give_up(try_count, self._max_tries):
                await self._ledger.restate(
                    collection, m.queue_id, DocumentStatus.FAILED, reason, try_count
                )
                self._indexer.count(collection, m.op, "failed")
                await settle(raw)
            else:
                await self._ledger.restate(
                    collection, m.queue_id, DocumentStatus.REQUEUED, reason, try_count
                )
                self._later(raw, backoff_s(try_count))

    def _later(self, raw: AbstractIncomingMessage, delay_s: float) -> None:
        task = asyncio.create_task(_requeue_after(raw, delay_s))
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)


def _queue_id(message: AbstractIncomingMessage) -> str:
    """The api sends it as the AMQP message id; a message published before it did, in the body."""
    if message.message_id:
        return message.message_id
    try:
        return DocumentMessage.model_validate_json(message.body).queue_id
    except ValueError:
        return ""  # unreadable: dropped when processed


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


def _write(message: DocumentMessage) -> Write:
    return Write(message.op, message.doc_id, message.timestamp, message.document)


def _transient(exc: Exception) -> bool:
    """A dependency is down or slow: the whole batch waits; nothing is wrong with a document."""
    return isinstance(exc, RpcTimeout) or dependency_error(exc) is not None


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
