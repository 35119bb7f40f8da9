"""Dynamic micro-batching: size/time flush, length-sorted batches, one lane per kind of work.

Queries and documents run on separate lanes with model threads of their own, so a query is
embedded while a document batch is still running instead of waiting behind it (DESIGN invariant
5). The document lane's model threads run at a lower CPU priority, so a query, the event loop and
the broker take a core from them when they need one; it can run `workers` batches side by side.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from core.enums import EmbedKind, EmbedOutput, UnavailableReason
from core.errors import Unavailable
from core.vectors import SparseVector

log = logging.getLogger(__name__)

# A batch runs a dense or a sparse model: the lane passes its vectors through untouched.
EmbedVector = list[float] | SparseVector
EmbedFn = Callable[[list[str]], Sequence[EmbedVector]]
OnBatch = Callable[[str, EmbedKind, int, float], None]  # (model, lane, texts, model ms)


@dataclass(frozen=True)
class BatchKey:
    """Requests batch together only when they would run the same model the same way."""

    model: str
    revision: str | None = None
    normalize: bool = True
    keep_case: bool = False
    output: EmbedOutput = EmbedOutput.DENSE
    top_k: int = 0  # sparse output: entries kept per vector


@dataclass(frozen=True)
class Embedded:
    vectors: list[EmbedVector]
    inference_ms: float


@dataclass
class _Request:
    texts: list[str]
    future: asyncio.Future[Embedded]
    vectors: list[EmbedVector | None]
    remaining: int
    inference_ms: float = 0.0


@dataclass
class _Piece:
    """A slice of one request's texts; big requests split across batches."""

    request: _Request
    start: int
    texts: list[str]
    arrived: float


@dataclass
class _Group:
    embed_fn: EmbedFn
    pieces: deque[_Piece] = field(default_factory=deque)
    size: int = 0


# A sorted batch is cut where a text is shorter than SPLIT_RATIO of its group's longest, once
# that longest is long enough for padding to cost more than an extra model call.
SPLIT_RATIO = 0.5
SPLIT_MIN_CHARS = 400
# The document lane takes up to SORT_WINDOW model batches of texts at once and hands them to the
# model's runner, which sorts them by token length and cuts its calls (`calls.in_calls`), as
# sentence-transformers' encode() sorts its whole input. ~60-word texts end to end: 184 docs/s in
# windows of 64, 188 in windows of 128 (docs/benchmarks.md, issue 32). Not every text in flight:
# one lane batch of them all left the second document worker idle.
SORT_WINDOW = 4


