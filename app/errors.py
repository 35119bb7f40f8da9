"""The one place that maps Braid errors to HTTP answers."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from core.errors import BraidError, Unavailable

log = logging.getLogger(__name__)


async def braid_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BraidError)
    headers = {}
    if isinstance(exc, Unavailable):
        headers["Retry-After"] = str(exc.retry_after_s)
    message = exc.message if exc.status != 500 else "internal error"
    return JSONResponse({"detail": message}, status_code=exc.status, headers=headers)


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse({"detail": "internal error"}, status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(BraidError, braid_error)
    app.add_exception_handler(Exception, unexpected_error)
