"""The ledger's item scripts take a request's or a batch's items in calls of ITEMS_A_CALL, against
the stack's Redis: every item is counted once however often a call is replayed, each document's
statuses list its own items, and finishing or reaping takes away exactly what it says it did."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from core.enums import DocumentStatus, OpType
from core.ledger import ITEMS_A_CALL, Ledger, QueuedWrite, new_queue_id
from core.redis_client import connect_redis
from harness.stack import Stack

ITEMS = 2 * ITEMS_A_CALL + 500  # three calls
T = datetime(2026, 3, 1, tzinfo=UTC)


def _writes() -> list[QueuedWrite]:
    """ITEMS writes of ITEMS - 1 documents: the last document has two (an upsert and a delete)."""
    writes = [
        QueuedWrite(new_queue_id(), f"d{i}", OpType.UPSERT, T + timedelta(microseconds=i))
        for i in range(ITEMS - 1)
    ]
    return [*writes, QueuedWrite(new_queue_id(), writes[-1].doc_id, OpType.DELETE, T)]


async def _run(redis_url: str) -> None:
    collection = f"ledger{uuid.uuid4().hex[:8]}"
    redis = await connect_redis(redis_url)
    ledger = Ledger(redis)
    try:
        writes = _writes()
        await ledger.enqueue(collection, writes)
        await ledger.enqueue(collection, writes)  # a replayed round trip changes nothing
        info = await ledger.queue_info(collection)
        assert (info.queued_upsert, info.queued_delete, info.total) == (ITEMS - 1, 1, ITEMS)

        shared = await ledger.statuses(collection, writes[-1].doc_id)
        assert sorted(s.queue_id for s in shared) == sorted(w.queue_id for w in writes[-2:])
        assert {s.status for s in shared} == {DocumentStatus.QUEUED}

        # The first half finished (twice: a redelivered batch finds them gone), the rest reaped
        # but for one the consumer holds and one requeued (no longer only `queued`).
        done = [(w.queue_id, w.doc_id) for w in writes[: ITEMS // 2]]
        assert await ledger.finish(collection, done) == len(done)
        assert await ledger.finish(collection, done) == 0
        held, requeued = writes[-1].queue_id, writes[ITEMS // 2].queue_id
        await ledger.restate(collection, requeued, DocumentStatus.REQUEUED, "busy", 1)
        future = (datetime.now(UTC) + timedelta(hours=1)).timestamp()
        assert await ledger.reap(collection, future, frozenset({held})) == ITEMS - len(done) - 2
        info = await ledger.queue_info(collection)
        assert (info.queued_delete, info.requeued_upsert, info.total) == (1, 1, 2)
        assert [s.queue_id for s in await ledger.statuses(collection, writes[-1].doc_id)] == [held]
        assert await ledger.statuses(collection, writes[0].doc_id) == []
    finally:
        await ledger.drop(collection)
        await redis.aclose()


def test_items_are_counted_once_and_finished_or_reaped_exactly_in_batches(stack: Stack) -> None:
    asyncio.run(_run(stack.redis_url))
