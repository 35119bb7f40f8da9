"""What the bus consumes: queues declared from a spec, and fanout exchanges where every listener
gets its own copy (the replication stream from the worker to the search nodes).

A listener's queue is its own: exclusive, gone with its connection, so a listener that reconnects
starts from an empty queue and is told so (`on_subscribed`) to catch up by other means."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aio_pika import ExchangeType
from aio_pika.abc import (
    AbstractChannel,
    AbstractConnection,
    AbstractExchange,
    AbstractIncomingMessage,
    AbstractQueue,
)

from core.topology import QueueSpec

OnMessage = Callable[[AbstractIncomingMessage], Awaitable[None]]

# A listener that stops reading loses its oldest messages rather than growing the broker without
# bound; the sequence numbers in the messages tell it that it missed some.
LISTENER_QUEUE_MAX = 20_000


@dataclass
class Subscription:
    queue: str  # or, with `exchange`, "" for a queue of our own bound to that fanout exchange
    on_message: OnMessage
    prefetch: int
    priority: int = 0  # consumers of a higher priority get the messages while they have room
    exchange: str = ""
    on_subscribed: Callable[[], None] | None = None
    channel: AbstractChannel | None = None
    amqp_queue: AbstractQueue | None = None
    tag: str | None = None
    cancelled: bool = False
    delivered_at: float = 0.0  # monotonic: the last delivery, or the subscribe (core/watchdog.py)

    async def deliver(self, message: AbstractIncomingMessage) -> None:
        self.delivered_at = time.monotonic()
        await self.on_message(message)

    @property
    def source(self) -> str:
        """What it consumes, by name: the queue, or the exchange its own queue is bound to."""
        return self.exchange or self.queue


async def subscribe(
    connection: AbstractConnection, subscription: Subscription, spec: QueueSpec | None
) -> None:
    """Start consuming on a channel of the subscription's own."""
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=subscription.prefetch)
    if subscription.exchange:
        amqp_queue = await own_queue(channel, subscription.exchange)
    elif spec is None:
        amqp_queue = await channel.get_queue(subscription.queue, ensure=False)
    else:
        amqp_queue = await declare(channel, spec)
    subscription.channel, subscription.amqp_queue = channel, amqp_queue
    subscription.delivered_at = time.monotonic()
    arguments: dict[str, Any] = {"x-priority": subscription.priority}
    subscription.tag = await amqp_queue.consume(
        subscription.deliver, arguments=arguments if subscription.priority else None
    )
    if subscription.on_subscribed is not None:
        subscription.on_subscribed()


async def declare(channel: AbstractChannel, spec: QueueSpec) -> AbstractQueue:
    return await channel.declare_queue(spec.name, durable=spec.durable, arguments=spec.arguments)


async def declare_fanout(channel: AbstractChannel, exchange: str) -> AbstractExchange:
    return await channel.declare_exchange(exchange, ExchangeType.FANOUT, durable=False)


async def own_queue(channel: AbstractChannel, exchange: str) -> AbstractQueue:
    """A new server-named queue of this connection, bound to `exchange`."""
    target = await declare_fanout(channel, exchange)
    queue = await channel.declare_queue(
        exclusive=True,
        auto_delete=True,
        arguments={"x-max-length": LISTENER_QUEUE_MAX, "x-overflow": "drop-head"},
    )
    await queue.bind(target)
    return queue
