"""Collections: create, list, get, delete, exists, stats, queue info and failed writes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from app.deps import CollectionName, Context
from app.http.strict_json import StrictJSONRoute
from app.services.worker import call_worker, require_collection
from core.ledger import FailedWrite
from core.messages import (
    Ack,
    CountDocuments,
    CountReply,
    CreateCollection,
    DropCollection,
    EmptyCollection,
)
from core.schemas.collection import CollectionConfig
from core.schemas.common import OkResponse
from core.schemas.document import QueueInfo

router = APIRouter(prefix="/v1/collections", tags=["collections"], route_class=StrictJSONRoute)


class ExistsResponse(BaseModel):
    exists: bool


class StatsResponse(BaseModel):
    doc_count: int
    queue: QueueInfo


@router.post("/{collection_name}", response_model=OkResponse)
async def create_collection(
    collection_name: CollectionName, config: CollectionConfig, ctx: Context
) -> OkResponse:
    await call_worker(ctx, CreateCollection(name=collection_name, config=config), Ack)
    return OkResponse()


@router.get("", response_model=list[str])
async def list_collections(ctx: Context) -> list[str]:
    return await ctx.catalog.names()


@router.get("/{collection_name}", response_model=CollectionConfig)
async def get_collection(collection_name: CollectionName, ctx: Context) -> CollectionConfig:
    return await require_collection(ctx, collection_name)


@router.delete("/{collection_name}", response_model=OkResponse)
async def delete_collection(collection_name: CollectionName, ctx: Context) -> OkResponse:
    await require_collection(ctx, collection_name)
    await call_worker(ctx, DropCollection(name=collection_name), Ack)
    return OkResponse()


@router.post("/{collection_name}/empty", response_model=OkResponse)
async def empty_collection(collection_name: CollectionName, ctx: Context) -> OkResponse:
    await require_collection(ctx, collection_name)
    await call_worker(ctx, EmptyCollection(name=collection_name), Ack)
    return OkResponse()


@router.get("/{collection_name}/exists", response_model=ExistsResponse)
async def collection_exists(collection_name: str, ctx: Context) -> ExistsResponse:
    return ExistsResponse(exists=await ctx.catalog.exists(collection_name))


@router.get("/{collection_name}/stats", response_model=StatsResponse)
async def collection_stats(collection_name: CollectionName, ctx: Context) -> StatsResponse:
    await require_collection(ctx, collection_name)
    count = await call_worker(ctx, CountDocuments(name=collection_name), CountReply)
    return StatsResponse(doc_count=count.count, queue=await ctx.ledger.queue_info(collection_name))


@router.get("/{collection_name}/queue/info", response_model=QueueInfo)
async def queue_info(collection_name: CollectionName, ctx: Context) -> QueueInfo:
    await require_collection(ctx, collection_name)
    return await ctx.ledger.queue_info(collection_name)


@router.get("/{collection_name}/queue/failed", response_model=list[FailedWrite])
async def failed_writes(
    collection_name: CollectionName,
    ctx: Context,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many")] = 50,
) -> list[FailedWrite]:
    """Braid's own (not in Amgix): writes that failed for good, with their reasons, for the
    dashboard; they stay until `DELETE …/queue`."""
    await require_collection(ctx, collection_name)
    return await ctx.ledger.failed(collection_name, limit)


@router.delete("/{collection_name}/queue", response_model=OkResponse)
async def purge_queue(collection_name: CollectionName, ctx: Context) -> OkResponse:
    await require_collection(ctx, collection_name)
    await ctx.ledger.purge(collection_name)
    return OkResponse()
