"""Async writes: record each in the ledger, publish them durably, and only then answer 200."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from app.context import ApiContext
from app.services.validation import check_document
from app.services.worker import require_collection
from core.enums import OpType, UnavailableReason
from core.errors import Unavailable
from core.ledger import QueuedWrite, new_queue_id
from core.messages import DocumentMessage, DocumentWrite
from core.names import DOCUMENTS_QUEUE
from core.schemas.document import Document


async def enqueue_upserts(ctx: ApiContext, collection: str, documents: list[Document]) -> None:
    config = await require_collection(ctx, collection)
    for document in documents:
        check_document(config, document)
    writes = [
        DocumentWrite(
            queue_id=new_queue_id(),
            op=OpType.UPSERT,
            doc_id=d.id,
            timestamp=d.timestamp,
            document=d,
        )
        for d in documents
    ]
    await _publish(ctx, collection, writes)


async def enqueue_delete(
    ctx: ApiContext, collection: str, doc_id: str, timestamp: datetime
) -> None:
    await require_collection(ctx, collection)
    await ctx.ledger.record_delete(collection, doc_id, timestamp)
    write = DocumentWrite(
        queue_id=new_queue_id(), op=OpType.DELETE, doc_id=doc_id, timestamp=timestamp
    )
    await _publish(ctx, collection, [write])


async def _publish(ctx: ApiContext, collection: str, writes: list[DocumentWrite]) -> None:
    """Ledger first, so the worker sees each write as live; then the broker's confirms, one a
    message of up to WRITES_PER_MESSAGE writes, which count only within the publish deadline of
    the entries: the worker's reaper forgets older entries whose message it never saw
    (worker/reaper.py). The writes of a message refused or confirmed late are undone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ctx.settings.publish_deadline_s
    await ctx.ledger.enqueue(
        collection, [QueuedWrite(w.queue_id, w.doc_id, w.op, w.timestamp) for w in writes]
    )
    messages = DocumentMessage.carrying(collection, writes)
    publishes = (
        ctx.bus.publish(DOCUMENTS_QUEUE, m, persistent=True, message_id=m.writes[0].queue_id)
        for m in messages
    )
    results: list[object] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout_at(deadline):
            results = await asyncio.gather(*publishes, return_exceptions=True)
    if loop.time() >= deadline:  # a confirm seen late counts as none
        late = Unavailable(
            f"the message broker did not confirm the write within "
            f"{ctx.settings.publish_deadline_s:g} s; retry later",
            ctx.settings.retry_after_s,
            UnavailableReason.BROKER_UNCONFIRMED,
        )
        results = [late] * len(messages)
    failures = [
        (m, r) for m, r in zip(messages, results, strict=True) if isinstance(r, BaseException)
    ]
    await ctx.ledger.finish(
        collection, [(w.queue_id, w.doc_id) for m, _ in failures for w in m.writes]
    )
    if failures:
        raise failures[0][1]
