"""Async writes: record each in the ledger, publish it durably, and only then answer 200."""

from __future__ import annotations

import asyncio
from datetime import datetime

from app.context import ApiContext
from app.services.validation import check_document
from app.services.worker import require_collection
from core.enums import OpType
from core.ledger import QueuedWrite, new_queue_id
from core.messages import DocumentMessage
from core.names import DOCUMENTS_QUEUE
from core.schemas.document import Document


async def enqueue_upserts(ctx: ApiContext, collection: str, documents: list[Document]) -> None:
    config = await require_collection(ctx, collection)
    for document in documents:
        check_document(config, document)
    messages = [
        DocumentMessage(
            collection=collection,
            queue_id=new_queue_id(),
            op=OpType.UPSERT,
            doc_id=d.id,
            timestamp=d.timestamp,
            document=d,
        )
        for d in documents
    ]
    await _publish(ctx, collection, messages)


async def enqueue_delete(
    ctx: ApiContext, collection: str, doc_id: str, timestamp: datetime
) -> None:
    await require_collection(ctx, collection)
    # The tombstone keeps older upserts, queued or late, from resurrecting the document.
    await ctx.ledger.set_tombstone(collection, doc_id, timestamp)
    await ctx.ledger.cancel_upserts(collection, doc_id, timestamp)
    message = DocumentMessage(
        collection=collection,
        queue_id=new_queue_id(),
        op=OpType.DELETE,
        doc_id=doc_id,
        timestamp=timestamp,
    )
    await _publish(ctx, collection, [message])


async def _publish(ctx: ApiContext, collection: str, messages: list[DocumentMessage]) -> None:
    """Ledger first, so the worker sees the item as live; undo it for what the broker refused."""
    await ctx.ledger.enqueue(
        collection, [QueuedWrite(m.queue_id, m.doc_id, m.op, m.timestamp) for m in messages]
    )
    results = await asyncio.gather(
        *(ctx.bus.publish(DOCUMENTS_QUEUE, m, persistent=True) for m in messages),
        return_exceptions=True,
    )
    failures = [
        (m, r) for m, r in zip(messages, results, strict=True) if isinstance(r, BaseException)
    ]
    await ctx.ledger.finish(collection, [(m.queue_id, m.doc_id) for m, _ in failures])
    if failures:
        raise failures[0][1]
