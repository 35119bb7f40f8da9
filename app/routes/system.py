"""System info: versions of Braid, the store and the broker, and the collection count."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from app.deps import Context
from app.http.strict_json import StrictJSONRoute
from app.routes.health import VERSION
from app.services.worker import call_worker
from core.messages import SystemInfo, SystemInfoReply

router = APIRouter(prefix="/v1/system", tags=["system"], route_class=StrictJSONRoute)


class SystemInfoResponse(BaseModel):
    amgix_version: str
    database_kind: str = Field(description="'qdrant' (server) or 'qdrant-edge' (embedded)")
    database_version: str
    database_features: dict[str, bool]
    rabbitmq_version: str
    collection_count: int = Field(ge=0)


@router.get("/info", response_model=SystemInfoResponse)
async def system_info(ctx: Context) -> SystemInfoResponse:
    store = await call_worker(ctx, SystemInfo(), SystemInfoReply)
    return SystemInfoResponse(
        amgix_version=f"{VERSION} (Braid One)",
        database_kind=store.database_kind,
        database_version=store.database_version,
        database_features={"dense_vectors": store.dense_vectors},
        rabbitmq_version=ctx.bus.broker_version,
        collection_count=len(await ctx.catalog.names()),
    )
