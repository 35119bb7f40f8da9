"""An RPC call retried when unanswered, above the bus (core.bus imports nothing of it)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from core.bus import Bus
from core.errors import RpcTimeout

log = logging.getLogger(__name__)
Rep = TypeVar("Rep", bound=BaseModel)


async def call_with_retry(
    bus: Bus, queue: str, request: BaseModel, reply_type: type[Rep], timeouts: Sequence[float]
) -> Rep:
    """RPC with one try per entry of `timeouts`; only a try left unanswered is retried.

    Every try is its own message (its own expiry): a late answer to an earlier try is
    dropped, and repeating the request must be harmless (embedding is a pure function).
    """
    *tries, last_s = timeouts
    for timeout_s in tries:
        try:
            return await bus.call(queue, request, reply_type, timeout_s)
        except RpcTimeout:
            log.info("no answer from %s within %.1f s; trying again", queue, timeout_s)
    return await bus.call(queue, request, reply_type, last_s)
