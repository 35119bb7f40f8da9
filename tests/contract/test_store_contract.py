"""The Store contract: one suite that every backend passes (DESIGN invariant 7)."""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from core.vectors import SparseVector
from tests.contract.conftest import COLLECTION, SCHEMA, point
from worker.store import edge_convert
from worker.store.edge import EdgeStore
from worker.store.ids import DOC_ID_KEY, DocIds
from worker.store.protocol import (
    ArmQuery,
    CollectionExists,
    CollectionMissing,
    Store,
    StoreError,
    StoreLocked,
)

pytestmark = pytest.mark.asyncio


def sparse(terms: dict[int, float]) -> SparseVector:
    return SparseVector(indices=list(terms), values=list(terms.values()))


def ids(hits: list) -> list[str]:
    return [h.doc_id for h in hits]


# --- collections ---


async def test_create_then_exists_and_listed(store: Store) -> None:
    assert await store.collection_exists(COLLECTION) is False
    await store.create_collection(COLLECTION, SCHEMA)
    await store.create_collection("other", SCHEMA)
    assert await store.collection_exists(COLLECTION) is True
    assert sorted(await store.list_collections()) == [COLLECTION, "other"]


async def test_create_twice_raises_collection_exists(docs: Store) -> None:
    with pytest.raises(CollectionExists):
        await docs.create_collection(COLLECTION, SCHEMA)


