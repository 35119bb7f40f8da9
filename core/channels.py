"""The channels the bus publishes on, over one broker connection.

Requests and writes go out on a channel with publisher confirms: a confirm is how a write is
known durable, and a nack how a full queue becomes a 503. RPC replies and broadcasts go out on
one without. A reply's confirm had nobody to tell (the caller times out, or fails with its
connection), and it cost the broker and the server a frame each per call. A broadcast (the
replication stream) is numbered, so a listener that misses one learns it from the next; waiting
for each confirm held the worker's writes ~23 ms a message under a bulk load, four messages a
batch. A channel that closed is opened again on first use; the bus makes a new `Channels` for
every connection.
"""

from __future__ import annotations

from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractExchange

from core.delivery import CHANNEL_GONE
from core.enums import UnavailableReason
from core.errors import Unavailable
from core.subscription import declare_fanout


class Channels:
    def __init__(self, connection: AbstractConnection, retry_after_s: int) -> None:
        self._connection = connection
        self._retry_after_s = retry_after_s
        self._publish: AbstractChannel | None = None
        self._unconfirmed: AbstractChannel | None = None
        self._exchanges: dict[str, AbstractExchange] = {}  # declared on the unconfirmed channel

    async def publishing(self) -> AbstractChannel:
        """The channel with publisher confirms."""
        if self._publish is None or self._publish.is_closed:
            self._publish = await self._open(publisher_confirms=True)
        return self._publish

    async def unconfirmed(self) -> AbstractChannel:
        """The channel without publisher confirms, for RPC replies and broadcasts."""
        if self._unconfirmed is None or self._unconfirmed.is_closed:
            self._unconfirmed = await self._open(publisher_confirms=False)
            self._exchanges = {}
        return self._unconfirmed

    async def fanout(self, exchange: str) -> AbstractExchange:
        """A fanout exchange on the unconfirmed channel, declared once per channel."""
        channel = await self.unconfirmed()
        if exchange not in self._exchanges:
            self._exchanges[exchange] = await declare_fanout(channel, exchange)
        return self._exchanges[exchange]

    async def _open(self, publisher_confirms: bool) -> AbstractChannel:
        try:
            return await self._connection.channel(publisher_confirms=publisher_confirms)
        except CHANNEL_GONE as exc:
            raise Unavailable(
                f"message broker unavailable ({exc}); retry later",
                self._retry_after_s,
                UnavailableReason.BROKER_DOWN,
            ) from exc
