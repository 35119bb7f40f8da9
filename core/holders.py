"""The model-holder registry: who is alive, where model work goes.

Every encoder writes a record (core/heartbeats.py: role, models loaded, pid, last seen) into one
Redis hash about once a second. A caller (the worker, a forwarding router) reads a snapshot at
most every REFRESH_S and sends model work to the holders' shared queue when a live holder is
known, so it skips the router hop. Every live holder consumes that queue: when one dies, the
broker hands its unacked requests to a survivor, so no caller ever waits on a dead holder's
private queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.enums import EmbedKind, EncoderRole
from core.heartbeats import ENCODER_BEAT_S, EncoderRecord, parse_registry
from core.names import RedisKeys, embed_queue, holder_queue

log = logging.getLogger(__name__)

HOLDER_TTL_S = 3 * ENCODER_BEAT_S  # a holder silent this long (three missed beats) is dead
REFRESH_S = 0.5  # a caller re-reads the registry at most this often
QUERY_TRY_S = 5.0  # a query embedding unanswered this long is sent once more


@dataclass(frozen=True)
class Route:
    """Where to send model work: `holders` are the live holders consuming `queue` (none: the
    shared embed queue, where any encoder takes it and a router forwards it)."""

    queue: str
    holders: tuple[int, ...] = ()

    @property
    def direct(self) -> bool:
        return bool(self.holders)


def is_alive(record: EncoderRecord, now: float, ttl_s: float = HOLDER_TTL_S) -> bool:
    """Heard from within `ttl_s` (a record slightly from the future, clock skew, counts)."""
    return now - record.last_seen <= ttl_s


def live_holders(
    records: Iterable[EncoderRecord], now: float, ttl_s: float = HOLDER_TTL_S
) -> list[EncoderRecord]:
    """The model holders whose heartbeat has not expired, by index."""
    live = [r for r in records if r.role is EncoderRole.MODEL_HOLDER and is_alive(r, now, ttl_s)]
    return sorted(live, key=lambda r: r.index)


def choose_route(
    kind: EmbedKind, records: Iterable[EncoderRecord], now: float, ttl_s: float = HOLDER_TTL_S
) -> Route:
    """Straight to the holders when one is alive; otherwise through any encoder (the hop)."""
    holders = tuple(r.index for r in live_holders(records, now, ttl_s))
    if holders:
        return Route(holder_queue(kind), holders)
    return Route(embed_queue(kind))


def attempt_timeouts(
    kind: EmbedKind, timeout_s: float, query_try_s: float = QUERY_TRY_S
) -> tuple[float, ...]:
    """Per-try RPC timeouts summing to `timeout_s`.

    A query is one short text: when its first try stalls (a holder that died after taking it
    but before the broker noticed, or a freshly restarted one still loading its model), one more
    try costs nothing. Document work gets a single try: under a backlog a retry would only
    double the bulk work, and the broker already redelivers what a dead holder took.
    """
    if kind is EmbedKind.QUERY and timeout_s > 2 * query_try_s:
        return (query_try_s, timeout_s - query_try_s)
    return (timeout_s,)


class HolderDirectory:
    """A caller's cached view of the registry, re-read from Redis at most every `refresh_s`."""

    def __init__(
        self,
        redis: Redis,
        refresh_s: float = REFRESH_S,
        ttl_s: float = HOLDER_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._redis = redis
        self._refresh_s = refresh_s
        self._ttl_s = ttl_s
        self._clock = clock
        self._records: list[EncoderRecord] = []
        self._read_at = float("-inf")

    async def route(self, kind: EmbedKind) -> Route:
        now = self._clock()
        if now - self._read_at >= self._refresh_s:
            self._read_at = now  # concurrent callers keep the old snapshot meanwhile
            await self._refresh()
        return choose_route(kind, self._records, now, self._ttl_s)

    async def _refresh(self) -> None:
        """On a Redis failure the last snapshot stays; its records expire by themselves."""
        try:
            raw = await self._redis.hgetall(RedisKeys.encoders())
        except (RedisError, OSError) as exc:
            log.warning("could not read the encoder registry: %s", exc)
            return
        self._records = parse_registry(raw)
