"""Search: hybrid retrieval with fusion, answered by this api's search node (while it loads its
replica, through the search queue)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from app.deps import CollectionName, Context
from app.http.strict_json import StrictJSONRoute
from app.services.search import search
from core.schemas.search import SearchQuery, SearchResponse

router = APIRouter(
    prefix="/v1/collections/{collection_name}", tags=["search"], route_class=StrictJSONRoute
)


# Normally shadowed: app/fast_routes.py answers first and passes on what it can't serve here.
@router.post("/search", response_model=SearchResponse, response_model_exclude_none=False)
async def search_collection(
    collection_name: CollectionName, query: SearchQuery, ctx: Context
) -> Response:
    body = await search(ctx, collection_name, query)
    return Response(body, media_type="application/json")
