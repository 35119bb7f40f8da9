"""The bus: durable publish with confirms, RPC calls and RPC serving over RabbitMQ.

The bus owns its connection and brings everything back after the broker restarts: when the
connection drops it fails the RPCs waiting for answers (503), reconnects with backoff, declares
the queues it declared before (a restarted broker has lost the non-durable ones), and consumes
again from every queue it consumed. While it is down, publishes and calls fail at once with
Unavailable (503) instead of hanging.
"""

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
    AbstractConnection,
    AbstractIncomingMessage,
    AbstractQueue,
)
from aiormq.exceptions import AMQPError, DeliveryError
from pydantic import BaseModel

from core.channels import Channels
from core.delivery import (
    CHANNEL_GONE,
    QueueState,
    answer,
    broker_version,
    connect,
    queue_states,
    reply_body,
    reply_message,
    settle,
)
from core.enums import UnavailableReason
from core.errors import BraidError, QueueFull, RpcTimeout, Unavailable
from core.metrics import RPC_SECONDS, Recorder
from core.retry import reconnect_delay_s
from core.subscription import OnMessage, Subscription, declare, subscribe
from core.topology import QueueSpec
from core.watchdog import Watched

log = logging.getLogger(__name__)
QUEUE_STATES_S = 3.0
BROKER_DOWN = UnavailableReason.BROKER_DOWN
Req = TypeVar("Req", bound=BaseModel)
Rep = TypeVar("Rep", bound=BaseModel)


