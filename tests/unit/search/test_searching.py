"""One search, whichever door it came through (search/searching.py): when a process may answer,
the 503s it answers otherwise, and where the collection's config comes from. The query pipeline, the
catalog and the replica are stand-ins; the marks are the real mapped file."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from core.catalog import Catalog
from core.enums import UnavailableReason
from core.errors import CollectionNotFound, Unavailable
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse
from core.settings import Settings
from search.querying import QueryPipeline
from search.searching import SearchService
from store.replication.marks import Marks
from store.replication.replica import Replica
from store.replication.replicator import Position

QUERY = SearchQuery(query="dune")
ANSWER = SearchResponse(results=[], facet_counts=None, query_time_ms=0.0)


class TableCatalog:
    """Knows every collection but `missing`; counts its reads."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    async def require(self, name: str) -> CollectionConfig:
        self.reads.append(name)
        if name == "missing":
            raise CollectionNotFound()
        return CollectionConfig.model_validate(
            {"vectors": [{"name": "kw", "type": "keyword", "index_fields": ["content"]}]}
        )


class Recording:
    """A query pipeline that keeps what it was asked, with the config it was given."""

    def __init__(self) -> None:
        self.searched: list[tuple[str, CollectionConfig]] = []

    async def search(
        self, collection: str, query: SearchQuery, config: CollectionConfig
    ) -> SearchResponse:
        self.searched.append((collection, config))
        return ANSWER


class HeldReplica:
    """A replica holding `position`: caught up with any write at or before it."""

    def __init__(self, position: Position | None) -> None:
        self.position = position
        self.asked: list[Position | None] = []

    async def caught_up(self, visible: Position | None, timeout_s: float) -> bool:
        self.asked.append(visible)
        held = self.position
        return visible is None or (held is not None and visible <= held)


def service(
    replica: HeldReplica | None = None,
) -> tuple[SearchService, Recording, TableCatalog]:
    pipeline, catalog = Recording(), TableCatalog()
    built = SearchService(
        Settings(retry_after_s=3),
        cast(QueryPipeline, pipeline),
        cast(Catalog, catalog),
        cast(Replica, replica) if replica is not None else None,
    )
    return built, pipeline, catalog


def marks(tmp_path: Path, visible: tuple[int, int] | None = None, bumps: int = 0) -> Marks:
    written = Marks.open(tmp_path / "replication.marks")
    if visible is not None:
        written.mark_visible(*visible)
    for _ in range(bumps):
        written.bump_catalog()
    return written


async def test_without_a_replica_it_answers_at_once_and_reads_the_config_every_search() -> None:
    searches, pipeline, catalog = service()
    assert searches.ready
    assert await searches.search("books", QUERY) == ANSWER
    assert await searches.search("books", QUERY) == ANSWER
    assert catalog.reads == ["books", "books"]  # no marks: nothing says a kept config is current
    assert [name for name, _ in pipeline.searched] == ["books", "books"]


async def test_a_replica_still_loading_is_not_ready_and_answers_503_starting() -> None:
    searches, pipeline, catalog = service(HeldReplica(None))
    assert not searches.ready
    with pytest.raises(Unavailable) as raised:
        await searches.search("books", QUERY)
    assert raised.value.reason == UnavailableReason.STARTING
    assert raised.value.retry_after_s == 3
    assert pipeline.searched == [] and catalog.reads == []


async def test_a_loaded_replica_keeps_each_config_until_the_generation_moves(
    tmp_path: Path,
) -> None:
    replica = HeldReplica(Position(1, 5))
    searches, pipeline, catalog = service(replica)
    worker = marks(tmp_path, visible=(1, 5))
    searches.loaded(Marks.read_only(tmp_path / "replication.marks"))
    assert searches.ready
    await searches.search("books", QUERY)
    await searches.search("books", QUERY)
    assert catalog.reads == ["books"]
    worker.bump_catalog()  # a collection was created or dropped
    await searches.search("books", QUERY)
    assert catalog.reads == ["books", "books"]
    assert replica.asked == [Position(1, 5)] * 3
    assert len(pipeline.searched) == 3


async def test_a_replica_behind_the_newest_acknowledged_write_answers_503_behind(
    tmp_path: Path,
) -> None:
    searches, pipeline, catalog = service(HeldReplica(Position(1, 4)))
    marks(tmp_path, visible=(1, 5))
    searches.loaded(Marks.read_only(tmp_path / "replication.marks"))
    with pytest.raises(Unavailable) as raised:
        await searches.search("books", QUERY)
    assert raised.value.reason == UnavailableReason.REPLICA_BEHIND
    assert "holds 1:4" in str(raised.value) and "at 1:5" in str(raised.value)
    assert pipeline.searched == [] and catalog.reads == []


async def test_a_missing_collection_is_the_catalogs_404_and_nothing_is_kept(
    tmp_path: Path,
) -> None:
    searches, pipeline, catalog = service(HeldReplica(Position(1, 1)))
    marks(tmp_path)
    searches.loaded(Marks.read_only(tmp_path / "replication.marks"))
    for _ in range(2):
        with pytest.raises(CollectionNotFound):
            await searches.search("missing", QUERY)
    assert catalog.reads == ["missing", "missing"] and pipeline.searched == []


async def test_the_config_writes_check_against_is_the_one_searches_keep(tmp_path: Path) -> None:
    """The api validates an async upsert against `config` (app/services/worker.py): read from the
    catalog while the replica loads, then kept with the searches' until the generation moves, and
    whatever is asked of a replica behind (a write is not a search: it need not wait)."""
    replica = HeldReplica(Position(1, 4))
    searches, _, catalog = service(replica)
    await searches.config("books")
    await searches.config("books")
    assert catalog.reads == ["books", "books"]  # no marks yet: nothing says a kept one is current
    worker = marks(tmp_path, visible=(1, 5))
    searches.loaded(Marks.read_only(tmp_path / "replication.marks"))
    kept = await searches.config("books")
    assert await searches.config("books") is kept
    with pytest.raises(Unavailable):  # behind: the search waits, the config is there already
        await searches.search("books", QUERY)
    assert catalog.reads == ["books"] * 3
    worker.bump_catalog()  # a collection was created or dropped
    assert await searches.config("books") is not kept
    assert catalog.reads == ["books"] * 4
    with pytest.raises(CollectionNotFound):
        await searches.config("missing")
    assert replica.asked == [Position(1, 5)]
