"""The hottest routes answered without FastAPI's machinery: a search
(POST /v1/collections/{name}/search) goes from the ASGI scope to this process's search node and
back as bytes, and an async upsert (POST /v1/collections/{name}/documents) from the scope to the
ledger and the broker.

FastAPI's routing over every route, its dependency solving (the auth dependency and its two
header schemes), the body's validation through the route's field and the answer's Response cost
a third of what a search spends outside the engine, and half of what the api spends taking an
upsert (docs/benchmarks.md). This middleware sits innermost, so the request limits, the metrics
and the restart answer around it still apply, and it answers only where it answers exactly as
the route would: a request it would have to refuse (a key that does not grant the route's role,
a name or a body that does not validate, a body that is not JSON) or cannot serve here (the
search node still loading its replica) goes on to the route, its body replayed, so every refusal
is the route's own. Errors the work raises are answered by the app's exception handlers, as the
route's are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel, ValidationError
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.context import ApiContext
from app.http.auth import KeyRing, required_role
from app.http.strict_json import strict_loads
from app.metrics.sampler import SEARCH_ROUTE
from app.services.ingest import enqueue_upserts
from app.services.search import local_search, search
from core.schemas.common import OkResponse, check_name
from core.schemas.document import Document
from core.schemas.search import SearchQuery

JSON_TYPE = re.compile(r"application/([^;\s]*\+)?json\s*(;.*)?", re.IGNORECASE)
ANSWER_TYPE = (b"content-type", b"application/json")
OK = OkResponse().model_dump_json().encode()


@dataclass(frozen=True)
class FastRoute:
    """A POST route's happy path: the body as the route validates it, and the work it does."""

    path: str  # the route's own path: its role, and its label in the metrics
    pattern: re.Pattern[str]  # matches the request path; group 1 is the collection's name
    body: type[BaseModel]
    serves: Callable[[ApiContext], bool]  # whether the route would do the work here
    work: Callable[[ApiContext, str, Any], Awaitable[bytes]]  # the answer's JSON


async def _upsert(context: ApiContext, name: str, document: Document) -> bytes:
    await enqueue_upserts(context, name, [document])
    return OK


SEARCH = FastRoute(
    SEARCH_ROUTE,
    re.compile(r"/v1/collections/([^/]+)/search"),
    SearchQuery,
    lambda context: local_search(context) is not None,  # else the route sends it to the queue
    search,
)
UPSERT = FastRoute(
    "/v1/collections/{collection_name}/documents",
    re.compile(r"/v1/collections/([^/]+)/documents"),
    Document,
    lambda context: True,
    _upsert,
)
ROUTES = (SEARCH, UPSERT)


class FastRoutes:
    """Pure ASGI middleware; add it before the others, so it is the innermost."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._routes: dict[str, BaseRoute] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        matched = None
        if scope["type"] == "http" and scope["method"] == "POST":
            matched = _matched(scope["path"])
        api: FastAPI | None = scope.get("app")
        if matched is None or api is None or not _servable(api, scope, *matched):
            await self.app(scope, receive, send)
            return
        fast, match = matched
        name = match.group(1)
        scope["route"] = self._route(api, fast.path)
        scope["path_params"] = {"collection_name": name}
        context: ApiContext = api.state.context
        try:
            body = await _read_body(receive)
            if body is None:
                return  # the client left; nobody to answer
            parsed = _parsed(fast.body, body)
            if parsed is None:
                await self.app(scope, _replay(body, receive), send)
                return
            payload = await fast.work(context, name, parsed)
        except Exception as exc:
            handler = _handler(api, exc)
            if handler is None:
                raise  # answered outside, as the route's would be (500)
            answer = await handler(Request(scope, receive), exc)
            await answer(scope, receive, send)
            return
        headers = [(b"content-length", str(len(payload)).encode()), ANSWER_TYPE]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    def _route(self, api: FastAPI, path: str) -> BaseRoute:
        """The route's object, for what reads scope["route"] (the metrics' route label)."""
        if path not in self._routes:
            self._routes[path] = next(
                context.original_route
                for context in iter_route_contexts(api.routes)
                if context.path == path and "POST" in (context.methods or ())
            )
        return self._routes[path]


def _matched(path: str) -> tuple[FastRoute, re.Match[str]] | None:
    for fast in ROUTES:
        if match := fast.pattern.fullmatch(path):
            return fast, match
    return None


def _servable(api: FastAPI, scope: Scope, fast: FastRoute, match: re.Match[str]) -> bool:
    """Whether the route would serve this request here, not refuse it or pass it on."""
    context: ApiContext | None = getattr(api.state, "context", None)
    if context is None or not fast.serves(context):
        return False
    headers = _headers(scope)
    if not JSON_TYPE.fullmatch(headers.get("content-type", "")):
        return False
    keys: KeyRing = api.state.keys
    if keys.refusal(_presented(headers), required_role("POST", fast.path)) is not None:
        return False
    try:
        check_name(match.group(1))
    except ValueError:
        return False
    return True


def _headers(scope: Scope) -> dict[str, str]:
    """The first value of each header, as Starlette's `headers.get` reads it."""
    found: dict[str, str] = {}
    for key, value in scope["headers"]:
        found.setdefault(key.decode("latin-1"), value.decode("latin-1"))
    return found


def _presented(headers: dict[str, str]) -> list[str]:
    """The keys sent, as the route's auth dependency reads them: the api-key header, then a
    bearer token in Authorization."""
    presented = [headers["api-key"]] if headers.get("api-key") else []
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        presented.append(token)
    return presented


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body (None if the client disconnected); the limits' receive refuses it as it
    arrives when it is too large or too slow."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parsed(model: type[BaseModel], body: bytes) -> BaseModel | None:
    """The body, as the route reads and validates it; None where the route would refuse it."""
    try:
        return model.model_validate(strict_loads(body))
    except (json.JSONDecodeError, ValidationError):
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the route the body already read, then what the client sends."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _handler(api: FastAPI, exc: Exception) -> Any:
    """The app's handler for `exc`, found as Starlette's ExceptionMiddleware finds it; None for
    what only the catch-all answers (ServerErrorMiddleware, outside this middleware)."""
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in api.exception_handlers:
            return api.exception_handlers[cls]
    return None
