"""The watchdog: each process's consumers judged by their progress, not by their flags.

A consumer that is subscribed, connected and counted by the broker can still take nothing (a
callback that raises on every delivery, a handler stuck on a dead channel): after a broker
restart under load the worker once indexed nothing for good while readiness said 200. So every
process watches its own subscriptions. The broker delivers whenever a consumer has room, so a
consumer whose queue held ready messages at two looks in a row and that got no delivery for
`stall_s` has settled nothing for that long: it is stalled. The process then publishes its stalls
(one Redis hash, a field per process, which readiness reads), shows them in a metric, and once a
stall has lasted `stall_s + grace_s` it logs why and stops itself (SIGTERM: its usual clean stop),
so that supervisord starts it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel
from redis.asyncio import Redis
from redis.exceptions import RedisError

from core.delivery import QueueState
from core.lifecycle import Periodic
from core.metrics import CONSUMER_STALLED, Recorder
from core.names import RedisKeys
from core.settings import Settings

log = logging.getLogger(__name__)
RECORD_TTL_S = 30.0  # a record older than this is a process gone: its stalls no longer count


@dataclass(frozen=True)
class Watched:
    """One live subscription as its bus sees it."""

    source: str  # the queue it consumes, or the exchange its own queue is bound to
    queue: str  # the queue the broker is asked about
    delivered_at: float  # monotonic: its last delivery, or when it subscribed


class Stall(BaseModel):
    source: str
    ready: int  # messages waiting for it at the last look
    idle_s: float  # since its last delivery


class ProgressRecord(BaseModel):
    """What a process publishes of itself (RedisKeys.progress, a field per process)."""

    ts: float  # wall clock
    stalled: list[Stall] = []


def find_stalls(
    watched: Sequence[Watched],
    states: Mapping[str, QueueState | None],
    backlogged: set[str],
    now: float,
    stall_s: float,
) -> tuple[list[Stall], set[str]]:
    """The stalled subscriptions, and the sources seen with messages ready at this look (the
    next call's `backlogged`). A queue the broker did not answer for is judged at neither."""
    stalls: list[Stall] = []
    ready_now: set[str] = set()
    for item in watched:
        state = states.get(item.queue)
        if state is None or state.messages == 0:
            continue
        ready_now.add(item.source)
        idle_s = now - item.delivered_at
        if item.source in backlogged and idle_s >= stall_s:
            stalls.append(Stall(source=item.source, ready=state.messages, idle_s=round(idle_s, 1)))
    return stalls, ready_now


def parse_records(raw: Mapping[bytes | str, bytes | str], now: float) -> dict[str, ProgressRecord]:
    """Every process's fresh record by process name; a stale or malformed one is skipped."""
    records = {}
    for name, value in raw.items():
        try:
            record = ProgressRecord.model_validate_json(value)
        except ValueError:
            continue
        if now - record.ts <= RECORD_TTL_S:
            records[name.decode() if isinstance(name, bytes) else name] = record
    return records


def hopeless(stalls: Sequence[Stall], stall_s: float, grace_s: float) -> list[Stall]:
    """The stalls that have outlasted their grace: the process should be started again."""
    return [s for s in stalls if s.idle_s >= stall_s + grace_s]


class WatchedBus(Protocol):
    """What the watchdog needs of a bus (core.bus.Bus)."""

    def watched(self) -> list[Watched]: ...

    async def queue_states(self, queues: Sequence[str]) -> Mapping[str, QueueState | None]: ...


class Watchdog:
    """Looks at a process's subscriptions every `interval_s`; see the module docstring."""

    def __init__(
        self,
        bus: WatchedBus,
        redis: Redis,
        recorder: Recorder,
        process: str,
        settings: Settings,
    ) -> None:
        self._bus = bus
        self._redis = redis
        self._recorder = recorder
        self._process = process
        self._stall_s = settings.stall_s
        self._grace_s = settings.stall_grace_s
        self._backlogged: set[str] = set()
        self._flagged: set[str] = set()
        self._gave_up = False
        self._stalls: list[Stall] = []
        self.periodic = Periodic("watchdog", min(5.0, self._stall_s / 3), self.tick)

    async def tick(self) -> None:
        watched = self._bus.watched()
        states = await self._bus.queue_states(sorted({w.queue for w in watched}))
        self._stalls, self._backlogged = find_stalls(
            watched, states, self._backlogged, time.monotonic(), self._stall_s
        )
        self._report()
        self._give_up_if_hopeless()
        # Last: with Redis down this fails, and the judgement above must not depend on it.
        record = ProgressRecord(ts=time.time(), stalled=self._stalls)
        await self._redis.hset(RedisKeys.progress(), self._process, record.model_dump_json())

    def _give_up_if_hopeless(self) -> None:
        over = hopeless(self._stalls, self._stall_s, self._grace_s)
        if over and not self._gave_up:
            self._gave_up = True
            log.error(
                "%s stalled for %.0f s with messages waiting (%s); exiting so that it is "
                "started again",
                self._process,
                over[0].idle_s,
                _describe(over),
            )
            os.kill(os.getpid(), signal.SIGTERM)  # the process's usual clean stop

    def start(self) -> None:
        self.periodic.start()

    async def close(self) -> None:
        """At a clean stop: readiness stops reading this process's record at once."""
        await self.periodic.stop()
        with contextlib.suppress(RedisError, OSError):
            await self._redis.hdel(RedisKeys.progress(), self._process)

    def _report(self) -> None:
        """The metric, and one log line when a stall starts or ends."""
        now = {s.source for s in self._stalls}
        for stall in self._stalls:
            if stall.source not in self._flagged:
                log.warning("%s is stalled: %s", self._process, _describe([stall]))
        for source in self._flagged - now:
            log.info("%s: %s moves again", self._process, source)
        for source in self._flagged | now:
            self._recorder.set(CONSUMER_STALLED, float(source in now), source=source)
        self._flagged = now


def _describe(stalls: Sequence[Stall]) -> str:
    return "; ".join(
        f"{s.source}: {s.ready} messages ready, nothing taken for {s.idle_s:.0f} s" for s in stalls
    )
