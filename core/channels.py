"""The channels the bus publishes on, over one broker connection.

Requests and writes go out on a channel with publisher confirms: a confirm is how a write is
known durable, and a nack how a full queue becomes a 503. RPC replies go out on one without: a
reply's confirm had nobody to tell (the caller times out, or fails with its connection), and it
cost the broker and the server a frame each per call. A channel that closed is opened again on
first use; the bus makes a new `Channels` for every connection.
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
        self._replies: AbstractChannel | None = None
        self._exchanges: dict[str, AbstractExchange] = {}  # declared on the publish channel

    async def publishing(self) -> AbstractChannel:
        """The channel with publisher confirms."""
        if self._publish is None or self._publish.is_closed:
            self._publish = await self._open(publisher_confirms=True)
            self._exchanges = {}
        return self._publish

    async def replying(self) -> AbstractChannel:
        """The channel without publisher confirms, for RPC replies."""
        if self._replies is None or self._replies.is_closed:
            self._replies = await self._open(publisher_confirms=False)
        return self._replies

    async def fanout(self, exchange: str) -> AbstractExchange:
        """A fanout exchange, declared once per publish channel."""
        channel = await self.publishing()
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
