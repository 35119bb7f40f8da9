"""Bulk-load a JSON-lines file of documents into a collection, resumably.

Each line is one document as the API takes it (`id`, `name`, `content`, `metadata`, ...). A line
without a `timestamp` gets the time the load first started (kept in the state file, so a resumed
load writes the same versions). Documents go out in bulk requests of `batch` (the API's limit is
100), `in_flight` at a time; a 503 waits its `Retry-After` and a dropped connection or a 502/504
backs off, both without end (Ctrl-C stops; run again to resume). Any other refusal stops the load
with the service's message and the lines it concerns.

The state file records how many leading lines the service has acknowledged, after every batch,
so a second run skips them. Progress shows what the collection has *indexed* (loader/progress.py).
The load's time runs until the last document is indexed, polled closer as it nears (`next_poll`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import httpx

from loader.progress import Progress, Snapshot

MAX_BATCH = 100  # documents per bulk request: the API's limit
POLL_S = 1.0
FINE_POLL_S = 0.05  # the closest the last documents' wait polls
BACKOFF_MAX_S = 30.0
TRANSIENT_STATUS = frozenset({502, 503, 504})


class LoadError(RuntimeError):
    """The file or the service refused the load; the message says what to fix."""


@dataclass
class State:
    """What a previous run of the same file got acknowledged: its first `done` lines, whose
    SHA-256 is `digest`. A run resumes only if those lines are unchanged (a later line may have
    been fixed, or lines appended)."""

    source: str
    done: int
    digest: str
    timestamp: str

    @classmethod
    def read(cls, path: Path, source: Path) -> State:
        fresh = cls(str(source.resolve()), 0, hashlib.sha256().hexdigest(), _now())
        if not path.exists():
            return fresh
        try:
            saved = json.loads(path.read_text())
            state = cls(saved["source"], int(saved["done"]), saved["digest"], saved["timestamp"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LoadError(f"{path} is not a loader state file ({exc}); remove it") from exc
        if state.source != fresh.source or prefix_digest(source, state.done) != state.digest:
            raise LoadError(
                f"the first {state.done:,} documents of {source} changed since {path} was "
                "written (or it belongs to another file); remove it to load from the start"
            )
        return state

    def write(self, path: Path) -> None:
        scratch = path.with_name(path.name + ".tmp")
        scratch.write_text(json.dumps(self.__dict__))
        os.replace(scratch, path)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every non-blank line."""
    with path.open("rb") as handle:
        for line_no, line in enumerate(handle, 1):
            if line.strip():
                yield line_no, line


def prefix_digest(path: Path, count: int) -> str:
    digest = hashlib.sha256()
    for _, line in itertools.islice(_lines(path), count):
        digest.update(line)
    return digest.hexdigest()