async def test_delete_collection_removes_it_and_its_points(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a")])
    await docs.delete_collection(COLLECTION)
    assert await docs.collection_exists(COLLECTION) is False
    assert await docs.list_collections() == []
    await docs.create_collection(COLLECTION, SCHEMA)
    assert await docs.count(COLLECTION) == 0


async def test_delete_of_absent_collection_is_fine(store: Store) -> None:
    await store.delete_collection("never-made")
    assert await store.list_collections() == []


MISSING_OPS: dict[str, Callable[[Store], Awaitable[object]]] = {
    "upsert": lambda s: s.upsert("nope", [point("a")]),
    "overwrite_payload": lambda s: s.overwrite_payload("nope", "a", {"x": 1}),
    "delete": lambda s: s.delete("nope", ["a"]),
    "delete_none": lambda s: s.delete("nope", []),
    "upsert_none": lambda s: s.upsert("nope", []),
    "retrieve": lambda s: s.retrieve("nope", ["a"]),
    "count": lambda s: s.count("nope"),
    "query_arms": lambda s: s.query_arms("nope", [ArmQuery("dense", [1.0, 0, 0, 0], 3)]),
    "query_no_arms": lambda s: s.query_arms("nope", []),
    "empty": lambda s: s.empty("nope"),
}


@pytest.mark.parametrize("op", sorted(MISSING_OPS))
async def test_operations_on_missing_collection_raise_collection_missing(
    docs: Store, op: str
) -> None:
    with pytest.raises(CollectionMissing):
        await MISSING_OPS[op](docs)


# --- points ---


async def test_upsert_then_retrieve_returns_payload_without_private_keys(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a", title="A", tags=["x", "y"]), point("b", n=2)])
    got = await docs.retrieve(COLLECTION, ["a", "b"])
    assert got["a"].payload == {"title": "A", "tags": ["x", "y"]}
    assert got["b"].payload == {"n": 2}
    assert DOC_ID_KEY not in got["a"].payload
    assert got["a"].doc_id == "a"
    assert got["a"].vectors is None


async def test_retrieve_with_vectors_returns_dense_and_sparse(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a", [0.5, 0.5, 0.5, 0.5], {7: 0.25, 3: 2.0})])
    got = (await docs.retrieve(COLLECTION, ["a"], with_vectors=True))["a"]
    assert got.vectors is not None
    # cosine stores the vector normalised; this one already has unit length
    assert got.vectors["dense"] == pytest.approx([0.5, 0.5, 0.5, 0.5], abs=1e-6)
    for slot in ("lex", "raw"):
        vector = got.vectors[slot]
        assert isinstance(vector, SparseVector)
        assert dict(zip(vector.indices, vector.values, strict=True)) == {7: 0.25, 3: 2.0}


async def test_retrieve_leaves_out_absent_ids(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a")])
    assert list(await docs.retrieve(COLLECTION, ["a", "ghost"])) == ["a"]
    assert await docs.retrieve(COLLECTION, []) == {}


async def test_any_document_id_round_trips(docs: Store) -> None:
    odd = ["α/β", "with space", "../../etc", "x" * 300, "42"]
    await docs.upsert(COLLECTION, [point(d, n=i) for i, d in enumerate(odd)])
    got = await docs.retrieve(COLLECTION, odd)
    assert {d: p.payload["n"] for d, p in got.items()} == {d: i for i, d in enumerate(odd)}
    hits = await docs.query_arms(COLLECTION, [ArmQuery("dense", [1.0, 0, 0, 0], 10)])
    assert sorted(ids(hits[0])) == sorted(odd)


async def test_upsert_of_same_doc_id_replaces_it(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a", [1.0, 0, 0, 0], {1: 1.0}, v=1, old=True)])
    await docs.upsert(COLLECTION, [point("a", [0, 1.0, 0, 0], {2: 1.0}, v=2)])
    assert await docs.count(COLLECTION) == 1
    got = (await docs.retrieve(COLLECTION, ["a"], with_vectors=True))["a"]
    assert got.payload == {"v": 2}
    assert got.vectors is not None
    assert got.vectors["dense"] == pytest.approx([0, 1.0, 0, 0], abs=1e-6)
    assert got.vectors["lex"] == sparse({2: 1.0})


async def test_overwrite_payload_changes_payload_but_not_vectors(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a", [0, 0, 1.0, 0], {5: 0.5}, v=1, gone="yes")])
    await docs.overwrite_payload(COLLECTION, "a", {"v": 2})
    got = (await docs.retrieve(COLLECTION, ["a"], with_vectors=True))["a"]
    assert got.payload == {"v": 2}
    assert got.vectors is not None
    assert got.vectors["dense"] == pytest.approx([0, 0, 1.0, 0], abs=1e-6)
    assert got.vectors["lex"] == sparse({5: 0.5})
    hits = await docs.query_arms(COLLECTION, [ArmQuery("dense", [0, 0, 1.0, 0], 1)])
    assert ids(hits[0]) == ["a"]  # still found by id after the payload swap


async def test_overwrite_payload_of_absent_doc_raises_and_creates_nothing(docs: Store) -> None:
    with pytest.raises(StoreError) as caught:
        await docs.overwrite_payload(COLLECTION, "ghost", {"v": 1})
    assert not isinstance(caught.value, CollectionMissing)
    assert await docs.count(COLLECTION) == 0


async def test_delete_removes_points_and_ignores_absent_ids(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point(d) for d in "abc"])
    await docs.delete(COLLECTION, ["a", "ghost", "c"])
    assert list(await docs.retrieve(COLLECTION, ["a", "b", "c"])) == ["b"]
    await docs.delete(COLLECTION, [])
    await docs.upsert(COLLECTION, [])
    assert await docs.count(COLLECTION) == 1


async def test_count_follows_upserts_and_deletes(docs: Store) -> None:
    assert await docs.count(COLLECTION) == 0
    await docs.upsert(COLLECTION, [point(f"d{i}") for i in range(7)])
    assert await docs.count(COLLECTION) == 7
    await docs.delete(COLLECTION, ["d0", "d1"])
    assert await docs.count(COLLECTION) == 5


async def test_upsert_with_wrong_dimensions_raises_store_error(docs: Store) -> None:
    with pytest.raises(StoreError):
        await docs.upsert(COLLECTION, [point("a", [1.0, 0.0])])
    assert await docs.count(COLLECTION) == 0


# --- queries ---


async def test_dense_arm_ranks_nearest_first(docs: Store) -> None:
    vectors = {"far": [-1.0, 0, 0, 0], "side": [0, 1.0, 0, 0], "near": [1.0, 0, 0, 0]}
    vectors["close"] = [1.0, 1.0, 0, 0]
    await docs.upsert(COLLECTION, [point(d, v) for d, v in vectors.items()])
    [hits] = await docs.query_arms(COLLECTION, [ArmQuery("dense", [2.0, 0, 0, 0], 3)])
    assert ids(hits) == ["near", "close", "side"]
    assert [h.score for h in hits] == pytest.approx([1.0, math.sqrt(0.5), 0.0], abs=1e-5)


async def idf_corpus(store: Store) -> None:
    """'rare' holds a term no other document has; 'common' holds, with a higher weight, a term
    that 9 of the 10 documents hold. Only IDF can put 'rare' first."""
    fillers = [point(f"f{i}", sparse={2: 0.1, 100 + i: 1.0}) for i in range(8)]
    rare, common = point("rare", sparse={1: 1.0}), point("common", sparse={2: 1.5})
    await store.upsert(COLLECTION, [rare, common, *fillers])


async def test_sparse_arm_with_idf_rare_term_outweighs_common_term(docs: Store) -> None:
    await idf_corpus(docs)
    query = sparse({1: 1.0, 2: 1.0})
    with_idf, without = await docs.query_arms(
        COLLECTION, [ArmQuery("lex", query, 2), ArmQuery("raw", query, 2)]
    )
    assert ids(with_idf) == ["rare", "common"]
    assert ids(without) == ["common", "rare"]  # the control: same vectors, no IDF
    # Qdrant's idf = ln(1 + (N - n + 0.5) / (n + 0.5)), with N = 10 documents
    idf_rare, idf_common = math.log(1 + 9.5 / 1.5), math.log(1 + 1.5 / 9.5)
    assert [h.score for h in with_idf] == pytest.approx([idf_rare, 1.5 * idf_common], rel=1e-3)


async def test_idf_follows_the_collection_statistics(docs: Store) -> None:
    await idf_corpus(docs)
    await docs.delete(COLLECTION, [f"f{i}" for i in range(8)])  # term 2 is rare now, too
    [hits] = await docs.query_arms(COLLECTION, [ArmQuery("lex", sparse({1: 1.0, 2: 1.0}), 2)])
    assert ids(hits) == ["common", "rare"]
    idf_one = math.log(1 + 1.5 / 1.5)  # N = 2, each term in one document
    assert [h.score for h in hits] == pytest.approx([1.5 * idf_one, idf_one], rel=1e-3)


async def test_several_arms_return_one_hit_list_per_arm_in_order(docs: Store) -> None:
    await idf_corpus(docs)
    await docs.upsert(COLLECTION, [point("east", [0, 0, 0, 1.0], {1: 0.1})])
    arms = [
        ArmQuery("dense", [0, 0, 0, 1.0], 2),
        ArmQuery("lex", sparse({1: 1.0}), 1),
        ArmQuery("raw", sparse({2: 1.0}), 3),
    ]
    dense, lex, raw = await docs.query_arms(COLLECTION, arms)
    assert len(dense) == 2 and dense[0].doc_id == "east"
    assert ids(lex) == ["rare"]
    assert ids(raw)[0] == "common" and len(raw) == 3
    assert await docs.query_arms(COLLECTION, []) == []


async def test_queries_run_while_writes_are_in_flight(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("anchor", [0, 0, 1.0, 0])])
    writes = [docs.upsert(COLLECTION, [point(f"w{b}-{i}") for i in range(50)]) for b in range(8)]
    query = [ArmQuery("dense", [0, 0, 1.0, 0], 1)]
    queries = [docs.query_arms(COLLECTION, query) for _ in range(8)]
    _, answers = await asyncio.gather(asyncio.gather(*writes), asyncio.gather(*queries))
    assert [ids(a[0]) for a in answers] == [["anchor"]] * 8
    assert await docs.count(COLLECTION) == 401


async def test_empty_removes_points_and_keeps_schema(docs: Store) -> None:
    await idf_corpus(docs)
    await docs.empty(COLLECTION)
    assert await docs.count(COLLECTION) == 0
    assert await docs.collection_exists(COLLECTION) is True
    await docs.upsert(COLLECTION, [point("new", [0, 1.0, 0, 0], {9: 1.0})])
    dense, lex = await docs.query_arms(
        COLLECTION, [ArmQuery("dense", [0, 1.0, 0, 0], 5), ArmQuery("lex", sparse({9: 1.0}), 5)]
    )
    assert ids(dense) == ["new"] and ids(lex) == ["new"]
    with pytest.raises(StoreError):
        await docs.upsert(COLLECTION, [point("bad", [1.0, 0.0, 0.0])])


# --- the embedded store only ---


async def test_edge_data_survives_close_and_reopen(store_root: Path) -> None:
    first = await EdgeStore.open(store_root)
    await first.create_collection(COLLECTION, SCHEMA)
    await first.upsert(COLLECTION, [point("a", [0, 1.0, 0, 0], {4: 0.5}, v=1), point("b")])
    await first.overwrite_payload(COLLECTION, "a", {"v": 2})
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
        assert len(edge_convert._IDS.docs) == 2
    finally:
        await again.close()


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
        with caplog.at_level(logging.INFO, logger="worker.store.edge"):
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
        with caplog.at_level(logging.INFO, logger="worker.store.edge"):
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
        with caplog.at_level(logging.INFO, logger="worker.store.edge"):
            await edge.maintain(COLLECTION)  # returns at once; the child optimizes a copy
            while edge._shards[COLLECTION].journal is None:  # the copy is taken: now journal
                await asyncio.sleep(0.001)
            late = random_points(1600, seed=4)[1500:]
            await edge.upsert(COLLECTION, late)
            await edge.delete(COLLECTION, ["d0", "d1"])
            await edge.maintenance_done()
        assert "optimized docs in" in caplog.text
        assert await edge.count(COLLECTION) == 1598
        found = await edge.retrieve(COLLECTION, [p.doc_id for p in late] + ["d0"])
        assert set(found) == {p.doc_id for p in late}
    finally:
        await edge.close()
    reopened = await EdgeStore.open(store_root)
    try:
        assert await reopened.count(COLLECTION) == 1598
        assert not [p for p in store_root.iterdir() if p.name.startswith(".optimizing-")]
    finally:
        await reopened.close()
