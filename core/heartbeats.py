"""The heartbeat records each process writes into Redis, and how often it writes them.

One typed record per writer, each a JSON string (a plain key, or a field of a hash), so the
writer and every reader share one shape:

- an encoder's record, a field by encoder index in RedisKeys.encoders(): the model-holder
  registry that callers route by (core/holders.py);
- the worker's beat, RedisKeys.heartbeat("worker"), expiring: what readiness reads;
- an api search node's beat, a field by api index in RedisKeys.searchers(): for operators and
  tests.

A missing or malformed record reads as no record: a reader treats it as a process not heard
from, never as an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from pydantic import BaseModel, ValidationError

from core.enums import EncoderRole

ENCODER_BEAT_S = 1.0  # how often an encoder rewrites its record (its TTL: core/holders.py)
WORKER_BEAT_S = 2.0  # how often the worker rewrites its beat
# The worker's beat expires this long after it was written, and a reader holds an older one
# stale even where the key lingers. Whole seconds: Redis's EX takes an integer.
WORKER_BEAT_TTL_S = 10
SEARCH_NODE_BEAT_S = 2.0  # how often an api's search node rewrites its beat


class BeatRecord(BaseModel):
    """A record in its Redis form: one JSON string."""

    def to_redis(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_redis(cls, raw: bytes | str | None) -> Self | None:
        """None for a missing or malformed record."""
        if raw is None:
            return None
        try:
            return cls.model_validate_json(raw)
        except ValidationError:
            return None


class EncoderRecord(BeatRecord):
    """One encoder as it last announced itself."""

    index: int
    role: EncoderRole
    models: list[str] = []
    pid: int = 0
    last_seen: float


class WorkerBeat(BeatRecord):
    """Whether the worker's store answers and its broker connection is up, as of `ts`. A field
    missing reads as down, as readiness always read it."""

    ts: float = 0.0
    store: bool = False
    broker: bool = False

    def fresh(self, now: float) -> bool:
        return now - self.ts <= WORKER_BEAT_TTL_S


class SearchNodeBeat(BeatRecord):
    """An api's search node: alive as of `ts`, and what it has done."""

    ts: float
    pid: int
    searches: int  # answered since the process started
    position: str | None  # its replica's position (its text); None: no copy yet, or no replica
    copies: int  # copies of the store its replica has taken
    idle: bool = False  # its replica drops the stream: no search for BRAID_REPLICA_IDLE_S


def parse_registry(raw: Mapping[bytes | str, bytes | str]) -> list[EncoderRecord]:
    """The encoder registry's records; a malformed one is skipped."""
    records = (EncoderRecord.from_redis(value) for value in raw.values())
    return [record for record in records if record is not None]


def parse_search_nodes(raw: Mapping[bytes | str, bytes | str]) -> dict[str, SearchNodeBeat]:
    """The search nodes' beats by api index; a malformed one is skipped."""
    beats = {_text(index): SearchNodeBeat.from_redis(value) for index, value in raw.items()}
    return {index: beat for index, beat in beats.items() if beat is not None}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
