"""One delivery and one queue as a consumer sees them: opening the connection, settling a message
whose channel may be gone, the answer to an RPC request and the body of its reply, and a queue's
depth and consumers (what readiness reads)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractIncomingMessage
from aiormq.exceptions import AMQPError, ChannelInvalidStateError
from pydantic import BaseModel

from core.errors import BraidError, Unavailable, dependency_error, error_for_status

log = logging.getLogger(__name__)
Req = TypeVar("Req", bound=BaseModel)

# An RPC answer that is an error carries its status and message in these headers, and no body;
# a 503 its reason too (core.enums.UnavailableReason), so the api that answers it can say why.
ERROR_STATUS = "x-error-status"
ERROR_MESSAGE = "x-error-message"
ERROR_REASON = "x-error-reason"
# Errors that mean "the channel or connection went away": the broker redelivers what was unacked.
CHANNEL_GONE = (AMQPError, ConnectionError, RuntimeError)


async def connect(url: str, timeout_s: float) -> AbstractConnection:
    """`aio_pika.connect`, except that a connection which fails to open is closed here.

    Left to the garbage collector, its `__del__` makes a `close()` coroutine that nobody awaits
    when it runs off the event loop's thread, and the warning about it imports modules in that
    thread. Inside another import there (an encoder loading torch for its first model), CPython
    3.11's import lock then fails that import with a KeyError: a 500 on a collection's create."""
    connection = aio_pika.Connection(aio_pika.connection.make_url(url))
    try:
        await connection.connect(timeout=timeout_s)
    except BaseException:
        await connection.close()
        raise
    return connection


async def settle(message: AbstractIncomingMessage, *, requeue: bool | None = None) -> bool:
    """Ack a message (or nack it with `requeue`); False when its channel is gone.

    A message whose channel closed is redelivered by the broker, so a failed settle is only
    logged: processing is idempotent (DESIGN invariant 3)."""
    try:
        if requeue is None:
            await message.ack()
        else:
            await message.nack(requeue=requeue)
        return True
    except CHANNEL_GONE as exc:
        log.debug("could not settle a message (the broker redelivers it): %s", exc)
        return False


def channel_open(message: AbstractIncomingMessage) -> bool:
    """Whether the message's channel still lives (if not, the broker redelivers it).

    aio-pika's `message.channel` raises for a channel that is gone rather than returning a closed
    one: every caller (the consumer's pruning, the reaper through it) must get False instead."""
    try:
        return not message.channel.is_closed
    except ChannelInvalidStateError:
        return False


@dataclass(frozen=True)
class QueueState:
    messages: int  # ready for delivery
    consumers: int


async def queue_states(
    connection: AbstractConnection, queues: Sequence[str]
) -> dict[str, QueueState | None]:
    """(messages ready, consumers) of each queue, read on a channel of its own; None for one
    missing or unreachable."""
    states: dict[str, QueueState | None] = dict.fromkeys(queues)
    channel: AbstractChannel | None = None
    try:
        for queue in queues:
            if connection.is_closed:
                break
            if channel is None or channel.is_closed:
                channel = await connection.channel()
            try:
                result = (await channel.declare_queue(queue, passive=True)).declaration_result
            except CHANNEL_GONE:  # a passive declare of a missing queue closes the channel
                continue
            states[queue] = QueueState(
                int(result.message_count or 0), int(result.consumer_count or 0)
            )
    except CHANNEL_GONE as exc:
        log.debug("reading queue states: %s", exc)
    finally:
        if channel is not None and not channel.is_closed:
            with contextlib.suppress(*CHANNEL_GONE):
                await channel.close()
    return states


class _Empty(BaseModel):
    pass


def reply_message(
    request: AbstractIncomingMessage, result: BaseModel | BraidError
) -> aio_pika.Message:
    """The answer to an RPC request: the reply's JSON, or an error's status, message and (a
    503's) reason."""
    if isinstance(result, BraidError):
        headers: dict[str, Any] = {ERROR_STATUS: result.status, ERROR_MESSAGE: result.message}
        if isinstance(result, Unavailable):
            headers[ERROR_REASON] = result.reason.value
        return aio_pika.Message(
            _Empty().model_dump_json().encode(),
            correlation_id=request.correlation_id,
            headers=headers,
        )
    return aio_pika.Message(
        result.model_dump_json().encode(), correlation_id=request.correlation_id
    )


def broker_version(connection: Any) -> str:
    """The broker's version from the AMQP handshake ("unknown" while disconnected)."""
    transport = getattr(connection, "transport", None)
    properties = getattr(getattr(transport, "connection", None), "server_properties", None)
    version = (properties or {}).get("version")
    if isinstance(version, bytes):
        version = version.decode(errors="replace")
    return str(version) if version else "unknown"


async def answer(
    request: AbstractIncomingMessage,
    request_type: type[Req],
    handler: Callable[[Req], Awaitable[BaseModel]],
    retry_after_s: int,
) -> BaseModel | BraidError:
    """What an RPC server answers a request: the handler's reply or its error (a dependency down
    is a 503; anything else unexpected is a 500, logged here, its internals never sent)."""
    try:
        return await handler(request_type.model_validate_json(request.body))
    except BraidError as exc:
        return exc
    except Exception as exc:  # the RPC's boundary
        result = dependency_error(exc, retry_after_s) or BraidError("internal error")
        if result.status == 500:
            log.exception("RPC handler for %s failed", request.routing_key)
        return result


def reply_body(reply: AbstractIncomingMessage) -> bytes:
    """An RPC answer's JSON; an error answer raised as the error it carries."""
    headers = reply.headers or {}
    if ERROR_STATUS in headers:
        status, message = int(str(headers[ERROR_STATUS])), str(headers[ERROR_MESSAGE])
        raise error_for_status(status, message, headers.get(ERROR_REASON))
    return reply.body
