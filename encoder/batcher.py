"""Dynamic micro-batching on one model lane: size/time flush, queries before documents."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from core.enums import EmbedKind, EmbedOutput
from core.errors import Unavailable
from core.vectors import SparseVector

log = logging.getLogger(__name__)

# A batch runs a dense or a sparse model: the lane passes its vectors through untouched.
EmbedVector = list[float] | SparseVector
EmbedFn = Callable[[list[str]], Sequence[EmbedVector]]
OnBatch = Callable[[int, float], None]  # (texts in the batch, model ms)


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


def length_order(texts: list[str]) -> list[int]:
    """Indices of `texts`, longest first, so each batch pads as little as possible."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


class Batcher:
    """Embeds requests that arrive together as one batch, on a single model-execution lane."""

    def __init__(
        self,
        max_texts: int,
        wait_ms: float,
        drain_s: float = 10.0,
        on_batch: OnBatch | None = None,
    ) -> None:
        self._max_texts = max_texts
        self._on_batch = on_batch
        self._wait_s = wait_ms / 1000.0
        self._drain_s = drain_s
        self._groups: dict[tuple[EmbedKind, BatchKey], _Group] = {}
        self._wake = asyncio.Event()
        self._closing = False
        self._lane: asyncio.Task[None] | None = None
        self._running: list[_Piece] = []

    def start(self) -> None:
        if self._lane is None:
            self._lane = asyncio.create_task(self._run(), name="embed-lane")
            self._lane.add_done_callback(self._lane_done)

    def _lane_done(self, lane: asyncio.Task[None]) -> None:
        """A lane that died of a bug must not leave callers waiting: fail them, allow a restart."""
        if not lane.cancelled() and lane.exception() is not None:
            log.error("embedding lane crashed", exc_info=lane.exception())
            self._fail_pending(Unavailable("embedding lane crashed; retry"))
        self._lane = None

    async def embed(
        self, key: BatchKey, kind: EmbedKind, texts: list[str], embed_fn: EmbedFn
    ) -> Embedded:
        """Queue texts for the lane and wait for their vectors (in request order)."""
        if self._closing:
            raise Unavailable("encoder is shutting down")
        if not texts:
            return Embedded([], 0.0)
        future: asyncio.Future[Embedded] = asyncio.get_running_loop().create_future()
        request = _Request(texts, future, [None] * len(texts), len(texts))
        group = self._groups.setdefault((kind, key), _Group(embed_fn))
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
        lane = self._lane
        if lane is not None:
            try:
                await asyncio.wait_for(asyncio.shield(lane), self._drain_s)
            except TimeoutError:
                log.warning("embedding lane did not drain within %.1f s", self._drain_s)
                lane.cancel()
        self._fail_pending(Unavailable("encoder is shutting down"))

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            picked = self._pick(time.monotonic())
            if picked is not None:
                await self._execute(*picked)
                continue
            if self._closing and not self._groups:
                return
            timeout = self._next_deadline(time.monotonic())
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass

    def _ready(self, group: _Group, now: float) -> bool:
        return (
            self._closing
            or group.size >= self._max_texts
            or now >= group.pieces[0].arrived + self._wait_s
        )

    def _pick(self, now: float) -> tuple[list[_Piece], EmbedFn] | None:
        """A ready query batch first; no document batch starts while a query is pending."""
        ready = [k for k in self._candidates() if self._ready(self._groups[k], now)]
        if not ready:
            return None
        return self._take(min(ready, key=lambda k: self._groups[k].pieces[0].arrived))

    def _candidates(self) -> list[tuple[EmbedKind, BatchKey]]:
        queries = [k for k in self._groups if k[0] is EmbedKind.QUERY]
        return queries or list(self._groups)

    def _take(self, key: tuple[EmbedKind, BatchKey]) -> tuple[list[_Piece], EmbedFn]:
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
        return taken, group.embed_fn

    def _next_deadline(self, now: float) -> float | None:
        """Seconds until the next candidate's wait window closes (None: nothing waits)."""
        candidates = self._candidates()
        if not candidates:
            return None
        oldest = min(self._groups[k].pieces[0].arrived for k in candidates)
        return max(0.0, oldest + self._wait_s - now)

    async def _execute(self, pieces: list[_Piece], embed_fn: EmbedFn) -> None:
        texts = [text for piece in pieces for text in piece.texts]
        if not texts:
            return
        order = length_order(texts)
        self._running = pieces
        try:
            vectors, elapsed_ms = await asyncio.to_thread(
                _timed, embed_fn, [texts[i] for i in order]
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
            self._running = []
        if self._on_batch is not None:
            self._on_batch(len(texts), elapsed_ms)
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
        self._fail(self._running, exc)
        for group in self._groups.values():
            self._fail(list(group.pieces), exc)
        self._groups.clear()


def _timed(embed_fn: EmbedFn, texts: list[str]) -> tuple[Sequence[EmbedVector], float]:
    """Run the model in the worker thread and time only the model call."""
    started = time.perf_counter()
    vectors = embed_fn(texts)
    return vectors, (time.perf_counter() - started) * 1000.0
