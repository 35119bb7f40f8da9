"""Calls to the worker over the bus, and searches: answered by this process's search node once
it is ready, over the bus until then."""

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
    """The search node's answer; before it has its replica, the answer of whoever serves the
    search queue, passed on as it came (it is a SearchResponse already: reading and writing it
    again would only cost CPU). A missing collection is the searching side's 404."""
    if ctx.search is not None and ctx.search.ready:
        response = await ctx.search.search(collection, query)
        return Response(response.model_dump_json(), media_type="application/json")
    body = await ctx.bus.call_raw(
        SEARCH_QUEUE, SearchRequest(collection=collection, query=query), ctx.settings.rpc_timeout_s
    )
    return Response(body, media_type="application/json")