def length_order(texts: list[str]) -> list[int]:
    """Indices of `texts`, longest first, so each batch pads as little as possible."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


def length_groups(lengths: Sequence[int]) -> list[slice]:
    """Model calls for a batch sorted longest first: texts of similar length share a call, so
    a short text is not padded to a long one."""
    groups: list[slice] = []
    start = 0
    for i in range(1, len(lengths)):
        longest = lengths[start]
        if longest >= SPLIT_MIN_CHARS and lengths[i] < longest * SPLIT_RATIO:
            groups.append(slice(start, i))
            start = i
    groups.append(slice(start, len(lengths)))
    return groups


def _stopping() -> Unavailable:
    return Unavailable(
        "this encoder is shutting down; retry shortly", reason=UnavailableReason.STOPPING
    )


class Lane:
    """Embeds requests of one kind that arrive together as one batch, on one model thread."""

    def __init__(
        self,
        kind: EmbedKind,
        max_texts: int,
        wait_ms: float,
        drain_s: float = 10.0,
        on_batch: OnBatch | None = None,
        workers: int = 1,
        nice: int = 0,
    ) -> None:
        self.kind = kind
        self._max_texts = max_texts
        self._on_batch = on_batch
        self._wait_s = wait_ms / 1000.0
        self._drain_s = drain_s
        self._workers = workers
        self._groups: dict[BatchKey, _Group] = {}
        self._executor = ThreadPoolExecutor(
            workers, f"embed-{kind}", initializer=lower_priority, initargs=(nice,)
        )
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._running: dict[int, list[_Piece]] = {}  # batches in model calls, by id
        self._batches: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"embed-lane-{self.kind}")
            self._task.add_done_callback(self._lane_done)

    def _lane_done(self, lane: asyncio.Task[None]) -> None:
        """A lane that died of a bug must not leave callers waiting: fail them, allow a restart."""
        if not lane.cancelled() and lane.exception() is not None:
            log.error("%s embedding lane crashed", self.kind, exc_info=lane.exception())
            crashed = "an encoder's embedding lane crashed (it restarts); retry"
            self._fail_pending(Unavailable(crashed, reason=UnavailableReason.ENCODER_FAILED))
        self._task = None

    async def embed(self, key: BatchKey, texts: list[str], embed_fn: EmbedFn) -> Embedded:
        """Queue texts for the lane and wait for their vectors (in request order)."""
        if self._closing:
            raise _stopping()
        if not texts:
            return Embedded([], 0.0)
        future: asyncio.Future[Embedded] = asyncio.get_running_loop().create_future()
        request = _Request(texts, future, [None] * len(texts), len(texts))
        group = self._groups.setdefault(key, _Group(embed_fn))
        now = time.monotonic()
        for start in range(0, len(texts), self._max_texts):
            chunk = texts[start : start + self._max_texts]
            group.pieces.append(_Piece(request, start, chunk, now))
            group.size += len(chunk)
        self.start()
        self._wake.set()
        return await future

    async def close(self) -> None:
        """Flush what is pending within the drain bound; fail whatever is left."""
        self._closing = True
        self._wake.set()
        lane = self._task
        if lane is not None:
            try:
                await asyncio.wait_for(asyncio.shield(lane), self._drain_s)
            except TimeoutError:
                log.warning("%s lane did not drain within %.1f s", self.kind, self._drain_s)
                lane.cancel()
        self._fail_pending(_stopping())
        self._executor.shutdown(wait=False)  # a stuck model call must not hold up the exit

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            busy = len(self._batches) >= self._workers
            picked = None if busy else self._pick(time.monotonic())
            if picked is not None:
                batch = asyncio.create_task(self._execute(*picked))
                self._batches.add(batch)
                batch.add_done_callback(self._batch_done)
                continue
            if self._closing and not self._groups and not self._batches:
                return
            timeout = None if busy else self._next_deadline(time.monotonic())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass

    def _batch_done(self, batch: asyncio.Task[None]) -> None:
        self._batches.discard(batch)
        self._wake.set()  # a worker is free

    def _ready(self, group: _Group, now: float) -> bool:
        return (
            self._closing
            or group.size >= self._max_texts
            or now >= group.pieces[0].arrived + self._wait_s
        )

    def _pick(self, now: float) -> tuple[list[_Piece], EmbedFn, str] | None:
        """The ready group whose oldest piece waited longest."""
        ready = [k for k in self._groups if self._ready(self._groups[k], now)]
        if not ready:
            return None
        return self._take(min(ready, key=lambda k: self._groups[k].pieces[0].arrived))

    def _take(self, key: BatchKey) -> tuple[list[_Piece], EmbedFn, str]:
        """Up to `max_texts` texts from the head of a group, oldest first."""
        group = self._groups[key]
        taken: list[_Piece] = []
        count = 0
        while group.pieces and count + len(group.pieces[0].texts) <= self._max_texts:
            piece = group.pieces.popleft()
            group.size -= len(piece.texts)
            if not piece.request.future.done():  # its caller gave up or it already failed
                taken.append(piece)
                count += len(piece.texts)
        if not group.pieces:
            del self._groups[key]
        return taken, group.embed_fn, key.model

    def _next_deadline(self, now: float) -> float | None:
        """Seconds until the next candidate's wait window closes (None: nothing waits)."""
        if not self._groups:
            return None
        oldest = min(group.pieces[0].arrived for group in self._groups.values())
        return max(0.0, oldest + self._wait_s - now)

    async def _execute(self, pieces: list[_Piece], embed_fn: EmbedFn, model: str) -> None:
        texts = [text for piece in pieces for text in piece.texts]
        if not texts:
            return
        order = length_order(texts)
        self._running[id(pieces)] = pieces
        try:
            vectors, elapsed_ms = await asyncio.get_running_loop().run_in_executor(
                self._executor, _timed, embed_fn, [texts[i] for i in order]
            )
            if len(vectors) != len(texts):
                raise RuntimeError(
                    f"embedder returned {len(vectors)} vectors for {len(texts)} texts"
                )
        except Exception as exc:  # the model lane is a boundary: fail this batch, keep serving
            log.exception("embedding batch of %d texts failed", len(texts))
            self._fail(pieces, exc)
            return
        finally:
            del self._running[id(pieces)]
        if self._on_batch is not None:
            self._on_batch(model, self.kind, len(texts), elapsed_ms)
        unsorted: list[EmbedVector] = [[] for _ in texts]
        for position, index in enumerate(order):
            unsorted[index] = vectors[position]
        self._deliver(pieces, unsorted, elapsed_ms)

    def _deliver(self, pieces: list[_Piece], vectors: list[EmbedVector], elapsed_ms: float) -> None:
        offset = 0
        for piece in pieces:
            request = piece.request
            for i in range(len(piece.texts)):
                request.vectors[piece.start + i] = vectors[offset + i]
            offset += len(piece.texts)
            request.remaining -= len(piece.texts)
            request.inference_ms += elapsed_ms
            if request.remaining == 0 and not request.future.done():
                done = [v for v in request.vectors if v is not None]
                request.future.set_result(Embedded(done, request.inference_ms))

    @staticmethod
    def _fail(pieces: list[_Piece], exc: BaseException) -> None:
        for piece in pieces:
            if not piece.request.future.done():
                piece.request.future.set_exception(exc)

    def _fail_pending(self, exc: BaseException) -> None:
        for running in list(self._running.values()):
            self._fail(running, exc)
        for group in self._groups.values():
            self._fail(list(group.pieces), exc)
        self._groups.clear()


