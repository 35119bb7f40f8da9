"""The ingest ledger in Redis: every queued write's status, per-collection counts, tombstones.

A queued message is live while its queue_id is in the ledger: cancelling (a newer delete, a
purge, a dropped collection) removes it, and the worker skips messages that are not live.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from core.enums import DocumentStatus, OpType
from core.names import RedisKeys
from core.redis_client import as_text
from core.schemas.document import QueueInfo, StatusEntry

# The item scripts take many items a call (`_batched`): KEYS are the items, the counters, then
# each item's document set; ARGV the call's own arguments, then each item's in the same order (an
# enqueue's three, or the queue id). One EVAL an item packed the script and parsed a reply for
# every document: an enqueue cost the api 31 µs an item on the client that way, 14 batched; a
# finish 20, now 5 (docs/benchmarks.md, issue 32).

# Record each item and count it, once: a replayed round trip (its reply was lost) changes nothing.
_ENQUEUE = """
local recorded = 0
for i = 3, #KEYS do
  local at = (i - 3) * 3
  if redis.call('HSETNX', KEYS[1], ARGV[at + 1], ARGV[at + 2]) == 1 then
    redis.call('SADD', KEYS[i], ARGV[at + 1])
    redis.call('HINCRBY', KEYS[2], ARGV[at + 3], 1)
    recorded = recorded + 1
  end
end
return recorded
"""

# Remove each item and decrement the counter of its status/op, atomically (redelivery-safe): every
# item when ARGV[1] is empty, else only those in that status (the reaper's, still `queued`).
_REMOVE = """
local removed = 0
for i = 3, #KEYS do
  local raw = redis.call('HGET', KEYS[1], ARGV[i - 1])
  if raw then
    local item = cjson.decode(raw)
    if ARGV[1] == '' or item.status == ARGV[1] then
      redis.call('HDEL', KEYS[1], ARGV[i - 1])
      redis.call('SREM', KEYS[i], ARGV[i - 1])
      redis.call('HINCRBY', KEYS[2], item.status .. '_' .. item.op_type, -1)
      removed = removed + 1
    end
  end
end
return removed
"""

# Change an item's status (requeued/failed), moving it between counters.
_RESTATE = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local item = cjson.decode(raw)
redis.call('HINCRBY', KEYS[2], item.status .. '_' .. item.op_type, -1)
item.status = ARGV[2]
item.info = ARGV[3]
item.try_count = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(item))
redis.call('HINCRBY', KEYS[2], item.status .. '_' .. item.op_type, 1)
return 1
"""

_MAX_TOMBSTONE = """
local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
if tonumber(ARGV[2]) > old then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1
"""


FAILED_SCAN_MAX = 20_000


class FailedWrite(BaseModel):
    """A write that gave up after its tries, kept visible until the queue is purged."""

    doc_id: str
    op_type: OpType
    info: str
    timestamp: datetime
    try_count: int


@dataclass(frozen=True)
class QueuedWrite:
    queue_id: str
    doc_id: str
    op: OpType
    timestamp: datetime


# Items a script call takes at most, so a reap of many does not hold Redis in one long script.
ITEMS_A_CALL = 1000


def _batched(
    pipe: Pipeline,
    script: str,
    collection: str,
    items: list[tuple[str, list[str]]],
    first: tuple[str, ...] = (),
) -> None:
    """Add calls of an item script to `pipe`, ITEMS_A_CALL items each: each item given as its
    document id and its arguments, after the `first` arguments of every call."""
    for start in range(0, len(items), ITEMS_A_CALL):
        chunk = items[start : start + ITEMS_A_CALL]
        keys = [RedisKeys.queue_items(collection), RedisKeys.queue_counts(collection)]
        keys += [RedisKeys.doc_items(collection, doc_id) for doc_id, _ in chunk]
        pipe.eval(script, len(keys), *keys, *first, *(arg for _, args in chunk for arg in args))


def to_micros(ts: datetime) -> int:
    return int(ts.timestamp() * 1_000_000)


def new_queue_id() -> str:
    return uuid.uuid4().hex


def delete_covers(delete_us: int, op: OpType, write_us: int) -> bool:
    """Whether a delete at `delete_us` cancels a queued write of the same document: upserts at
    or before it (a tie goes to the delete); never another delete."""
    return op is OpType.UPSERT and write_us <= delete_us


