"""Requests cut off by a stop get 503 with Retry-After (another api process or the restarted
one will answer), never the 500 uvicorn sends for a task it cancelled."""

from __future__ import annotations

import asyncio

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.unavailable import REASON_HEADER, UnavailableAnswers
from core.enums import UnavailableReason

RETRY_AFTER_S = 2
MESSAGE = "this api process is stopping; retry (another process or its restart will answer)"


class CancelledAs503:
    """Pure ASGI middleware: a request cancelled before its answer started answers 503."""

    def __init__(self, app: ASGIApp, answers: UnavailableAnswers | None = None) -> None:
        self.app = app
        self.answers = answers  # logs and counts the 503, as braid_error does for the others

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        except asyncio.CancelledError:
            if started:
                raise
            reason = UnavailableReason.STOPPING
            if self.answers is not None:
                self.answers.answered(scope["method"], scope["path"], reason, MESSAGE)
            body = orjson.dumps({"detail": MESSAGE})
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(RETRY_AFTER_S).encode()),
                (REASON_HEADER.lower().encode(), reason.value.encode()),
                (b"connection", b"close"),
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})
