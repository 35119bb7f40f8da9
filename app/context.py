"""What the api holds for its lifetime: settings, the bus, Redis-backed services and the search
node it answers searches with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from redis.asyncio import Redis

from core.bus import Bus
from core.catalog import Catalog
from core.ledger import Ledger
from core.metrics import Recorder
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings


class LocalSearch(Protocol):
    """The query pipeline in this process (search.node.SearchNode; app/__main__.py plugs
    it in, so the rest of app/ knows only this protocol)."""

    @property
    def ready(self) -> bool: ...

    def start(self) -> None: ...

    async def close(self) -> None: ...

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse: ...

    async def config(self, collection: str) -> CollectionConfig: ...


OpenSearch = Callable[[Settings, Bus, Redis, Recorder], Awaitable[LocalSearch]]


@dataclass
class ApiContext:
    settings: Settings
    bus: Bus
    redis: Redis
    catalog: Catalog
    ledger: Ledger
    search: LocalSearch | None = None  # None: every search goes to the search queue
