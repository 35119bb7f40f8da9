"""The embedded store beyond the Store contract: its folder (persistence, the lock, a rebuild cut
short), its optimize in a child process, its IDF modes, hits whose ids it must learn, how the
replication stream numbers a write that failed part way, and overwrites as a delete and an
insert."""

from __future__ import annotations

import asyncio
import logging
import math
import random
from pathlib import Path
from typing import cast

import pytest
from redis.asyncio import Redis

from core.bus import Bus
from core.filters import parse_filter
from store.edge import convert as edge_convert
from store.edge.store import EdgeStore
from store.ids import DocIds, stored_payload
from store.protocol import ArmQuery, CollectionMissing, PointFilter, StoreError, StoreLocked
from store.replication.marks import Marks
from store.replication.replicator import Position, Replicator
from tests.contract.conftest import COLLECTION, SCHEMA, ids, point, sparse

pytestmark = pytest.mark.asyncio


async def test_edge_data_survives_close_and_reopen(store_root: Path) -> None:
    first = await EdgeStore.open(store_root)
    await first.create_collection(COLLECTION, SCHEMA)
    await first.upsert(COLLECTION, [point("a", [0, 1.0, 0, 0], {4: 0.5}, v=1), point("b")])
    await first.overwrite_payloads(COLLECTION, {"a": {"v": 2}})
    await first.delete(COLLECTION, ["b"])
    await first.close()
    again = await EdgeStore.open(store_root)
    try:
        assert await again.list_collections() == [COLLECTION]
        got = await again.retrieve(COLLECTION, ["a", "b"], with_vectors=True)
        assert list(got) == ["a"] and got["a"].payload == {"v": 2}
        assert got["a"].vectors is not None and got["a"].vectors["lex"] == sparse({4: 0.5})
        await again.empty(COLLECTION)  # the schema came back from disk too
        await again.upsert(COLLECTION, [point("c", [0, 0, 1.0, 0])])
        assert await again.count(COLLECTION) == 1
    finally:
        await again.close()


