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
    return await ctx.catalog.require(name)
