"""When the embedded store optimizes a shard without dense vectors (store/edge/shard.py): when it
has doubled, or when a fifth of it is dead versions; and how its IDF follows its live points."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from store.edge.store import EdgeStore
from store.protocol import ArmQuery, CollectionSchema, PointWrite, SparseSlot
from tests.contract.conftest import COLLECTION, sparse

pytestmark = pytest.mark.asyncio

KEYWORD = CollectionSchema(sparse=[SparseSlot("lex", idf=True)])


def points(start: int, stop: int, **payload: object) -> list[PointWrite]:
    return [
        PointWrite(f"d{i}", dict(payload), {"lex": sparse({2: 1.0, 100 + i % 7: 0.5})})
        for i in range(start, stop)
    ]


@pytest_asyncio.fixture
async def edge(store_root: Path) -> AsyncIterator[EdgeStore]:
    """A keyword shard optimized when it doubles, from 400 points, or when its dead versions
    reach 100 and a fifth of its live points."""
    store = await EdgeStore.open(store_root, optimize_min_changes=100)
    await store.create_collection(COLLECTION, KEYWORD)
    yield store
    await store.close()


async def optimized(edge: EdgeStore, caplog: pytest.LogCaptureFixture) -> bool:
    """Whether the store optimizes the collection when the worker asks it to now."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="store.edge.store"):
        await edge.maintain(COLLECTION)
        await edge.maintenance_done()
    return "optimized docs in" in caplog.text


async def test_a_keyword_shard_is_optimized_when_it_has_doubled(
    edge: EdgeStore, caplog: pytest.LogCaptureFixture
) -> None:
    await edge.upsert(COLLECTION, points(0, 399))
    assert not await optimized(edge, caplog)
    await edge.upsert(COLLECTION, points(399, 400))
    assert await optimized(edge, caplog)
    await edge.upsert(COLLECTION, points(400, 799))
    assert not await optimized(edge, caplog)
    await edge.upsert(COLLECTION, points(799, 800))
    assert await optimized(edge, caplog)
    assert await edge.count(COLLECTION) == 800


async def test_a_keyword_shard_is_optimized_when_a_fifth_of_it_is_dead(
    edge: EdgeStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Overwritten, deleted and payload-overwritten versions count; new points do not."""
    await edge.upsert(COLLECTION, points(0, 1000))
    assert await optimized(edge, caplog)  # doubled: 1,000 live, none dead
    await edge.upsert(COLLECTION, points(0, 199, v=2))  # a fifth of 1,000 is 200
    assert not await optimized(edge, caplog)
    await edge.upsert(COLLECTION, points(1000, 1100))  # and of 1,100, 220
    await edge.upsert(COLLECTION, points(199, 219, v=2))
    assert not await optimized(edge, caplog)
    await edge.upsert(COLLECTION, points(219, 220, v=2))
    assert await optimized(edge, caplog)
    await edge.delete(COLLECTION, [f"d{i}" for i in range(100, 280)])  # 920 live: 184
    assert not await optimized(edge, caplog)
    await edge.overwrite_payloads(COLLECTION, {f"d{i}": {"v": 3} for i in range(300, 304)})
    assert await optimized(edge, caplog)
    assert await edge.count(COLLECTION) == 920
    found = await edge.retrieve(COLLECTION, ["d0", "d150", "d300", "d1099"])
    assert {d: p.payload for d, p in found.items()} == {
        "d0": {"v": 2},
        "d300": {"v": 3},
        "d1099": {},
    }


def idf(documents: int, holding: int) -> float:
    """Qdrant's IDF of a term that `holding` of `documents` documents hold."""
    return math.log(1 + (documents - holding + 0.5) / (holding + 0.5))


async def test_idf_comes_from_the_index_once_a_shard_holds_enough_live_points(
    store_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """From `index_idf_from` live points IDF comes from the engine's index statistics, whether
    the shard was optimized since or not; below, from its live points. 3,000 documents of 600
    terms make an indexed segment, whose postings outlive a delete until the next optimize."""
    edge = await EdgeStore.open(store_root, optimize_min_changes=10_000, index_idf_from=3100)
    filler = dict.fromkeys(range(1000, 1600), 0.5)
    written = [
        PointWrite(f"d{i}", {}, {"lex": sparse({1 if i % 10 == 0 else 2: 1.0, **filler})})
        for i in range(3000)
    ]
    query = [ArmQuery("lex", sparse({1: 1.0}), 1)]
    try:
        await edge.create_collection(COLLECTION, KEYWORD)
        for start in range(0, len(written), 500):
            await edge.upsert(COLLECTION, written[start : start + 500])
        edge._shards[COLLECTION].checked = False  # optimize now, as a loaded shard would be
        assert await optimized(edge, caplog)
        await edge.delete(COLLECTION, [f"d{i}" for i in range(0, 1500, 10)])  # half of term 1's
        [live] = await edge.query_arms(COLLECTION, query)
        assert live[0].score == pytest.approx(idf(2850, 150), rel=1e-3)
        await edge.upsert(COLLECTION, points(3000, 3300))  # 3,150 live
        [indexed] = await edge.query_arms(COLLECTION, query)
        assert indexed[0].score == pytest.approx(idf(3300, 300), rel=1e-3)
        assert not await optimized(edge, caplog)
    finally:
        await edge.close()
