"""Bounded requests: a body-size limit per route, enforced while reading, and a body read timeout.

The limit is checked before anything else runs (before auth, before parsing): a declared
Content-Length over it gets 413 at once without reading a byte of the body; a body sent in chunks
is counted as it arrives and refused as soon as it passes the limit, so the api never holds more
than one route's limit of one request. The input is never echoed back, and the connection closes.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MIB = 1024 * 1024
CLOSE = {"Connection": "close"}


@dataclass(frozen=True)
class RouteLimit:
    pattern: re.Pattern[str]
    max_bytes: int
    hint: str


# POST routes by path; the first match wins. Sized for the largest valid request (API.md §7:
# content ≤ 1,000,000 characters, bulk ≤ 100 documents, custom vectors ≤ 10,000 entries).
ROUTE_LIMITS = (
    RouteLimit(
        re.compile(r"^/v1/collections/[^/]+/documents/bulk$"),
        32 * MIB,
        "split the batch into smaller ones",
    ),
    RouteLimit(
        re.compile(r"^/v1/collections/[^/]+/documents(/sync)?$"),
        8 * MIB,
        "a document's content is at most 1,000,000 characters",
    ),
    RouteLimit(
        re.compile(r"^/v1/collections/[^/]+/search$"),
        2 * MIB,
        "a query is at most 10,000 characters",
    ),
)
DEFAULT_LIMIT = RouteLimit(re.compile(""), 256 * 1024, "this request is far larger than expected")


def limit_for(path: str) -> RouteLimit:
    return next((r for r in ROUTE_LIMITS if r.pattern.match(path)), DEFAULT_LIMIT)


def describe(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size // 1024} KiB"


def too_large(limit: RouteLimit) -> str:
    return (
        f"The request body exceeds this route's limit of {describe(limit.max_bytes)}: {limit.hint}"
    )


class RequestLimits:
    """Pure ASGI middleware: body size per route (413) and a read timeout per body chunk (408)."""

    def __init__(self, app: ASGIApp, body_timeout_s: float) -> None:
        self.app = app
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = limit_for(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit.max_bytes:
            await _refuse(send, 413, too_large(limit))
            return
        await self.app(scope, self._bounded(receive, limit), send)

    def _bounded(self, receive: Receive, limit: RouteLimit) -> Receive:
        seen = 0

        async def bounded_receive() -> Message:
            nonlocal seen
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout_s)
            except TimeoutError:
                # An HTTPException passes FastAPI's body parsing untouched (anything else is a 400).
                raise HTTPException(
                    408, f"The request body did not arrive within {self.body_timeout_s:g} s", CLOSE
                ) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit.max_bytes:
                    raise HTTPException(413, too_large(limit), CLOSE)
            return message

        return bounded_receive


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = orjson.dumps({"detail": detail})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