class Ledger:
    """Scripts in a pipeline go as EVAL with their text: the client replays a pipeline on a new
    connection after Redis restarts, and an EVALSHA there finds the script cache empty (a 500).
    A script called alone reloads itself (redis-py), so those stay registered."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._restate = redis.register_script(_RESTATE)
        self._max_tombstone = redis.register_script(_MAX_TOMBSTONE)

    async def enqueue(self, collection: str, items: list[QueuedWrite]) -> None:
        """Record writes about to be published, in one round trip, with the wall-clock time
        (`queued_at`) the reaper measures the publish deadline from. Each is recorded once: the
        client replays a round trip whose reply a dropped connection lost."""
        queued_at = time.time()
        recorded: list[tuple[str, list[str]]] = []
        for write in items:
            item = {
                "queue_id": write.queue_id,
                "doc_id": write.doc_id,
                "op_type": write.op.value,
                "status": DocumentStatus.QUEUED.value,
                "timestamp": write.timestamp.isoformat(),
                "ts_us": to_micros(write.timestamp),
                "try_count": 0,
                "info": "",
                "queued_at": queued_at,
            }
            args = [write.queue_id, json.dumps(item), f"queued_{write.op.value}"]
            recorded.append((write.doc_id, args))
        pipe = self._redis.pipeline(transaction=True)
        _batched(pipe, _ENQUEUE, collection, recorded)
        await pipe.execute()

    async def live_items(self, collection: str, queue_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not queue_ids:
            return {}
        raws = await self._redis.hmget(RedisKeys.queue_items(collection), queue_ids)
        return {qid: json.loads(raw) for qid, raw in zip(queue_ids, raws, strict=True) if raw}

    async def finish(self, collection: str, items: list[tuple[str, str]]) -> int:
        """Remove processed items, given as (queue_id, doc_id), in one round trip; how many
        were still there."""
        return await self._remove(collection, items, only="")

    async def reap(self, collection: str, before: float, spare: frozenset[str]) -> int:
        """Forget the items still only `queued` that were recorded before `before` (wall clock),
        except those in `spare`; how many. Only worker/reaper.py knows when that is safe.
        The items are scanned only while the counters say some are queued (failed ones stay
        until a purge, and may be many)."""
        counts = await self._redis.hmget(
            RedisKeys.queue_counts(collection), [f"queued_{op.value}" for op in OpType]
        )
        if not any(int(count or 0) > 0 for count in counts):
            return 0
        doomed: list[tuple[str, str]] = []
        async for queue_id, raw in self._redis.hscan_iter(
            RedisKeys.queue_items(collection), count=500
        ):
            qid, item = as_text(queue_id), json.loads(raw)
            if (
                item["status"] == DocumentStatus.QUEUED.value
                and float(item.get("queued_at", 0.0)) < before
                and qid not in spare
            ):
                doomed.append((qid, item["doc_id"]))
        return await self._remove(collection, doomed, only=DocumentStatus.QUEUED.value)

    async def _remove(self, collection: str, items: list[tuple[str, str]], only: str) -> int:
        """Remove the (queue_id, doc_id) items in status `only` (any if empty) in one round
        trip; how many were removed."""
        if not items:
            return 0
        pipe = self._redis.pipeline(transaction=False)
        pairs = [(doc_id, [queue_id]) for queue_id, doc_id in items]
        _batched(pipe, _REMOVE, collection, pairs, first=(only,))
        return sum(int(found) for found in await pipe.execute())

    async def restate(
        self, collection: str, queue_id: str, status: DocumentStatus, info: str, try_count: int
    ) -> None:
        keys = [RedisKeys.queue_items(collection), RedisKeys.queue_counts(collection)]
        await self._restate(keys=keys, args=[queue_id, status.value, info, try_count])

    async def record_delete(self, collection: str, doc_id: str, ts: datetime) -> None:
        """What a delete at `ts` leaves in the ledger before it is applied or published, sync or
        async alike: the tombstone keeps older upserts, queued or late, from resurrecting the
        document, and the queued upserts it covers are cancelled (their messages become no-ops).
        """
        await self.set_tombstone(collection, doc_id, ts)
        await self.cancel_upserts(collection, doc_id, ts)

    async def cancel_upserts(self, collection: str, doc_id: str, up_to: datetime) -> int:
        """Drop every queued upsert of the document that a delete at `up_to` covers."""
        queue_ids = [
            as_text(q) for q in await self._redis.smembers(RedisKeys.doc_items(collection, doc_id))
        ]
        items = await self.live_items(collection, queue_ids)
        limit = to_micros(up_to)
        return await self.finish(
            collection,
            [
                (qid, doc_id)
                for qid, item in items.items()
                if delete_covers(limit, OpType(item["op_type"]), item["ts_us"])
            ],
        )

    async def statuses(self, collection: str, doc_id: str) -> list[StatusEntry]:
        queue_ids = [
            as_text(q) for q in await self._redis.smembers(RedisKeys.doc_items(collection, doc_id))
        ]
        items = await self.live_items(collection, queue_ids)
        return [
            StatusEntry(
                status=DocumentStatus(item["status"]),
                op_type=OpType(item["op_type"]),
                info=item["info"] or None,
                timestamp=datetime.fromisoformat(item["timestamp"]),
                queue_id=qid,
                try_count=item["try_count"],
            )
            for qid, item in items.items()
        ]

    async def failed(self, collection: str, limit: int) -> list[FailedWrite]:
        """Up to `limit` failed writes with their reasons, found by scanning the queue's items
        (at most FAILED_SCAN_MAX of them: a page for an operator, not an export)."""
        found: list[FailedWrite] = []
        scanned = 0
        async for _, raw in self._redis.hscan_iter(RedisKeys.queue_items(collection), count=500):
            scanned += 1
            item = json.loads(raw)
            if item["status"] == DocumentStatus.FAILED.value:
                found.append(FailedWrite.model_validate(item))
                if len(found) >= limit:
                    break
            if scanned >= FAILED_SCAN_MAX:
                break
        return sorted(found, key=lambda w: w.timestamp)

    async def queue_info(self, collection: str) -> QueueInfo:
        raw = await self._redis.hgetall(RedisKeys.queue_counts(collection))
        counts = {as_text(k): max(0, int(v)) for k, v in raw.items()}
        info = QueueInfo(**{k: v for k, v in counts.items() if k in QueueInfo.model_fields})
        info.total = sum(getattr(info, f) for f in QueueInfo.model_fields if f != "total")
        return info

    async def set_tombstone(self, collection: str, doc_id: str, ts: datetime) -> None:
        await self._max_tombstone(
            keys=[RedisKeys.tombstones(collection)], args=[doc_id, to_micros(ts)]
        )

    async def tombstones(self, collection: str, doc_ids: list[str]) -> dict[str, int]:
        if not doc_ids:
            return {}
        raws = await self._redis.hmget(RedisKeys.tombstones(collection), doc_ids)
        return {d: int(r) for d, r in zip(doc_ids, raws, strict=True) if r is not None}

    def pipeline(self) -> Pipeline:
        """One round trip for a caller's records (`record_indexed` and the like)."""
        return self._redis.pipeline(transaction=False)

    @staticmethod
    def record_indexed(
        pipe: Pipeline, collection: str, stored: dict[str, datetime], deleted: list[str]
    ) -> None:
        """Remember which version of each document the store now holds, in `pipe`."""
        key = RedisKeys.indexed(collection)
        if stored:
            pipe.hset(key, mapping={d: ts.isoformat() for d, ts in stored.items()})
        if deleted:
            pipe.hdel(key, *deleted)

    async def indexed_at(self, collection: str, doc_id: str) -> datetime | None:
        raw = await self._redis.hget(RedisKeys.indexed(collection), doc_id)
        return datetime.fromisoformat(as_text(raw)) if raw else None

    async def purge(self, collection: str) -> None:
        """Forget every queued item of the collection (its messages become no-ops)."""
        pattern = RedisKeys.doc_items(collection, "*")
        keys = [k async for k in self._redis.scan_iter(match=pattern, count=1000)]
        keys += [RedisKeys.queue_items(collection), RedisKeys.queue_counts(collection)]
        await self._redis.delete(*keys)

    async def drop(self, collection: str) -> None:
        await self.purge(collection)
        await self._redis.delete(
            RedisKeys.tombstones(collection), RedisKeys.lexical_stats(collection)
        )


def utcnow() -> datetime:
    return datetime.now(UTC)
