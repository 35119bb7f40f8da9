"""Forget ledger entries whose message never reached the broker.

The api records a write in the ledger, then publishes it (app/services/ingest.py). An api killed
between the two, or one that cannot undo its entry after a failed publish (Redis down), leaves an
entry nothing will ever process: its client got no 200, so no acknowledged write is at stake,
but the collection's queue count would stay up for ever and the document's status say `queued`.

An entry may be forgotten only when its message can no longer be anywhere. The api answers 200
only for a confirm it saw within `publish_deadline_s` of recording the entry, so a write that
counts was in the broker by then. Two sightings `REAP_EVERY_S` apart, on one connection, each with
no message ready in the documents queue, leave such a message only one place to be: received by
this worker after the first sighting began, or still unsettled in its hands (the worker is the
queue's one consumer). So what is forgotten
is an entry still `queued`, recorded more than the deadline (plus a margin for the two clocks)
before the first sighting, that the consumer touched at neither.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from core.bus import Bus
from core.catalog import Catalog
from core.ledger import Ledger
from core.lifecycle import Periodic
from core.names import DOCUMENTS_QUEUE
from worker.consumer import DocumentConsumer

log = logging.getLogger(__name__)
REAP_EVERY_S = 5.0
# The api's deadline runs on its monotonic clock, an entry's age on the wall clock.
CLOCK_MARGIN_S = 2.0


@dataclass(frozen=True)
class Sighting:
    """The documents queue seen with nothing ready."""

    at: float  # wall clock, taken before the broker was asked
    touched: frozenset[str]
    reconnects: int


@dataclass(frozen=True)
class Reap:
    before: float  # entries recorded before this (wall clock)
    spare: frozenset[str]


def reap_after(
    last: Sighting | None, now: Sighting | None, publish_deadline_s: float
) -> Reap | None:
    """What two sightings in a row allow to be forgotten, if anything."""
    if last is None or now is None or last.reconnects != now.reconnects:
        return None
    return Reap(last.at - publish_deadline_s - CLOCK_MARGIN_S, last.touched | now.touched)


class Reaper:
    def __init__(
        self,
        bus: Bus,
        ledger: Ledger,
        catalog: Catalog,
        consumer: DocumentConsumer,
        publish_deadline_s: float,
    ) -> None:
        self._bus = bus
        self._ledger = ledger
        self._catalog = catalog
        self._consumer = consumer
        self._deadline_s = publish_deadline_s
        self._last: Sighting | None = None
        self.periodic = Periodic("ledger reaper", REAP_EVERY_S, self.tick)

    async def tick(self) -> None:
        """Look at the queue once; after two quiet sightings in a row, forget what is safe."""
        last, self._last = self._last, await self._sight()
        allowed = reap_after(last, self._last, self._deadline_s)
        if allowed is None:
            return
        reaped = 0
        for name in await self._catalog.names():
            reaped += await self._ledger.reap(name, allowed.before, allowed.spare)
        if reaped:
            log.warning("forgot %d queued writes whose messages never reached the broker", reaped)

    async def _sight(self) -> Sighting | None:
        at, reconnects = time.time(), self._bus.reconnects
        try:
            state = (await self._bus.queue_states([DOCUMENTS_QUEUE]))[DOCUMENTS_QUEUE]
        finally:  # after the broker answered; and always, so the consumer's record stays short
            touched = self._consumer.touched()
        if (
            state is None
            or state.messages
            or state.consumers != 1  # another consumer's messages are not ours to see
            or touched is None
            or self._bus.reconnects != reconnects
        ):
            return None
        return Sighting(at, touched, reconnects)