@dataclass
class Result:
    lines: int  # documents in the file
    skipped: int  # acknowledged by an earlier run
    sent: int  # acknowledged in this run
    seconds: float  # from the first request until indexed (or until sent, without waiting)
    failed: int  # writes the service gave up on (visible in the collection's queue)

    @property
    def docs_s(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def count_lines(path: Path) -> int:
    return sum(1 for _ in _lines(path))


def documents(path: Path, skip: int, timestamp: str) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """(line, document) of the file's documents after the first `skip`, each with a timestamp."""
    for line_no, line in itertools.islice(_lines(path), skip, None):
        try:
            document = json.loads(line)
        except ValueError as exc:
            raise LoadError(f"{path}:{line_no}: not JSON ({exc})") from exc
        if not isinstance(document, dict):
            raise LoadError(f"{path}:{line_no}: a line must be one JSON object (a document)")
        document.setdefault("timestamp", timestamp)
        yield line, document


async def post_bulk(
    client: httpx.AsyncClient, collection: str, batch: list[dict[str, Any]]
) -> None:
    """Send one bulk request until the service takes it; a refusal raises LoadError."""
    attempt = 0
    while True:
        try:
            response = await client.post(
                f"/v1/collections/{collection}/documents/bulk", json={"documents": batch}
            )
        except httpx.TransportError:
            response = None
        if response is not None and response.status_code < 400:
            return
        if response is not None and response.status_code not in TRANSIENT_STATUS:
            raise LoadError(
                f"documents {batch[0].get('id')!r}..{batch[-1].get('id')!r} refused: "
                f"{response.status_code} {response.text[:500]}"
            )
        if response is not None and response.status_code == 503:
            delay = float(response.headers.get("Retry-After", "1"))
        else:
            delay = min(BACKOFF_MAX_S, 2.0**attempt)
        attempt += 1
        await asyncio.sleep(delay)


async def stats(client: httpx.AsyncClient, collection: str) -> dict[str, Any]:
    response = await client.get(f"/v1/collections/{collection}/stats")
    if response.status_code == 404:
        raise LoadError(f"collection {collection!r} does not exist; create it first")
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


class _Acks:
    """Batches acknowledged out of order; `done` counts the leading lines all acknowledged and
    `digest` is their SHA-256."""

    def __init__(self, done: int, digest: str) -> None:
        self.done = done
        self.digest = digest
        self._pending: dict[int, tuple[int, str]] = {}  # first line -> (lines, digest after)

    def ack(self, start: int, count: int, digest: str) -> bool:
        """Record a batch; True when `done` moved."""
        self._pending[start] = (count, digest)
        moved = False
        while self.done in self._pending:
            count, self.digest = self._pending.pop(self.done)
            self.done += count
            moved = True
        return moved


async def load(
    client: httpx.AsyncClient,
    collection: str,
    path: Path,
    state_path: Path | None = None,
    *,
    batch: int = MAX_BATCH,
    in_flight: int = 4,
    wait: bool = True,
    out: TextIO | None = None,
) -> Result:
    """Load `path` into `collection`; see the module's docstring."""
    if not 1 <= batch <= MAX_BATCH:
        raise LoadError(f"batch must be 1..{MAX_BATCH}")
    state = State.read(state_path, path) if state_path else State(str(path), 0, "", _now())
    lines = count_lines(path)
    progress = Progress(lines - state.done, out)
    progress.begin(await stats(client, collection))
    sender = _Sender(client, collection, state, state_path, in_flight, progress)
    started = time.monotonic()
    watcher = asyncio.create_task(_watch(client, collection, progress))
    try:
        await sender.send_all(path, batch)
        if wait:
            while (snapshot := progress.sample(await stats(client, collection))).indexed + (
                snapshot.failed
            ) < progress.sent:
                await asyncio.sleep(next_poll(snapshot))
        seconds = time.monotonic() - started
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        progress.finish()
    gave_up = progress.last.failed if progress.last else 0
    return Result(lines, lines - progress.total, progress.sent, seconds, gave_up)


def next_poll(snapshot: Snapshot) -> float:
    """Seconds until the next stats call while the last documents are indexed: POLL_S, or a
    tenth of the time the rate seen says is left, at least FINE_POLL_S. The worker finishes a
    batch of documents at once, so that time is coarse; polled once a second, a 17 s load read up
    to 6 % slow."""
    if snapshot.eta_s is None:
        return POLL_S
    return min(POLL_S, max(FINE_POLL_S, snapshot.eta_s / 10))


class _Sender:
    """Bulk requests of one load, `in_flight` at a time; the first refusal stops the rest."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        collection: str,
        state: State,
        state_path: Path | None,
        in_flight: int,
        progress: Progress,
    ) -> None:
        self._client = client
        self._collection = collection
        self._state = state
        self._state_path = state_path
        self._gate = asyncio.Semaphore(in_flight)
        self._progress = progress
        self._acks = _Acks(state.done, state.digest)
        self._sending: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None

    async def send_all(self, path: Path, batch: int) -> None:
        position = self._state.done
        digest = hashlib.sha256()  # of every line up to the current one
        for _, line in itertools.islice(_lines(path), position):
            digest.update(line)
        pending: list[dict[str, Any]] = []
        try:
            for line, document in documents(path, self._state.done, self._state.timestamp):
                digest.update(line)
                pending.append(document)
                if len(pending) == batch:
                    position = await self._launch(position, pending, digest.hexdigest())
                    pending = []
            if pending:
                await self._launch(position, pending, digest.hexdigest())
            await asyncio.gather(*self._sending)
        except LoadError:  # a bad line: what went out before it still counts, and is kept
            await asyncio.gather(*self._sending, return_exceptions=True)
            raise
        finally:
            for task in self._sending:
                task.cancel()
            await asyncio.gather(*self._sending, return_exceptions=True)

    async def _launch(self, position: int, batch: list[dict[str, Any]], digest: str) -> int:
        await self._gate.acquire()
        if self._failure is not None:
            self._gate.release()
            raise self._failure
        task = asyncio.create_task(self._send(position, batch, digest))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)
        return position + len(batch)

    async def _send(self, start: int, batch: list[dict[str, Any]], digest: str) -> None:
        try:
            await post_bulk(self._client, self._collection, batch)
        except BaseException as exc:
            self._failure = self._failure or exc
            raise
        finally:
            self._gate.release()
        self._progress.sent += len(batch)
        if self._acks.ack(start, len(batch), digest) and self._state_path is not None:
            self._state.done, self._state.digest = self._acks.done, self._acks.digest
            self._state.write(self._state_path)


async def _watch(client: httpx.AsyncClient, collection: str, progress: Progress) -> None:
    while True:
        with contextlib.suppress(httpx.HTTPError, LoadError):
            progress.sample(await stats(client, collection))
        await asyncio.sleep(POLL_S)
