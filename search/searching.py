"""One search, whichever door it came through: the api's fast path and its route (through the
search node, app/context.py's LocalSearch) and the search queue (the node's consumer and the
worker's). Whether this process may answer yet, the collection's config, then the query pipeline
(search/querying.py); each rule written here only.
"""

from __future__ import annotations

from core.catalog import Catalog
from core.enums import UnavailableReason
from core.errors import Unavailable
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings
from search.querying import QueryPipeline
from store.replication.marks import Marks
from store.replication.replica import Replica
from store.replication.replicator import Position


class Configs:
    """Each collection's parsed config, kept while the catalog's generation stays the same."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._generation = -1
        self._kept: dict[str, CollectionConfig] = {}

    async def get(self, name: str, generation: int | None) -> CollectionConfig:
        """`generation`: read from the marks before this call (a config read after it is at
        least that new); None where there are no marks, so nothing may be kept and every search
        reads the catalog. CollectionNotFound for a collection the catalog lacks."""
        if generation is None:
            return await self._catalog.require(name)
        if generation != self._generation:
            self._kept.clear()
            self._generation = generation
        config = self._kept.get(name)
        if config is None:
            config = await self._catalog.require(name)
            if generation == self._generation:  # no newer generation came while it was read
                self._kept[name] = config
        return config


class SearchService:
    """Answers a search over `pipeline`'s store. With a `replica` (an api's embedded copy) only
    once it is loaded and holds the newest acknowledged write; without (the worker's own store,
    or a Qdrant server) at once."""

    def __init__(
        self,
        settings: Settings,
        pipeline: QueryPipeline,
        catalog: Catalog,
        replica: Replica | None = None,
    ) -> None:
        self._settings = settings
        self._pipeline = pipeline
        self._configs = Configs(catalog)
        self._replica = replica
        self._marks: Marks | None = None  # given with the replica's first copy (`loaded`)

    @property
    def ready(self) -> bool:
        """Whether searches can be answered here: the readiness rule, for every door."""
        return self._replica is None or self._marks is not None

    def loaded(self, marks: Marks) -> None:
        """The replica's first copy is in; `marks` say how new the next searches need it."""
        self._marks = marks

    def close(self) -> None:
        if self._marks is not None:
            self._marks.close()

    async def search(self, collection: str, query: SearchQuery) -> SearchResponse:
        if not self.ready:
            raise Unavailable(
                "this search node is still loading its copy of the store; retry shortly",
                self._settings.retry_after_s,
                UnavailableReason.STARTING,
            )
        generation = None
        if self._replica is not None and self._marks is not None:
            visible, generation = self._marks.read()
            position = None if visible is None else Position(*visible)
            if not await self._replica.caught_up(position, self._settings.replica_wait_s):
                raise self._behind(position)
        config = await self._configs.get(collection, generation)
        return await self._pipeline.search(collection, query, config)

    async def config(self, collection: str) -> CollectionConfig:
        """The collection's config as this node keeps it (CollectionNotFound if the catalog
        lacks it): the api's writes validate against it, as searches do, without a Redis read a
        request."""
        generation = None if self._marks is None else self._marks.read().catalog
        return await self._configs.get(collection, generation)

    def _behind(self, visible: Position | None) -> Unavailable:
        """The 503 of a replica that did not reach the newest acknowledged write in time."""
        assert self._replica is not None
        held = self._replica.position
        return Unavailable(
            f"this search node's replica has not yet applied the newest acknowledged write "
            f"(it holds {held.text() if held else 'none'}, the write is at "
            f"{visible.text() if visible else 'none'}); retry shortly",
            self._settings.retry_after_s,
            UnavailableReason.REPLICA_BEHIND,
        )
