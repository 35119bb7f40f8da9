"""EncoderService: consume embed requests, embed them (holder) or forward them (router), reply."""

from __future__ import annotations

import asyncio
import logging
import time

from aio_pika.abc import AbstractIncomingMessage
from pydantic import BaseModel, ValidationError
from redis.asyncio import Redis

from core.bus import Bus
from core.delivery import settle
from core.enums import EmbedOutput, EncoderRole
from core.errors import BraidError, InvalidInput
from core.messages import EmbedReply, EmbedRequest
from core.redis_client import connect_redis
from core.settings import Settings
from core.topology import encoder_queue_spec, topology
from core.vectors import SparseVector
from core.watchdog import Watchdog
from encoder.batcher import SORT_WINDOW, Batcher, BatchKey, EmbedFn
from encoder.registry import ModelRegistry
from encoder.routing import Forwarder, Heartbeat, consumed_queues, role_of
from encoder.stats import EncoderStats

log = logging.getLogger(__name__)

# Deliveries in flight per queue: enough that concurrent requests meet in one batch.
PREFETCH = 64
# A stop gives requests in flight this long, then what is left in the batcher BATCHER_DRAIN_S:
# together well inside the process's stop bound (core.lifecycle).
DRAIN_S = 4.0
BATCHER_DRAIN_S = 2.0


class EncoderService:
    """Lifecycle: start (declare, consume), serve, close (stop taking work, drain, flush stats)."""

    def __init__(self, settings: Settings, bus: Bus, redis: Redis) -> None:
        self.settings = settings
        self.role = role_of(settings)
        self.index = settings.encoder_index
        self._bus = bus
        self._redis = redis
        self._registry = ModelRegistry(settings)
        self._forwarder = Forwarder(bus, settings.rpc_timeout_s)
        self._stats = EncoderStats(redis, self.index, self.role, lambda: self._registry.loaded)
        bus.recorder = self._stats.recorder  # a router times its hop to the holders
        self._heartbeat = Heartbeat(redis, self.index, self.role, lambda: self._registry.loaded)
        self._watchdog = Watchdog(
            bus, redis, self._stats.recorder, f"encoder-{self.index}", settings
        )
        self._batcher = Batcher(
            settings.embed_batch_size,
            settings.embed_batch_wait_ms,
            drain_s=BATCHER_DRAIN_S,
            on_batch=self._stats.batch,
            query_max_texts=settings.query_batch_size,
            query_wait_ms=settings.query_batch_wait_ms,
            document_workers=settings.document_workers,
            document_nice=settings.document_nice,
            sort_window=SORT_WINDOW,
        )
        self._in_flight: set[asyncio.Task[None]] = set()
        self._draining = False

    @classmethod
    async def open(cls, settings: Settings) -> EncoderService:
        bus = await Bus.connect(settings.amqp_url, retry_after_s=settings.retry_after_s)
        redis = await connect_redis(settings.redis_url)
        return cls(settings, bus, redis)

    async def start(self) -> None:
        await self._bus.declare(
            [*topology(self.settings), encoder_queue_spec(self.settings, self.index)]
        )
        self._stats.start()
        if self.role is EncoderRole.MODEL_HOLDER:
            self._batcher.start()
            log.info(
                "encoder %d is a model holder: models load on first request (documents: "
                "batch %d texts / %.1f ms, %d threads; queries: batch %d / %.1f ms, "
                "%d threads)",
                self.index,
                self.settings.embed_batch_size,
                self.settings.embed_batch_wait_ms,
                self.settings.threads_per_encoder,
                self.settings.query_batch_size,
                self.settings.query_batch_wait_ms,
                self.settings.query_threads,
            )
        else:
            log.info(
                "encoder %d is a router: it holds no model and forwards model work", self.index
            )
        for queue in consumed_queues(self.settings):
            await self._bus.consume(queue, self._dispatch, prefetch=PREFETCH)
        log.info("encoder %d consuming %s", self.index, ", ".join(consumed_queues(self.settings)))
        await self._heartbeat.start()  # announced only once it consumes: callers may skip routers
        self._watchdog.start()

    async def close(self, drain_s: float = DRAIN_S) -> None:
        """Stop taking work, let in-flight requests finish within `drain_s`, flush stats, and
        close the connections (the broker requeues what is left unacked)."""
        self._draining = True
        await self._bus.cancel_consumers()
        await self._heartbeat.close()
        if self._in_flight:
            log.info("draining %d in-flight requests (up to %.1f s)", len(self._in_flight), drain_s)
            _, late = await asyncio.wait(set(self._in_flight), timeout=drain_s)
            for task in late:  # unanswered and unacked: the broker redelivers them elsewhere
                task.cancel()
        await self._batcher.close()
        await self._stats.close()
        await self._watchdog.close()
        await self._bus.close()
        await self._redis.aclose()

    async def answer(self, request: EmbedRequest, started: float) -> EmbedReply:
        if self.role is EncoderRole.MODEL_HOLDER:
            return await self.embed(request)
        reply = await self._forwarder.forward(request)
        self._stats.routed(request.model, time.perf_counter() - started)
        return reply

    async def embed(self, request: EmbedRequest) -> EmbedReply:
        key, embed_fn = await self._lane_work(request)
        result = await self._batcher.embed(key, request.kind, request.texts, embed_fn)
        if request.output is EmbedOutput.SPARSE:
            sparse = [v for v in result.vectors if isinstance(v, SparseVector)]
            return EmbedReply(
                sparse_vectors=sparse, holder=self.index, inference_ms=result.inference_ms
            )
        dense = [v for v in result.vectors if isinstance(v, list)]
        return EmbedReply(vectors=dense, holder=self.index, inference_ms=result.inference_ms)

    async def _lane_work(self, request: EmbedRequest) -> tuple[BatchKey, EmbedFn]:
        """The batch key and model call for a request: equal keys share a batch."""
        if request.output is EmbedOutput.SPARSE:
            sparse = await self._registry.get_sparse(request.model, request.revision)
            key = BatchKey(
                sparse.name,
                sparse.revision,
                False,
                request.keep_case,
                EmbedOutput.SPARSE,
                request.top_k,
            )
            return key, sparse.embed_fn(request.top_k, request.keep_case)
        model = await self._registry.get(request.model, request.revision)
        key = BatchKey(model.name, model.revision, request.normalize, request.keep_case)
        return key, model.embed_fn(request.normalize, request.keep_case, request.kind)

    async def _dispatch(self, message: AbstractIncomingMessage) -> None:
        if self._draining:
            return  # left unacked: requeued for another encoder when our channel closes
        task = asyncio.create_task(self._handle(message))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _handle(self, message: AbstractIncomingMessage) -> None:
        started = time.perf_counter()
        result = await self._result(message, started)
        try:
            await self._bus.reply(message, result)
        except BraidError as exc:  # the broker connection dropped: the caller got a 503
            log.warning("could not reply to an embed request: %s", exc)
        await settle(message)

    async def _result(
        self, message: AbstractIncomingMessage, started: float
    ) -> BaseModel | BraidError:
        model = ""
        error: BraidError
        try:
            request = EmbedRequest.model_validate_json(message.body)
            model = request.model
            return await self.answer(request, started)
        except ValidationError as exc:
            error = InvalidInput(f"invalid embed request: {exc.error_count()} errors")
        except BraidError as exc:
            error = exc
        except Exception:  # process boundary: answer 500 without internals, keep serving
            log.exception("embed request failed")
            error = BraidError("internal error")
        self._stats.error(model)
        return error
