"""Calls to the worker and the searchers over the bus (the api never touches the store)."""

from __future__ import annotations

from typing import TypeVar

from fastapi import Response
from pydantic import BaseModel

from app.context import ApiContext
from core.messages import SearchRequest, WorkerCall, WorkerRequest
from core.names import SEARCH_QUEUE, WORKER_RPC_QUEUE
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery

Reply = TypeVar("Reply", bound=BaseModel)


async def call_worker(ctx: ApiContext, request: WorkerRequest, reply_type: type[Reply]) -> Reply:
    return await ctx.bus.call(
        WORKER_RPC_QUEUE, WorkerCall(request=request), reply_type, ctx.settings.rpc_timeout_s
    )


async def require_collection(ctx: ApiContext, name: str) -> CollectionConfig:
    return await ctx.catalog.require(name)


async def search(ctx: ApiContext, collection: str, query: SearchQuery) -> Response:
    """The search process's answer, passed on as it came: it is a SearchResponse already (the
    searcher built it), so reading and writing it again here would only cost CPU. A missing
    collection is the searcher's 404."""
    body = await ctx.bus.call_raw(
        SEARCH_QUEUE, SearchRequest(collection=collection, query=query), ctx.settings.rpc_timeout_s
    )
    return Response(body, media_type="application/json")
