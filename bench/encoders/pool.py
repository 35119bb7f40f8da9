"""Embedding through RabbitMQ and the encoder pool: throughput, latency, and a flood process."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event

from core.bus import Bus
from core.enums import EmbedKind
from core.errors import RpcTimeout
from core.messages import EmbedReply, EmbedRequest
from core.names import holder_queue

CHUNK = 8  # texts per request, as the worker sends them
TIMEOUT_S = 120.0


def request(model: str, kind: EmbedKind, texts: list[str]) -> EmbedRequest:
    return EmbedRequest(model=model, kind=kind, texts=texts)


async def throughput(
    bus: Bus, queue: str, model: str, texts: list[str], in_flight: int = 16
) -> float:
    """Texts per second for `texts` sent as CHUNK-text requests, `in_flight` at a time."""
    gate = asyncio.Semaphore(in_flight)

    async def one(chunk: list[str]) -> None:
        async with gate:
            reply = await bus.call(
                queue, request(model, EmbedKind.DOCUMENT, chunk), EmbedReply, TIMEOUT_S
            )
            assert len(reply.vectors) == len(chunk)

    chunks = [texts[i : i + CHUNK] for i in range(0, len(texts), CHUNK)]
    started = time.perf_counter()
    await asyncio.gather(*(one(chunk) for chunk in chunks))
    return len(texts) / (time.perf_counter() - started)


@dataclass
class Timing:
    total_ms: float  # end to end at the caller
    inference_ms: float  # model time reported by the holder
    holder: int


async def timed_call(
    bus: Bus, queue: str, model: str, text: str, timeout_s: float = TIMEOUT_S
) -> Timing:
    started = time.perf_counter()
    reply = await bus.call(queue, request(model, EmbedKind.QUERY, [text]), EmbedReply, timeout_s)
    return Timing((time.perf_counter() - started) * 1000.0, reply.inference_ms, reply.holder)


async def first_answer(bus: Bus, queue: str, model: str, tries: int = 8) -> None:
    """Until an encoder's own queue answers: /health/ready does not wait for the encoders, and a
    request published before an encoder declared its queue is dropped."""
    for _ in range(tries - 1):
        try:
            await timed_call(bus, queue, model, "warm up", timeout_s=30.0)
            return
        except RpcTimeout:
            continue
    await timed_call(bus, queue, model, "warm up")


async def query_latencies(bus: Bus, queue: str, model: str, texts: list[str]) -> list[Timing]:
    """Single-text queries one after the other (a user typing, not a load test)."""
    return [await timed_call(bus, queue, model, text) for text in texts]


async def alternating(
    bus: Bus, queues: list[str], model: str, texts: list[str]
) -> dict[str, list[Timing]]:
    """Each text sent to every queue in turn, so slow moments of the machine hit all alike."""
    out: dict[str, list[Timing]] = {queue: [] for queue in queues}
    for text in texts:
        for queue in queues:
            out[queue].append(await timed_call(bus, queue, model, text))
    return out


# --- the flood: a bulk ingest's document embedding, from a process of its own ---------------


def _flood(amqp_url: str, model: str, texts: list[str], in_flight: int, stop: Event, done) -> None:  # type: ignore[no-untyped-def]
    async def run() -> None:
        bus = await Bus.connect(amqp_url, retry_for_s=30)
        queue = holder_queue(EmbedKind.DOCUMENT)
        count = 0

        async def sender(offset: int) -> None:
            nonlocal count
            position = offset * CHUNK
            while not stop.is_set():
                chunk = [texts[(position + i) % len(texts)] for i in range(CHUNK)]
                position += in_flight * CHUNK
                req = request(model, EmbedKind.DOCUMENT, chunk)
                await bus.call(queue, req, EmbedReply, TIMEOUT_S)
                count += len(chunk)
                done.value = count

        try:
            await asyncio.gather(*(sender(i) for i in range(in_flight)))
        finally:
            await bus.close()

    asyncio.run(run())


class Flood:
    """Keeps the holders' document lanes full until stopped; counts the texts embedded."""

    def __init__(self, amqp_url: str, model: str, texts: list[str], in_flight: int = 16):
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._done = context.Value("q", 0)
        self._process = context.Process(
            target=_flood,
            args=(amqp_url, model, texts, in_flight, self._stop, self._done),
            daemon=True,
        )
        self._started = 0.0

    def __enter__(self) -> Flood:
        self._process.start()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(TIMEOUT_S)
        if self._process.is_alive():
            self._process.kill()

    async def running(self, min_texts: int = 64, timeout_s: float = 120.0) -> None:
        """Wait until the flood has had `min_texts` embedded: the document lane is busy."""
        deadline = time.perf_counter() + timeout_s
        while self.texts() < min_texts:
            if time.perf_counter() > deadline or not self._process.is_alive():
                raise RuntimeError("the flood process embedded nothing; see its output")
            await asyncio.sleep(0.1)

    def rate(self) -> float:
        """Texts per second since the flood started."""
        return float(self._done.value) / max(1e-9, time.perf_counter() - self._started)

    def texts(self) -> int:
        return int(self._done.value)
