"""The document consumer outlives its channel: messages it still holds from a channel that died
are let go (the broker redelivers them) and it goes on consuming on the next one, beyond the
point where it prunes what it holds. Before, pruning asked each held message for its channel,
which aio-pika answers for a dead one by raising, so every later delivery failed for good."""

from __future__ import annotations

import asyncio
import uuid
from typing import cast

import aio_pika
from aio_pika.abc import AbstractIncomingMessage

from core.ledger import Ledger
from harness.stack import Stack
from worker.consumer import DocumentConsumer, held_prune_at
from worker.indexing import Indexer

BATCH = 64
# More than the consumer holds before it prunes, all delivered to it at once.
MESSAGES = held_prune_at(BATCH) + 200


class Deliveries:
    """Hands each delivery to the consumer as the bus would; keeps what it raised."""

    def __init__(self, consumer: DocumentConsumer) -> None:
        self._consumer = consumer
        self.count = 0
        self.errors: list[Exception] = []

    async def __call__(self, message: AbstractIncomingMessage) -> None:
        try:
            await self._consumer.on_message(message)
        except Exception as exc:  # what would escape into aio-pika's callback
            self.errors.append(exc)
        self.count += 1

    async def wait_for(self, count: int, timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while self.count < count and not self.errors:
                await asyncio.sleep(0.05)


async def _consume(
    connection: aio_pika.abc.AbstractConnection, queue: str, deliveries: Deliveries
) -> aio_pika.abc.AbstractChannel:
    channel = await connection.channel()
    await channel.set_qos(prefetch_count=MESSAGES)
    amqp_queue = await channel.declare_queue(queue, exclusive=True)
    await amqp_queue.consume(deliveries)
    return channel


async def test_a_consumer_holding_messages_of_a_dead_channel_keeps_consuming(stack: Stack) -> None:
    # Only the pruning and the reaper's view are at stake: nothing here indexes or settles.
    consumer = DocumentConsumer(cast(Indexer, None), cast(Ledger, None), BATCH, 0.1, 3)
    deliveries = Deliveries(consumer)
    queue = f"scratch-{uuid.uuid4().hex[:8]}"
    connection = await aio_pika.connect(stack.amqp_url, timeout=10)
    async with connection:
        first = await _consume(connection, queue, deliveries)
        for i in range(MESSAGES):
            message = aio_pika.Message(b"{}", message_id=f"q{i}")
            await first.default_exchange.publish(message, routing_key=queue)
        await deliveries.wait_for(MESSAGES)
        await first.close()  # every message it held goes back to the queue
        await _consume(connection, queue, deliveries)
        await deliveries.wait_for(2 * MESSAGES)
        assert deliveries.errors == []
        assert deliveries.count == 2 * MESSAGES
        assert consumer.touched() is None  # a channel died under held messages: reap nothing
        spared = consumer.touched()  # and the reaper's next look works as before
        assert spared is not None and len(spared) == MESSAGES