class Batcher:
    """A query lane and a document lane; each request goes to the lane of its kind."""

    def __init__(
        self,
        max_texts: int,
        wait_ms: float,
        drain_s: float = 10.0,
        on_batch: OnBatch | None = None,
        query_max_texts: int | None = None,
        query_wait_ms: float | None = None,
        document_workers: int = 1,
        document_nice: int = 0,
        sort_window: int = 1,
    ) -> None:
        """`sort_window`: the document lane takes up to that many batches of `max_texts` at once
        and sorts them by length (SORT_WINDOW in a holder); the model's runner cuts its calls."""
        query = (query_max_texts or max_texts, wait_ms if query_wait_ms is None else query_wait_ms)
        self._lanes = {
            EmbedKind.QUERY: Lane(EmbedKind.QUERY, *query, drain_s, on_batch),
            EmbedKind.DOCUMENT: Lane(
                EmbedKind.DOCUMENT,
                max_texts * sort_window,
                wait_ms,
                drain_s,
                on_batch,
                workers=document_workers,
                nice=document_nice,
            ),
        }

    def start(self) -> None:
        for lane in self._lanes.values():
            lane.start()

    async def embed(
        self, key: BatchKey, kind: EmbedKind, texts: list[str], embed_fn: EmbedFn
    ) -> Embedded:
        """Queue texts on the lane of `kind` and wait for their vectors (in request order)."""
        return await self._lanes[kind].embed(key, texts, embed_fn)

    async def close(self) -> None:
        """Both lanes flush what is pending within the drain bound, side by side."""
        await asyncio.gather(*(lane.close() for lane in self._lanes.values()))


def lower_priority(nice: int) -> None:
    """Add `nice` to the calling thread's nice value (Linux keeps one per thread; elsewhere a
    no-op, since it would renice the whole process)."""
    if nice and sys.platform == "linux":
        thread = threading.get_native_id()
        try:
            current = os.getpriority(os.PRIO_PROCESS, thread)
            os.setpriority(os.PRIO_PROCESS, thread, min(19, current + nice))
        except OSError as exc:
            log.warning("could not lower the priority of a model thread: %s", exc)


def _timed(embed_fn: EmbedFn, texts: list[str]) -> tuple[Sequence[EmbedVector], float]:
    """Run the model in the worker thread, a length group a call (the runner cuts its own model
    calls: `calls.in_calls`), and time only the model calls."""
    started = time.perf_counter()
    vectors: list[EmbedVector] = []
    for group in length_groups([len(text) for text in texts]):
        vectors.extend(embed_fn(texts[group]))
    return vectors, (time.perf_counter() - started) * 1000.0
