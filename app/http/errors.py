"""The one place that maps Braid errors to HTTP answers."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from app.http.strict_json import nested_past
from app.http.unavailable import REASON_HEADER, UnavailableAnswers
from core.errors import DEPENDENCY_DOWN, BraidError, Unavailable, dependency_error
from core.filters import TOO_DEEP
from core.schemas.common import MAX_JSON_DEPTH

log = logging.getLogger(__name__)
# What FastAPI raises (as a 400) when a JSON body is not even text, e.g. bad UTF-8 bytes.
_UNPARSABLE_BODY = "There was an error parsing the body"
# Request bytes that are not UTF-8 come back in an error's "input": show them, never fail on them.
_SAFE = {bytes: lambda raw: raw.decode("utf-8", errors="replace")}


async def braid_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BraidError)
    headers = {}
    if isinstance(exc, Unavailable):
        headers["Retry-After"] = str(exc.retry_after_s)
        headers[REASON_HEADER] = exc.reason.value
        answers: UnavailableAnswers | None = getattr(request.app.state, "unavailable", None)
        if answers is not None:
            answers.answered(request.method, request.url.path, exc.reason, exc.message)
    message = exc.message if exc.status != 500 else "internal error"
    return JSONResponse({"detail": message}, status_code=exc.status, headers=headers)


def _invalid(errors: list[Any]) -> JSONResponse:
    shown = [_without_deep_input(error) for error in errors]
    return JSONResponse({"detail": jsonable_encoder(shown, custom_encoder=_SAFE)}, 422)


def _without_deep_input(error: Any) -> Any:
    """An input refused for its depth, or nested past any body's limit, is not echoed: the
    encoder recurses into it (a 500 past ~1,000 levels), and it is the client's own anyway."""
    if not isinstance(error, dict) or "input" not in error:
        return error
    if error.get("type") == TOO_DEEP or nested_past(error["input"], MAX_JSON_DEPTH):
        return {**error, "input": {}}
    return error


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return _invalid(list(exc.errors()))


async def http_error(request: Request, exc: Exception) -> Response:
    """A body that cannot be decoded is a validation error (422), like malformed JSON."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400 and exc.detail == _UNPARSABLE_BODY:
        return _invalid(
            [
                {
                    "type": "json_invalid",
                    "loc": ["body"],
                    "msg": "The body is not valid JSON text (UTF-8)",
                    "input": {},
                }
            ]
        )
    if exc.status_code == 405:
        return await http_exception_handler(request, _with_every_allowed_method(request, exc))
    return await http_exception_handler(request, exc)


def _with_every_allowed_method(request: Request, exc: HTTPException) -> HTTPException:
    """Starlette's 405 lists the methods of the first route on the path; list every method
    /openapi.json documents for it, a concrete path before a templated one (as OpenAPI reads)."""
    path = request.url.path
    matching = [
        (template.count("{"), {method.upper() for method in operations})
        for template, operations in request.app.openapi().get("paths", {}).items()
        if re.fullmatch(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)), path)
    ]
    fewest = min((params for params, _ in matching), default=0)
    methods = set().union(*(found for params, found in matching if params == fewest))
    allow = ", ".join(sorted(methods))
    return HTTPException(405, exc.detail, {**(exc.headers or {}), "Allow": allow})


async def dependency_down(request: Request, exc: Exception) -> JSONResponse:
    """Redis or a socket failed under a handler: a 503 to retry, never a 500 (braid_error
    logs it)."""
    unavailable = dependency_error(exc)
    assert unavailable is not None
    return await braid_error(request, unavailable)


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse({"detail": "internal error"}, status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(BraidError, braid_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    for dependency in DEPENDENCY_DOWN:
        app.add_exception_handler(dependency, dependency_down)
    app.add_exception_handler(Exception, unexpected_error)
