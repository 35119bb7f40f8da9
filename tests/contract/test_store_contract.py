"""The Store contract: one suite that every backend passes (DESIGN invariant 7)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

import pytest

from core.vectors import SparseVector
from store.ids import DOC_ID_KEY
from store.protocol import (
    ArmQuery,
    CollectionExists,
    CollectionMissing,
    PointWrite,
    Store,
    StoreError,
    summed_ranking,
)
from tests.contract.conftest import COLLECTION, SCHEMA, ids, point, sparse

pytestmark = pytest.mark.asyncio


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
    "overwrite_payloads": lambda s: s.overwrite_payloads("nope", {"a": {"x": 1}}),
    "overwrite_none": lambda s: s.overwrite_payloads("nope", {}),
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


async def test_an_empty_sparse_vector_is_stored_and_comes_back_empty(docs: Store) -> None:
    empty = SparseVector(indices=[], values=[])  # a document's precomputed vector, as given
    vectors = {**point("e").vectors, "lex": empty}
    await docs.upsert(COLLECTION, [PointWrite("e", {}, vectors), point("f", sparse={1: 1.0})])
    got = (await docs.retrieve(COLLECTION, ["e"], with_vectors=True))["e"]
    assert got.vectors is not None and got.vectors["lex"] == empty
    hits = await docs.query_arms(COLLECTION, [ArmQuery("lex", sparse({1: 1.0}), 10)])
    assert ids(hits[0]) == ["f"]


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


async def test_overwrite_payloads_changes_payloads_but_not_vectors(docs: Store) -> None:
    await docs.upsert(
        COLLECTION,
        [
            point("a", [0, 0, 1.0, 0], {5: 0.5}, v=1, gone="yes"),
            point("b", [0, 1.0, 0, 0], v=1),
            point("c", v=1),
        ],
    )
    await docs.overwrite_payloads(COLLECTION, {"a": {"v": 2}, "b": {"v": 3, "new": True}})
    got = await docs.retrieve(COLLECTION, ["a", "b", "c"], with_vectors=True)
    assert {d: p.payload for d, p in got.items()} == {
        "a": {"v": 2},
        "b": {"v": 3, "new": True},
        "c": {"v": 1},  # not asked for: untouched
    }
    assert got["a"].vectors is not None
    assert got["a"].vectors["dense"] == pytest.approx([0, 0, 1.0, 0], abs=1e-6)
    assert got["a"].vectors["lex"] == sparse({5: 0.5})
    hits = await docs.query_arms(COLLECTION, [ArmQuery("dense", [0, 0, 1.0, 0], 1)])
    assert ids(hits[0]) == ["a"]  # still found by id after the payload swap


async def test_overwrite_payloads_of_absent_doc_raises_and_creates_nothing(docs: Store) -> None:
    with pytest.raises(StoreError) as caught:
        await docs.overwrite_payloads(COLLECTION, {"ghost": {"v": 1}})
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


async def test_summed_query_ranks_the_weighted_sum_of_the_arms_with_the_best_payloads(
    docs: Store,
) -> None:
    # "both" is in both arms' windows; "dense" only in the dense arm's, "lex" only in the lexical
    # arm's, so each of those adds 0 for the arm that missed it.
    await docs.upsert(
        COLLECTION,
        [
            point("both", [1.0, 0, 0, 0], {1: 1.0}, title="both"),
            point("dense", [1.0, 0.2, 0, 0], {2: 1.0}, title="dense"),
            point("lex", [0, 0, 0, 1.0], {1: 2.0}, title="lex"),
            point("neither", [0, 0, 1.0, 0], {3: 1.0}, title="neither"),
        ],
    )
    arms = [ArmQuery("dense", [1.0, 0, 0, 0], 2), ArmQuery("raw", sparse({1: 1.0}), 2)]
    weights = (1.0, 0.25)
    hits = await docs.query_arms(COLLECTION, arms)
    expected = summed_ranking(hits, weights)
    assert [doc for doc, _ in expected] == ["both", "dense", "lex"]
    ranking = await docs.query_summed(COLLECTION, arms, weights, 2)
    assert ranking.scores == pytest.approx([score for _, score in expected], rel=1e-5)
    assert [p.doc_id if p else None for p in ranking.best] == ["both", "dense"]
    assert [p.payload["title"] if p else None for p in ranking.best] == ["both", "dense"]


async def test_summed_query_of_one_arm_is_its_hits(docs: Store) -> None:
    await idf_corpus(docs)
    arm = [ArmQuery("lex", sparse({1: 1.0, 2: 1.0}), 3)]
    [hits] = await docs.query_arms(COLLECTION, arm)
    ranking = await docs.query_summed(COLLECTION, arm, (0.4,), 1)  # one arm: no weighting
    assert ranking.scores == pytest.approx([h.score for h in hits], rel=1e-5)
    assert [p.doc_id if p else None for p in ranking.best] == ids(hits)[:1]


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
