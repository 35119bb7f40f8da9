"""The bus: durable publish with confirms, RPC calls and RPC serving over RabbitMQ."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import aio_pika
from aio_pika.abc import (
    AbstractChannel,
    AbstractIncomingMessage,
    AbstractQueue,
    AbstractRobustConnection,
)
from aiormq.exceptions import AMQPError, DeliveryError
from pydantic import BaseModel

from core.errors import BraidError, QueueFull, RpcTimeout, Unavailable, error_for_status
from core.topology import QueueSpec

log = logging.getLogger(__name__)

Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)
Handler = Callable[[Any], Awaitable[BaseModel]]
ERROR_STATUS = "x-error-status"
ERROR_MESSAGE = "x-error-message"


class Bus:
    """One robust connection; a confirming publish channel; a private reply queue for RPC."""

    def __init__(self, connection: AbstractRobustConnection, retry_after_s: int = 2) -> None:
        self._connection = connection
        self._retry_after_s = retry_after_s
        self._publish_channel: AbstractChannel | None = None
        self._reply_queue: AbstractQueue | None = None
        self._pending: dict[str, asyncio.Future[AbstractIncomingMessage]] = {}
        self._consumer_channels: list[AbstractChannel] = []
        # The loop keeps only weak references to tasks: hold RPC handlers until they finish.
        self._handlers: set[asyncio.Task[None]] = set()

    @classmethod
    async def connect(cls, url: str, retry_for_s: float = 180.0, retry_after_s: int = 2) -> Bus:
        """Connect, retrying while the broker boots (it takes several seconds)."""
        deadline = time.monotonic() + retry_for_s
        while True:
            try:
                connection = await aio_pika.connect_robust(url, timeout=10)
                break
            except (TimeoutError, OSError, AMQPError) as exc:
                if time.monotonic() > deadline:
                    raise Unavailable(f"message broker unreachable: {exc}") from exc
                log.info("broker not ready (%s); retrying", exc)
                await asyncio.sleep(1.0)
        bus = cls(connection, retry_after_s)
        bus._publish_channel = await connection.channel(publisher_confirms=True)
        return bus

    @property
    def is_connected(self) -> bool:
        return not self._connection.is_closed and self._publish_channel is not None

    @property
    def broker_version(self) -> str:
        """The broker's version from the AMQP handshake ("unknown" while disconnected)."""
        transport = getattr(self._connection, "transport", None)
        properties = getattr(getattr(transport, "connection", None), "server_properties", None)
        version = (properties or {}).get("version")
        if isinstance(version, bytes):
            version = version.decode(errors="replace")
        return str(version) if version else "unknown"

    async def declare(self, specs: list[QueueSpec]) -> None:
        channel = await self._channel()
        for spec in specs:
            await channel.declare_queue(spec.name, durable=spec.durable, arguments=spec.arguments)

    async def publish(
        self,
        queue: str,
        message: BaseModel,
        *,
        persistent: bool = False,
        priority: int | None = None,
        expiration_s: float | None = None,
        reply_to: str | None = None,
        correlation_id: str | None = None,
        headers: dict[str, Any] | None = None,
    ) -> None:
        """Publish and wait for the broker's confirm; a full queue raises QueueFull."""
        channel = await self._channel()
        amqp_message = aio_pika.Message(
            message.model_dump_json().encode(),
            content_type="application/json",
            delivery_mode=(
                aio_pika.DeliveryMode.PERSISTENT
                if persistent
                else aio_pika.DeliveryMode.NOT_PERSISTENT
            ),
            priority=priority,
            expiration=expiration_s,
            reply_to=reply_to,
            correlation_id=correlation_id,
            headers=headers,
        )
        try:
            await channel.default_exchange.publish(amqp_message, routing_key=queue, mandatory=True)
        except DeliveryError as exc:
            raise QueueFull(f"queue '{queue}' is full; retry later", self._retry_after_s) from exc
        except (AMQPError, ConnectionError, RuntimeError) as exc:
            raise Unavailable(f"message broker unavailable: {exc}", self._retry_after_s) from exc

    async def call(
        self, queue: str, request: BaseModel, reply_type: type[Rep], timeout_s: float
    ) -> Rep:
        """RPC: publish a request and wait for its typed reply (errors come back raised)."""
        reply_queue = await self._ensure_reply_queue()
        correlation_id = uuid.uuid4().hex
        future: asyncio.Future[AbstractIncomingMessage] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = future
        try:
            await self.publish(
                queue,
                request,
                expiration_s=timeout_s,
                reply_to=reply_queue.name,
                correlation_id=correlation_id,
            )
            try:
                reply = await asyncio.wait_for(future, timeout_s)
            except TimeoutError as exc:
                raise RpcTimeout(f"no answer from '{queue}' within {timeout_s:g} s") from exc
        finally:
            self._pending.pop(correlation_id, None)
        headers = reply.headers or {}
        if ERROR_STATUS in headers:
            raise error_for_status(int(str(headers[ERROR_STATUS])), str(headers[ERROR_MESSAGE]))
        return reply_type.model_validate_json(reply.body)

    async def call_with_retry(
        self, queue: str, request: BaseModel, reply_type: type[Rep], timeouts: Sequence[float]
    ) -> Rep:
        """RPC with one try per entry of `timeouts`; only a try left unanswered is retried.

        Every try is its own message (its own expiry): a late answer to an earlier try is
        dropped, and repeating the request must be harmless (embedding is a pure function).
        """
        *tries, last_s = timeouts
        for timeout_s in tries:
            try:
                return await self.call(queue, request, reply_type, timeout_s)
            except RpcTimeout:
                log.info("no answer from %s within %.1f s; trying again", queue, timeout_s)
        return await self.call(queue, request, reply_type, last_s)

    async def reply(self, request: AbstractIncomingMessage, result: BaseModel | BraidError) -> None:
        """Answer an RPC request (no-op when the caller asked for no answer)."""
        if not request.reply_to:
            return
        headers: dict[str, Any] | None = None
        body: BaseModel = _EMPTY
        if isinstance(result, BraidError):
            headers = {ERROR_STATUS: result.status, ERROR_MESSAGE: result.message}
        else:
            body = result
        channel = await self._channel()
        await channel.default_exchange.publish(
            aio_pika.Message(
                body.model_dump_json().encode(),
                correlation_id=request.correlation_id,
                headers=headers,
            ),
            routing_key=request.reply_to,
        )

    async def consume(
        self,
        queue: str,
        on_message: Callable[[AbstractIncomingMessage], Awaitable[None]],
        prefetch: int,
    ) -> None:
        """Deliver messages (manual ack) on a channel of its own with `prefetch` in flight."""
        channel = await self._connection.channel()
        await channel.set_qos(prefetch_count=prefetch)
        self._consumer_channels.append(channel)
        amqp_queue = await channel.get_queue(queue, ensure=False)
        await amqp_queue.consume(on_message)

    async def serve(
        self,
        queue: str,
        request_type: type[Req],
        handler: Callable[[Req], Awaitable[BaseModel]],
        concurrency: int,
    ) -> None:
        """Serve RPC requests, up to `concurrency` at a time; errors travel back as headers."""

        async def on_message(message: AbstractIncomingMessage) -> None:
            try:
                request = request_type.model_validate_json(message.body)
                result: BaseModel | BraidError = await handler(request)
            except BraidError as exc:
                result = exc
            except Exception:  # process boundary: answer 500, keep serving
                log.exception("RPC handler for %s failed", queue)
                result = BraidError("internal error")
            try:
                await self.reply(message, result)
            finally:
                await message.ack()

        async def dispatch(message: AbstractIncomingMessage) -> None:
            task = asyncio.create_task(on_message(message))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)

        await self.consume(queue, dispatch, prefetch=concurrency)

    async def queue_depth(self, queue: str) -> int:
        channel = await self._channel()
        declared = await channel.declare_queue(queue, passive=True)
        return int(declared.declaration_result.message_count or 0)

    async def close(self) -> None:
        for channel in self._consumer_channels:
            await channel.close()
        await self._connection.close()

    async def _channel(self) -> AbstractChannel:
        if self._publish_channel is None or self._publish_channel.is_closed:
            try:
                self._publish_channel = await self._connection.channel(publisher_confirms=True)
            except (AMQPError, ConnectionError, RuntimeError) as exc:
                raise Unavailable(
                    f"message broker unavailable: {exc}", self._retry_after_s
                ) from exc
        return self._publish_channel

    async def _ensure_reply_queue(self) -> AbstractQueue:
        if self._reply_queue is None:
            channel = await self._connection.channel()
            self._reply_queue = await channel.declare_queue(exclusive=True, auto_delete=True)
            await self._reply_queue.consume(self._on_reply, no_ack=True)
        return self._reply_queue

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        future = self._pending.get(message.correlation_id or "")
        if future is not None and not future.done():
            future.set_result(message)


class _Empty(BaseModel):
    pass


_EMPTY = _Empty()
