"""A search, whichever way it reached this api (the fast path in app/fast_routes.py or the
route): answered by this process's search node once it is ready, by the search queue until then.
"""

from __future__ import annotations

from app.context import ApiContext, LocalSearch
from core.messages import SearchRequest
from core.names import SEARCH_QUEUE
from core.schemas.search import SearchQuery


def local_search(ctx: ApiContext) -> LocalSearch | None:
    """The node that answers searches in this process; None while it is loading its replica
    (or where there is none): the readiness rule of both doors."""
    node = ctx.search
    return node if node is not None and node.ready else None


async def search(ctx: ApiContext, collection: str, query: SearchQuery) -> bytes:
    """The answer's JSON: the search node's; before it has its replica, that of whoever serves
    the search queue, passed on as it came (it is a SearchResponse already: reading and writing
    it again would only cost CPU). A missing collection is the searching side's 404."""
    node = local_search(ctx)
    if node is not None:
        return (await node.search(collection, query)).model_dump_json().encode()
    request = SearchRequest(collection=collection, query=query)
    return await ctx.bus.call_raw(SEARCH_QUEUE, request, ctx.settings.rpc_timeout_s)
