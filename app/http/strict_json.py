"""Request bodies are read as strict JSON: what cannot be stored or searched faithfully is a 422.

Python's `json` accepts what JSON does not (NaN, Infinity, `1e999` read as infinity), lone
surrogates (`"\\ud800"`, which no UTF-8 encoder can write back), and integers of any size (a
400-digit one, or 2**63, which no store index holds). Each of those used to fail deep inside a
handler as a 500. Here the body is parsed once with orjson, which refuses the first three, and the
integers are checked against int64, so every such body answers 422 naming what to fix.

Nesting is bounded too (MAX_JSON_DEPTH, a 422 that names it and echoes nothing): FastAPI's
encoder of a 422 recurses through the input it echoes (a 500 past about 1,000 levels). orjson
refuses past 1,024 levels itself ("depth limit exceeded"), before it could recurse deeper, so a
body of any depth costs one parse; within that, the depth is measured as the numbers are walked.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute

from core.metadata import INT64_MAX, INT64_MIN
from core.schemas.common import MAX_FILTER_DEPTH, MAX_JSON_DEPTH

# orjson's wording → what the client should fix.
_REASONS = (
    ("surrogate", "text must be valid Unicode: a \\uD800-\\uDFFF escape must be a surrogate pair"),
    ("infinity", "numbers must be finite and within ±1.8e308"),
)
# orjson says only this where a NaN or Infinity stands, as for any other stray character: keep
# its words, say where, and add the hint.
_NOT_A_NUMBER = ("unexpected character", "no digit after")
NAN_HINT = "NaN and Infinity are not JSON numbers"
OUT_OF_RANGE = f"integers must be between {INT64_MIN} and {INT64_MAX}"
TOO_DEEP = (
    f"a JSON body may nest at most {MAX_JSON_DEPTH} levels of objects and arrays;"
    f" a metadata_filter at most {MAX_FILTER_DEPTH} levels of and, or, not"
)
# orjson's words where a body nests past its own limit (1,024): read as TOO_DEEP.
_PARSER_TOO_DEEP = "depth limit exceeded"


class TooDeep(ValueError):
    """A value nested past the limit it was measured against."""


def _reason(message: str, position: int) -> str:
    if any(marker in message for marker in _NOT_A_NUMBER):
        return f"{message} at position {position} ({NAN_HINT})"
    return next((reason for marker, reason in _REASONS if marker in message), message)


def numbers_in(value: Any, max_depth: int = sys.maxsize) -> list[int | float]:
    """Every int and float in a parsed value, walked level by level (no recursion, so a value of
    any depth is walked); TooDeep if it nests dicts and lists more than `max_depth` deep."""
    found: list[int | float] = []
    level = [value]
    for _ in range(max_depth):
        deeper: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                deeper.extend(item.values())
            elif isinstance(item, list):
                deeper.extend(item)
            elif isinstance(item, int | float) and not isinstance(item, bool):
                found.append(item)
        if not deeper:
            return found
        level = deeper
    if any(isinstance(item, dict | list) for item in level):
        raise TooDeep(TOO_DEEP)
    return found + [n for n in level if isinstance(n, int | float) and not isinstance(n, bool)]


def nested_past(value: Any, limit: int) -> bool:
    """Whether a parsed value nests dicts and lists more than `limit` deep; it looks no deeper."""
    try:
        numbers_in(value, limit)
    except TooDeep:
        return True
    return False


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
        reason = TOO_DEEP if _PARSER_TOO_DEEP in exc.msg else _reason(exc.msg, exc.pos)
        raise json.JSONDecodeError(reason, "", 0) from None
    try:
        numbers = numbers_in(value, MAX_JSON_DEPTH)
    except TooDeep:
        raise json.JSONDecodeError(TOO_DEEP, "", 0) from None
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
