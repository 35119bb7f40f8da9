"""Dependency aliases for route handlers: the context and validated path parameters.

Each is `async def` on purpose: FastAPI runs a plain `def` dependency in its thread pool, a
thread hop per request for what is a few attribute reads."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.exceptions import RequestValidationError

from app.context import ApiContext
from core.schemas.common import DOCUMENT_ID_SCHEMA, NAME_SCHEMA, check_name


async def get_context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.context
    return context


def _valid(value: str, loc: str) -> str:
    try:
        return check_name(value)
    except ValueError as exc:
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("path", loc), "msg": f"{loc} {exc}", "input": value}]
        ) from exc


async def collection_name(
    collection_name: Annotated[str, Path(json_schema_extra=NAME_SCHEMA)],
) -> str:
    return _valid(collection_name, "collection_name")


async def document_id(
    document_id: Annotated[str, Path(json_schema_extra=DOCUMENT_ID_SCHEMA)],
) -> str:
    return _valid(document_id.strip(), "document_id")


Context = Annotated[ApiContext, Depends(get_context)]
CollectionName = Annotated[str, Depends(collection_name)]
DocumentIdPath = Annotated[str, Depends(document_id)]
