"""Request bodies are read as strict JSON: what cannot be stored or searched faithfully is a 422.

Python's `json` accepts what JSON does not (NaN, Infinity, `1e999` read as infinity), lone
surrogates (`"\\ud800"`, which no UTF-8 encoder can write back), and integers of any size (a
400-digit one, or 2**63, which no store index holds). Each of those used to fail deep inside a
handler as a 500. Here the body is parsed once with orjson, which refuses the first three, and the
integers are checked against int64, so every such body answers 422 naming what to fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute

from core.metadata import INT64_MAX, INT64_MIN

# orjson's wording → what the client should fix.
_REASONS = (
    ("surrogate", "text must be valid Unicode: a \\uD800-\\uDFFF escape must be a surrogate pair"),
    ("infinity", "numbers must be finite and within ±1.8e308"),
)
# orjson says only this where a NaN or Infinity stands, as for any other stray character: keep
# its words, say where, and add the hint.
_NOT_A_NUMBER = ("unexpected character", "no digit after minus sign")
NAN_HINT = "NaN and Infinity are not JSON numbers"
OUT_OF_RANGE = f"integers must be between {INT64_MIN} and {INT64_MAX}"


def _reason(message: str, position: int) -> str:
    if any(marker in message for marker in _NOT_A_NUMBER):
        return f"{message} at position {position} ({NAN_HINT})"
    return next((reason for marker, reason in _REASONS if marker in message), message)


def numbers_in(value: Any) -> list[int | float]:
    """Every int and float in a parsed body; iterative, since bodies may nest 1,000 deep."""
    found: list[int | float] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            found.append(item)
    return found


def _checked_int(text: str) -> int:
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(OUT_OF_RANGE)
    return value


def _big_integer_literal(raw: bytes) -> bool:
    """orjson reads integer literals past 2**64 as floats: tell them from real floats."""
    try:
        json.loads(raw, parse_int=_checked_int)
    except ValueError:
        return True
    return False


def strict_loads(raw: bytes) -> Any:
    """The parsed body, or json.JSONDecodeError (FastAPI's 422 "json_invalid") saying why not."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        # The document is left out on purpose: error answers never echo the input back.
        raise json.JSONDecodeError(_reason(exc.msg, exc.pos), "", 0) from None
    numbers = numbers_in(value)
    if any(isinstance(n, int) and not INT64_MIN <= n <= INT64_MAX for n in numbers):
        raise json.JSONDecodeError(OUT_OF_RANGE, "", 0)
    huge = any(isinstance(n, float) and abs(n) > INT64_MAX and n.is_integer() for n in numbers)
    if huge and _big_integer_literal(raw):
        raise json.JSONDecodeError(OUT_OF_RANGE, "", 0)
    return value


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_loads(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An APIRoute whose handler reads the body with `strict_loads`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
