"""Searches answered without FastAPI's machinery: POST /v1/collections/{name}/search goes from
the ASGI scope to this process's search node and back as bytes.

FastAPI's routing over every route, its dependency solving (the auth dependency and its two
header schemes), the body's validation through the route's field and the answer's Response cost
a third of what a search spends outside the engine (docs/benchmarks.md). This middleware sits
innermost, so the request limits, the metrics and the restart answer around it still apply, and
it answers only where it answers exactly as the route would: a request it would have to refuse
(a key that does not grant search, a name or a body that does not validate, a body that is not
JSON) or cannot serve here (the search node still loading its replica) goes on to the route,
its body replayed, so every refusal is the route's own. Errors the search raises are answered
by the app's exception handlers, as the route's are.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.routing import iter_route_contexts
from pydantic import ValidationError
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.auth import KeyRing, Role
from app.context import ApiContext
from app.metrics_sampler import SEARCH_ROUTE
from app.strict_json import strict_loads
from core.schemas.common import check_name
from core.schemas.search import SearchQuery

SEARCH_PATH = re.compile(r"/v1/collections/([^/]+)/search")
JSON_TYPE = re.compile(r"application/([^;\s]*\+)?json\s*(;.*)?", re.IGNORECASE)
ANSWER_TYPE = (b"content-type", b"application/json")


class FastSearch:
    """Pure ASGI middleware; add it before the others, so it is the innermost."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._route: BaseRoute | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = None
        if scope["type"] == "http" and scope["method"] == "POST":
            match = SEARCH_PATH.fullmatch(scope["path"])
        api: FastAPI | None = scope.get("app")
        if match is None or api is None or not _servable(api, scope, match.group(1)):
            await self.app(scope, receive, send)
            return
        name = match.group(1)
        scope["route"] = self._search_route(api)
        scope["path_params"] = {"collection_name": name}
        context: ApiContext = api.state.context
        assert context.search is not None  # _servable
        try:
            body = await _read_body(receive)
            if body is None:
                return  # the client left; nobody to answer
            query = _parsed(body)
            if query is None:
                await self.app(scope, _replay(body, receive), send)
                return
            response = await context.search.search(name, query)
        except Exception as exc:
            handler = _handler(api, exc)
            if handler is None:
                raise  # answered outside, as the route's would be (500)
            answer = await handler(Request(scope, receive), exc)
            await answer(scope, receive, send)
            return
        payload = response.model_dump_json().encode()
        headers = [(b"content-length", str(len(payload)).encode()), ANSWER_TYPE]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    def _search_route(self, api: FastAPI) -> BaseRoute:
        """The route's object, for what reads scope["route"] (the metrics' route label)."""
        if self._route is None:
            self._route = next(
                context.original_route
                for context in iter_route_contexts(api.routes)
                if context.path == SEARCH_ROUTE and "POST" in (context.methods or ())
            )
        return self._route


def _servable(api: FastAPI, scope: Scope, name: str) -> bool:
    """Whether the route would serve this search here, not refuse it or send it to the queue."""
    context: ApiContext | None = getattr(api.state, "context", None)
    if context is None or context.search is None or not context.search.ready:
        return False
    headers = _headers(scope)
    if not JSON_TYPE.fullmatch(headers.get("content-type", "")):
        return False
    keys: KeyRing = api.state.keys
    if keys.refusal(_presented(headers), Role.SEARCH) is not None:
        return False
    try:
        check_name(name)
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


def _parsed(body: bytes) -> SearchQuery | None:
    """The query, as the route reads and validates it; None where the route would refuse it."""
    try:
        return SearchQuery.model_validate(strict_loads(body))
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
