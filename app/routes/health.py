"""Version, liveness and readiness."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.deps import Context
from core.names import RedisKeys
from core.schemas.common import OkResponse

VERSION = "0.1.0"
router = APIRouter(prefix="/v1", tags=["health"])


class VersionResponse(BaseModel):
    version: str


class ReadyResponse(BaseModel):
    database: bool
    rabbitmq: bool
    index: bool
    query: bool
    ready: bool


@router.get("/version", response_model=VersionResponse)
async def version() -> VersionResponse:
    return VersionResponse(version=f"{VERSION} (Braid One)")


@router.get("/health/check", response_model=OkResponse)
async def health_check() -> OkResponse:
    return OkResponse()


@router.get(
    "/health/ready",
    response_model=ReadyResponse,
    responses={
        218: {"model": ReadyResponse, "description": "Only one of index/query is answering"},
        503: {"model": ReadyResponse, "description": "Not ready"},
    },
)
async def health_ready(ctx: Context) -> JSONResponse:
    """200 all ready; 218 store and broker up but only one of index/query; 503 otherwise."""
    try:
        raw = await ctx.redis.get(RedisKeys.heartbeat("worker"))
    except Exception:  # Redis down: nothing is ready
        raw = None
    beat = json.loads(raw) if raw else {}
    state = ReadyResponse(
        database=bool(beat.get("store")),
        rabbitmq=ctx.bus.is_connected,
        index=bool(beat.get("index")),
        query=bool(beat.get("query")),
        ready=False,
    )
    state.ready = state.database and state.rabbitmq and state.index and state.query
    if state.ready:
        status = 200
    elif state.database and state.rabbitmq and (state.index or state.query):
        status = 218
    else:
        status = 503
    return JSONResponse(state.model_dump(), status_code=status)
