"""Version, liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.deps import Context
from app.http.strict_json import StrictJSONRoute
from app.services.readiness import ReadyResponse, judge, observe
from core.schemas.common import OkResponse

VERSION = "0.1.0"
router = APIRouter(prefix="/v1", tags=["health"], route_class=StrictJSONRoute)


class VersionResponse(BaseModel):
    version: str


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
    state, status = judge(await observe(ctx))
    return JSONResponse(state.model_dump(), status_code=status)