async def test_edge_hits_of_points_another_process_wrote_carry_their_document_ids(
    store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Queries read no payloads: a hit's document id is one this process wrote or has met. Here
    # another process wrote them (a fresh DocIds stands for it), so the store must learn them.
    first = await EdgeStore.open(store_root)
    await first.create_collection(COLLECTION, SCHEMA)
    written = (("x:1", [1.0, 0, 0, 0]), ("é", [0, 1.0, 0, 0]))
    await first.upsert(COLLECTION, [point(d, v) for d, v in written])
    await first.close()
    monkeypatch.setattr(edge_convert, "_IDS", DocIds())
    again = await EdgeStore.open(store_root)
    try:
        for _ in range(2):  # learnt, then known
            [hits] = await again.query_arms(COLLECTION, [ArmQuery("dense", [1.0, 0.5, 0, 0], 5)])
            assert ids(hits) == ["x:1", "é"]
        assert len(edge_convert._IDS) == 2
    finally:
        await again.close()


async def test_edge_payloads_keep_apart_only_what_the_engine_reads(
    store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A payload is stored as the keys the engine reads (tags, metadata, the document id) and one
    packed string for the rest; a point stored whole, as before packing, reads back the same and
    is found by the same filters."""
    store = await EdgeStore.open(store_root)
    fields = {"name": "n", "tags": ["t"], "metadata": {"k": 1}, "_braid": {"ts_us": 5}}
    try:
        await store.create_collection(COLLECTION, SCHEMA)
        with monkeypatch.context() as before:
            before.setattr(edge_convert, "to_payload", stored_payload)
            await store.upsert(COLLECTION, [point("whole", **fields)])
        await store.upsert(COLLECTION, [point("packed", **fields)])
        got = await store.retrieve(COLLECTION, ["whole", "packed"])
        assert got["whole"].payload == got["packed"].payload == fields
        packed_id = edge_convert.point_id("packed")
        [record] = await store._use(COLLECTION, lambda e: e.retrieve([packed_id], True, False))
        assert set(record.payload) == {"tags", "metadata", "_doc_id", edge_convert.PACKED}
        for where in (PointFilter(tags=("t",)), PointFilter(metadata=parse_filter("k = 1"))):
            page = await store.scroll(COLLECTION, where, None, 10)
            assert sorted(p.doc_id for p in page.points) == ["packed", "whole"]
    finally:
        await store.close()


async def test_edge_second_open_raises_store_locked_while_first_is_open(store_root: Path) -> None:
    first = await EdgeStore.open(store_root)
    with pytest.raises(StoreLocked, match="another worker owns .* BRAID_QDRANT_URL"):
        await EdgeStore.open(store_root)
    await first.close()
    second = await EdgeStore.open(store_root)  # released by close
    await second.close()


async def test_edge_open_finishes_an_interrupted_rebuild(store_root: Path) -> None:
    first = await EdgeStore.open(store_root)
    await first.create_collection(COLLECTION, SCHEMA)
    await first.upsert(COLLECTION, [point("a")])
    await first.close()
    # as if `empty` died after moving the old shard away and before moving the new one in
    (store_root / COLLECTION).rename(store_root / f".fresh-{COLLECTION}")
    (store_root / f".trash-{COLLECTION}").mkdir()
    again = await EdgeStore.open(store_root)
    try:
        assert await again.list_collections() == [COLLECTION]
        assert await again.count(COLLECTION) == 1
        assert sorted(p.name for p in store_root.iterdir()) == [".lock", COLLECTION]
    finally:
        await again.close()


def random_points(count: int, seed: int) -> list:
    rng = random.Random(seed)
    return [
        point(
            f"d{i}",
            [rng.uniform(-1, 1) for _ in range(4)],
            {rng.randrange(200): rng.uniform(0.1, 1) for _ in range(5)},
        )
        for i in range(count)
    ]


async def test_edge_maintain_optimizes_and_queries_return_the_same(
    store_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    edge = await EdgeStore.open(store_root, optimize_min_changes=500)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        points = random_points(2000, seed=7)
        for start in range(0, len(points), 500):
            await edge.upsert(COLLECTION, points[start : start + 500])
        await edge.delete(COLLECTION, [f"d{i}" for i in range(0, 2000, 3)])  # vacuum work
        arms = [ArmQuery("dense", [0.3, -0.2, 0.9, 0.1], 20), ArmQuery("lex", sparse({5: 1.0}), 20)]
        before = await edge.query_arms(COLLECTION, arms)
        with caplog.at_level(logging.INFO, logger="store.edge.store"):
            await edge.maintain(COLLECTION)
            await edge.maintenance_done()
        assert "optimized docs in" in caplog.text
        after = await edge.query_arms(COLLECTION, arms)
        assert [ids(hits) for hits in after] == [ids(hits) for hits in before]
        for old, new in zip(before, after, strict=True):
            assert [h.score for h in new] == pytest.approx([h.score for h in old], rel=1e-4)
        assert await edge.count(COLLECTION) == 1333
    finally:
        await edge.close()


def idf(documents: int, holding: int) -> float:
    """Qdrant's IDF of a term that `holding` of `documents` documents hold."""
    return math.log(1 + (documents - holding + 0.5) / (holding + 0.5))


async def test_edge_large_shards_take_idf_from_the_index_until_an_optimize_vacuums(
    store_root: Path,
) -> None:
    """From `index_idf_from` points IDF comes from the engine's index statistics: a deleted
    document still counts there until the next optimize vacuums it; then only live ones do.
    3,000 documents of 600 terms make an indexed segment, whose postings outlive a delete (a
    small segment's are rebuilt from live points whenever the shard is loaded)."""
    edge = await EdgeStore.open(
        store_root, optimize_min_changes=1, optimize_growth=0.0, index_idf_from=0
    )
    filler = dict.fromkeys(range(1000, 1600), 0.5)
    points = [point(f"d{i}", sparse={1 if i % 10 == 0 else 2: 1.0, **filler}) for i in range(3000)]
    query = [ArmQuery("lex", sparse({1: 1.0}), 1)]
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        for start in range(0, len(points), 500):
            await edge.upsert(COLLECTION, points[start : start + 500])
        await edge.maintain(COLLECTION)
        await edge.maintenance_done()
        await edge.delete(COLLECTION, [f"d{i}" for i in range(0, 1500, 10)])  # half of term 1's
        [stale] = await edge.query_arms(COLLECTION, query)
        assert stale[0].score == pytest.approx(idf(3000, 300), rel=1e-3)
        await edge.maintain(COLLECTION)
        await edge.maintenance_done()
        [fresh] = await edge.query_arms(COLLECTION, query)
        assert fresh[0].score == pytest.approx(idf(2850, 150), rel=1e-3)
    finally:
        await edge.close()


async def test_edge_maintain_is_idle_below_its_thresholds(
    store_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    edge = await EdgeStore.open(store_root, optimize_min_changes=500)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        await edge.upsert(COLLECTION, random_points(499, seed=1))
        with caplog.at_level(logging.INFO, logger="store.edge.store"):
            await edge.maintain(COLLECTION)
            await edge.maintenance_done()
            assert "optimized" not in caplog.text
            await edge.upsert(COLLECTION, random_points(1, seed=2))
            await edge.maintain(COLLECTION)
            await edge.maintenance_done()
            assert "optimized docs" in caplog.text
    finally:
        await edge.close()


async def test_edge_writes_made_while_optimizing_survive_the_swap(
    store_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    edge = await EdgeStore.open(store_root, optimize_min_changes=500)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        await edge.upsert(COLLECTION, random_points(1500, seed=3))
        with caplog.at_level(logging.INFO, logger="store.edge.store"):
            await edge.maintain(COLLECTION)  # returns at once; the child optimizes a copy
            while edge._shards[COLLECTION].journal is None:  # the copy is taken: now journal
                await asyncio.sleep(0.001)
            late = random_points(1600, seed=4)[1500:]
            await edge.upsert(COLLECTION, late)
            await edge.delete(COLLECTION, ["d0", "d1"])
            with pytest.raises(StoreError):  # d2's is applied, the ghost's fails
                await edge.overwrite_payloads(COLLECTION, {"d2": {"v": 9}, "ghost": {"v": 9}})
            await edge.maintenance_done()
        assert "optimized docs in" in caplog.text
        assert await edge.count(COLLECTION) == 1598
        found = await edge.retrieve(COLLECTION, [p.doc_id for p in late] + ["d0", "d2"])
        assert set(found) == {p.doc_id for p in late} | {"d2"}
        assert found["d2"].payload == {"v": 9}  # replayed onto the copy: only what applied
    finally:
        await edge.close()
    reopened = await EdgeStore.open(store_root)
    try:
        assert await reopened.count(COLLECTION) == 1598
        assert not [p for p in store_root.iterdir() if p.name.startswith(".optimizing-")]
    finally:
        await reopened.close()


async def test_a_write_that_fails_part_way_makes_the_replicas_copy_again(
    store_root: Path, tmp_path: Path
) -> None:
    """The documents before the one that failed are written: the replicas cannot know which,
    so the stream skips a number, and each replica copies the store at the next message."""
    edge = await EdgeStore.open(store_root)
    marks = Marks.open(tmp_path / "replication.marks")  # broadcasts fail: nothing to mark
    replicator = Replicator(edge, Bus("amqp://nowhere"), cast(Redis, None), marks)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        await replicator.upsert(COLLECTION, [point("a", v=1)])
        assert await replicator.copy(tmp_path / "first", None) == (Position(0, 1), True)
        with pytest.raises(CollectionMissing):  # nothing written: no gap
            await replicator.upsert("nope", [point("a")])
        assert await replicator.copy(tmp_path / "second", None) == (Position(0, 1), True)
        with pytest.raises(StoreError):
            await replicator.overwrite_payloads(COLLECTION, {"a": {"v": 2}, "ghost": {"v": 2}})
        assert (await edge.retrieve(COLLECTION, ["a"]))["a"].payload == {"v": 2}
        await replicator.delete(COLLECTION, ["a"])  # the next write: its number shows the gap
        assert await replicator.copy(tmp_path / "third", None) == (Position(0, 3), True)
    finally:
        marks.close()
        await edge.close()


@pytest.mark.parametrize("replica", [False, True], ids=["worker", "replica"])
async def test_edge_a_document_overwritten_is_found_by_its_newest_terms_only(
    store_root: Path, replica: bool
) -> None:
    """An overwrite is a delete and an insert (calls.replace; a replica deletes without reading
    first): the deleted versions' postings stay in the segment until an optimize, and must not
    come back as hits."""
    edge = await EdgeStore.open(store_root, replica=replica)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        await edge.upsert(COLLECTION, [point("a", [1.0, 0, 0, 0], {1: 1.0}), point("b")])
        for term in (2, 3):
            await edge.upsert(COLLECTION, [point("a", [1.0, 0, 0, 0], {term: 1.0}, v=term)])
        arms = [ArmQuery("lex", sparse({t: 1.0}), 10) for t in (1, 2, 3)] + [
            ArmQuery("dense", [1.0, 0, 0, 0], 10)
        ]
        by_term = await edge.query_arms(COLLECTION, arms)
        assert [ids(hits) for hits in by_term[:3]] == [[], [], ["a"]]
        assert sorted(ids(by_term[3])) == ["a", "b"]
        assert await edge.count(COLLECTION) == 2
        assert (await edge.retrieve(COLLECTION, ["a"]))["a"].payload == {"v": 3}
    finally:
        await edge.close()


async def test_edge_an_upsert_the_engine_refuses_leaves_each_document_as_it_was(
    store_root: Path,
) -> None:
    """The worker's overwrite deletes before it inserts: when the engine refuses the insert, the
    versions the delete took are put back, so no document is lost to a refused write."""
    edge = await EdgeStore.open(store_root)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        await edge.upsert(COLLECTION, [point("a", [1.0, 0, 0, 0], {1: 1.0}, v=1), point("b", v=1)])
        await edge.upsert(COLLECTION, [point("a", [0, 1.0, 0, 0], {2: 1.0}, v=2)])
        refused = point("a", [1.0, 0, 0], v=3)  # three numbers for a slot of four
        with pytest.raises(StoreError):
            await edge.upsert(COLLECTION, [point("b", v=3), refused, point("c", v=3)])
        got = await edge.retrieve(COLLECTION, ["a", "b"], with_vectors=True)
        assert {d: p.payload for d, p in got.items()} == {"a": {"v": 2}, "b": {"v": 1}}
        assert got["a"].vectors is not None and got["a"].vectors["lex"] == sparse({2: 1.0})
        [hits] = await edge.query_arms(COLLECTION, [ArmQuery("lex", sparse({2: 1.0}), 10)])
        assert ids(hits) == ["a"]
    finally:
        await edge.close()


def _disk_and_length(root: Path) -> tuple[int, int]:
    files = [p.stat() for p in root.rglob("*") if p.is_file()]
    return sum(s.st_blocks * 512 for s in files), sum(s.st_size for s in files)


async def test_edge_a_copy_reads_the_same_and_leaves_the_holes_of_its_files_holes(
    store_root: Path, tmp_path: Path
) -> None:
    """A replica's copy (and an optimize's) is taken with the worker's writes waiting: it writes
    the shard's data, not the zeros of the pages the engine sized ahead."""
    edge = await EdgeStore.open(store_root)
    try:
        await edge.create_collection(COLLECTION, SCHEMA)
        await edge.upsert(COLLECTION, [point(f"d{i}", sparse={i: 1.0}, v=i) for i in range(300)])
        await edge.copy_to(tmp_path / "copy")
    finally:
        await edge.close()
    shard_disk, shard_length = _disk_and_length(store_root / COLLECTION)
    copy_disk, copy_length = _disk_and_length(tmp_path / "copy" / COLLECTION)
    assert shard_disk < shard_length / 2  # the shard has holes to leave, or this shows nothing
    assert copy_length == shard_length and copy_disk <= shard_disk
    copy = await EdgeStore.open(tmp_path / "copy", replica=True)
    try:
        got = await copy.retrieve(COLLECTION, [f"d{i}" for i in range(300)], with_vectors=True)
        assert [got[f"d{i}"].payload for i in range(300)] == [{"v": i} for i in range(300)]
        vectors = got["d7"].vectors
        assert vectors is not None and vectors["lex"] == sparse({7: 1.0})
        await copy.upsert(COLLECTION, [point("later", v=-1)])  # writes fill the holes it kept
        assert (await copy.retrieve(COLLECTION, ["later"]))["later"].payload == {"v": -1}
    finally:
        await copy.close()
