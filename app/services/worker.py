"""Calls to the worker over the bus (searches: app/services/search.py)."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from app.context import ApiContext
from core.messages import WorkerCall, WorkerRequest
from core.names import WORKER_RPC_QUEUE
from core.schemas.collection import CollectionConfig

Reply = TypeVar("Reply", bound=BaseModel)


async def call_worker(ctx: ApiContext, request: WorkerRequest, reply_type: type[Reply]) -> Reply:
    return await ctx.bus.call(
        WORKER_RPC_QUEUE, WorkerCall(request=request), reply_type, ctx.settings.rpc_timeout_s
    )


async def require_collection(ctx: ApiContext, name: str) -> CollectionConfig:
    """The collection's config, CollectionNotFound if there is none. With a search node in this
    process, as the node keeps it while the catalog's generation stays the same (search/
    searching.py, Configs): read from Redis a request, it cost an async upsert 0.2 of the api's
    ~1.2 CPU-ms and 0.04 of Redis's ~0.3 (docs/benchmarks.md, "The api's writes check against
    the kept config")."""
    if ctx.search is not None:
        return await ctx.search.config(name)
    return await ctx.catalog.require(name)