class Bus:
    """One connection that heals itself; a confirming publish channel; a reply queue for RPC."""

    def __init__(self, url: str, retry_after_s: int = 2) -> None:
        self._url = url
        self._retry_after_s = retry_after_s
        self._connection: AbstractConnection | None = None
        self._channels: Channels | None = None  # of the current connection
        self._reply_queue: AbstractQueue | None = None
        self._specs: dict[str, QueueSpec] = {}
        self._subscriptions: list[Subscription] = []
        self._pending: dict[str, asyncio.Future[AbstractIncomingMessage]] = {}
        # The loop keeps only weak references to tasks: hold RPC handlers until they finish.
        self._handlers: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()  # one (re)connect or subscribe at a time
        self._ready = False
        self._closing = False
        self._reconnector: asyncio.Task[None] | None = None
        self.reconnects = 0
        self.recorder: Recorder | None = None  # times each RPC round trip (RPC_SECONDS)

    @classmethod
    async def connect(cls, url: str, retry_for_s: float = 180.0, retry_after_s: int = 2) -> Bus:
        """Connect, retrying while the broker boots (it takes several seconds)."""
        bus = cls(url, retry_after_s)
        deadline = time.monotonic() + retry_for_s
        attempt = 0
        while True:
            try:
                async with bus._lock:
                    await bus._open()
                return bus
            except (TimeoutError, OSError, AMQPError) as exc:
                if time.monotonic() > deadline:
                    raise bus._unavailable(exc) from exc
                log.info("broker not ready (%s); retrying", exc)
                await asyncio.sleep(max(1.0, reconnect_delay_s(attempt)))
                attempt += 1

    @property
    def is_connected(self) -> bool:
        return self._ready and self._connection is not None and not self._connection.is_closed

    @property
    def broker_version(self) -> str:
        """The broker's version from the AMQP handshake ("unknown" while disconnected)."""
        return broker_version(self._connection)

    async def declare(self, specs: list[QueueSpec]) -> None:
        """Declare queues now and again after every reconnect."""
        for spec in specs:
            self._specs[spec.name] = spec
        channel = await self._channel()
        try:
            for spec in specs:
                await declare(channel, spec)
        except CHANNEL_GONE as exc:
            raise self._unavailable(exc) from exc

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
        message_id: str | None = None,
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
            message_id=message_id,
        )
        try:
            await channel.default_exchange.publish(amqp_message, routing_key=queue, mandatory=True)
        except DeliveryError as exc:
            raise QueueFull(f"queue '{queue}' is full; retry later", self._retry_after_s) from exc
        except CHANNEL_GONE as exc:
            raise self._unavailable(exc) from exc

    async def broadcast(self, exchange: str, body: bytes) -> None:
        """Publish to a fanout exchange, unconfirmed, in order (no listener: dropped, not
        returned to us as unroutable)."""
        message = aio_pika.Message(body, content_type="application/octet-stream")
        try:
            fanout = await self._live().fanout(exchange)
            await fanout.publish(message, routing_key="", mandatory=False)
        except CHANNEL_GONE as exc:
            raise self._unavailable(exc) from exc

    async def listen(
        self, exchange: str, on_message: OnMessage, prefetch: int, on_subscribed: Callable[[], None]
    ) -> None:
        """Consume a copy of everything broadcast on `exchange` from now on, through a queue of
        our own; after a reconnect that is a new, empty queue, and `on_subscribed` runs again."""
        await self._add(Subscription("", on_message, prefetch, 0, exchange, on_subscribed))

    async def call(
        self, queue: str, request: BaseModel, reply_type: type[Rep], timeout_s: float
    ) -> Rep:
        """RPC: publish a request and wait for its typed reply (errors come back raised).

        If the connection drops while waiting, the call fails at once with Unavailable."""
        return reply_type.model_validate_json(await self.call_raw(queue, request, timeout_s))

    async def call_raw(self, queue: str, request: BaseModel, timeout_s: float) -> bytes:
        """`call`, answering the reply's JSON as it came (for a caller that passes it on)."""
        reply_queue = await self._ensure_reply_queue()
        started = time.perf_counter()
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
        if self.recorder is not None:
            self.recorder.observe(RPC_SECONDS, time.perf_counter() - started, call=queue)
        return reply_body(reply)

    async def reply(self, request: AbstractIncomingMessage, result: BaseModel | BraidError) -> None:
        """Answer an RPC request (no-op when the caller asked for no answer), unconfirmed."""
        if not request.reply_to:
            return
        channel = await self._live().unconfirmed()
        try:
            await channel.default_exchange.publish(
                reply_message(request, result), routing_key=request.reply_to, mandatory=False
            )
        except CHANNEL_GONE as exc:
            raise self._unavailable(exc) from exc

    async def consume(
        self, queue: str, on_message: OnMessage, prefetch: int, priority: int = 0
    ) -> None:
        """Deliver messages (manual ack) on a channel of its own with `prefetch` in flight,
        now and after every reconnect, until `cancel_consumers`."""
        await self._add(Subscription(queue, on_message, prefetch, priority))

    async def _add(self, subscription: Subscription) -> None:
        async with self._lock:
            self._subscriptions.append(subscription)
            if self.is_connected:
                await self._subscribe(subscription)

    async def serve(
        self,
        queue: str,
        request_type: type[Req],
        handler: Callable[[Req], Awaitable[BaseModel]],
        concurrency: int,
        priority: int = 0,
    ) -> None:
        """Serve RPC requests, up to `concurrency` at a time; errors travel back as headers."""

        async def on_message(message: AbstractIncomingMessage) -> None:
            result = await answer(message, request_type, handler, self._retry_after_s)
            try:
                await self.reply(message, result)
            except Unavailable as exc:  # the caller's call failed with the connection
                log.info("could not answer an RPC on %s: %s", queue, exc)
            await settle(message)

        async def dispatch(message: AbstractIncomingMessage) -> None:
            task = asyncio.create_task(on_message(message))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)

        await self.consume(queue, dispatch, prefetch=concurrency, priority=priority)

    async def cancel_consumers(self) -> None:
        """Stop taking deliveries (for a clean stop); what is unacked stays ours to settle."""
        async with self._lock:
            for subscription in self._subscriptions:
                subscription.cancelled = True
                if subscription.amqp_queue is not None and subscription.tag is not None:
                    try:
                        await subscription.amqp_queue.cancel(subscription.tag)
                    except CHANNEL_GONE as exc:
                        log.debug("cancelling a consumer of %s: %s", subscription.queue, exc)

    async def drain_handlers(self, timeout_s: float) -> None:
        """Wait for RPC handlers in flight, at most `timeout_s`."""
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=timeout_s)

    async def queue_states(self, queues: Sequence[str]) -> dict[str, QueueState | None]:
        """(messages ready, consumers) of each queue; None for one missing or unreachable, or
        for all of them when the broker does not answer within QUEUE_STATES_S (a hung broker
        keeps a connection open until the heartbeat times out)."""
        if not self.is_connected or self._connection is None:
            return dict.fromkeys(queues)
        try:
            return await asyncio.wait_for(queue_states(self._connection, queues), QUEUE_STATES_S)
        except TimeoutError:
            return dict.fromkeys(queues)

    def watched(self) -> list[Watched]:
        """Every live subscription, for the watchdog: what it consumes and when it last got a
        message. Cancelled ones (a clean stop) and those between connections are left out."""
        if not self.is_connected:
            return []
        return [
            Watched(s.source, s.amqp_queue.name, s.delivered_at)
            for s in self._subscriptions
            if not s.cancelled and s.amqp_queue is not None
        ]

    async def queue_depth(self, queue: str) -> int:
        state = (await self.queue_states([queue]))[queue]
        if state is None:
            raise Unavailable(
                f"queue '{queue}' is not reachable; retry later", self._retry_after_s, BROKER_DOWN
            )
        return state.messages

    async def close(self) -> None:
        self._closing = True
        if self._reconnector is not None:
            self._reconnector.cancel()
        connection, self._connection = self._connection, None
        self._ready = False
        if connection is not None and not connection.is_closed:
            try:
                await connection.close()
            except CHANNEL_GONE as exc:
                log.debug("closing the broker connection: %s", exc)

    # --- connection management ---

    async def _open(self) -> None:
        """Connect, declare what was declared, consume what was consumed (under the lock)."""
        connection = await connect(self._url, timeout_s=10)
        try:
            channels = Channels(connection, self._retry_after_s)
            publishing = await channels.publishing()
            for spec in self._specs.values():
                await declare(publishing, spec)
            self._connection, self._channels, self._reply_queue = connection, channels, None
            self._ready = True
            for subscription in self._subscriptions:
                if not subscription.cancelled:
                    await self._subscribe(subscription)
        except BaseException:
            self._ready = False
            await connection.close()
            raise
        connection.close_callbacks.add(self._on_lost)

    async def _subscribe(self, subscription: Subscription) -> None:
        assert self._connection is not None
        await subscribe(self._connection, subscription, self._specs.get(subscription.queue))

    def _on_lost(self, connection: Any, exc: BaseException | None = None) -> None:
        if self._closing or connection is not self._connection:
            return
        log.warning("lost the broker connection (%s); reconnecting", exc)
        self._ready = False
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self._unavailable(exc))
        if self._reconnector is None or self._reconnector.done():
            self._reconnector = asyncio.create_task(self._reconnect(), name="bus-reconnect")

    async def _reconnect(self) -> None:
        attempt = 0
        while not self._closing:
            await asyncio.sleep(reconnect_delay_s(attempt))
            attempt += 1
            try:
                async with self._lock:
                    if self._closing:
                        return
                    await self._open()
            except (TimeoutError, OSError, AMQPError, RuntimeError) as exc:
                if attempt == 1 or attempt % 10 == 0:
                    log.info("broker still unreachable (%s); retrying", exc)
                continue
            self.reconnects += 1
            log.info(
                "reconnected to the broker; consuming %d queues again",
                sum(not s.cancelled for s in self._subscriptions),
            )
            return

    async def _channel(self) -> AbstractChannel:
        """The publish channel, with publisher confirms."""
        return await self._live().publishing()

    def _live(self) -> Channels:
        if not self.is_connected or self._channels is None:
            raise self._unavailable(None)
        return self._channels

    async def _ensure_reply_queue(self) -> AbstractQueue:
        if self._reply_queue is None or self._reply_queue.channel.is_closed:
            if not self.is_connected or self._connection is None:
                raise self._unavailable(None)
            try:
                channel = await self._connection.channel()
                queue = await channel.declare_queue(exclusive=True, auto_delete=True)
                await queue.consume(self._on_reply, no_ack=True)
            except CHANNEL_GONE as exc:
                raise self._unavailable(exc) from exc
            self._reply_queue = queue
        return self._reply_queue

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        future = self._pending.get(message.correlation_id or "")
        if future is not None and not future.done():
            future.set_result(message)

    def _unavailable(self, exc: BaseException | None) -> Unavailable:
        cause = f" ({exc})" if exc is not None else ""
        return Unavailable(
            f"message broker unavailable{cause}; retry later", self._retry_after_s, BROKER_DOWN
        )
