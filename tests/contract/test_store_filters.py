"""The Store contract for filters, scroll and payload indexes: every backend, the same answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from core.filters import AllOf, AnyOf, Condition, Expr, FilterOp, Negation, parse_filter
from core.filters import typed_filter as typed
from store.edge import folder as edge_folder
from store.edge.store import EdgeStore
from store.protocol import (
    ArmQuery,
    CollectionMissing,
    CollectionSchema,
    PointFilter,
    Store,
)
from tests.contract.conftest import COLLECTION, SCHEMA, point

pytestmark = pytest.mark.asyncio

INDEXES = {
    "name": "string",
    "year": "integer",
    "score": "float",
    "active": "boolean",
    "when": "datetime",
}
INDEXED = CollectionSchema(dense=SCHEMA.dense, sparse=SCHEMA.sparse, metadata_indexes=INDEXES)
# Payloads shaped like store/payload.py keeps them: metadata flat under `metadata`, tags a list.
CORPUS: dict[str, dict[str, Any]] = {
    "a": {
        "tags": ["red", "big"],
        "metadata": {
            "name": "alpha",
            "year": 2020,
            "score": 1.5,
            "active": True,
            "when": "2024-01-01T00:00:00+00:00",
        },
    },
    "b": {
        "tags": ["red"],
        "metadata": {
            "name": "beta",
            "year": 2022,
            "score": 2.0,
            "active": False,
            "when": "2024-06-01T00:00:00+02:00",  # 2024-05-31T22:00Z
        },
    },
    "c": {
        "tags": ["blue", "big"],
        "metadata": {
            "name": "gamma",
            "year": 2023,
            "score": 3,  # an int in a float index
            "active": True,
            "when": "2025-01-01T12:00:00Z",
        },
    },
    "d": {"tags": [], "metadata": {"name": None, "year": None, "other": 1}},
    "e": {"tags": None, "metadata": None},
}
ALL = set(CORPUS)


def cond(key: str, op: str, value: Any = None) -> Condition:
    return Condition(key, FilterOp(op), value)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


B_WHEN = utc(2024, 5, 31, 22)
ACTIVE, INACTIVE = cond("active", "eq", True), cond("active", "eq", False)

METADATA_CASES: dict[str, tuple[Expr, set[str]]] = {
    "string_eq": (cond("name", "eq", "beta"), {"b"}),
    "string_neq_keeps_missing": (cond("name", "neq", "beta"), ALL - {"b"}),
    "integer_eq": (cond("year", "eq", 2022), {"b"}),
    "integer_neq": (cond("year", "neq", 2022), ALL - {"b"}),
    "integer_gt": (cond("year", "gt", 2021), {"b", "c"}),
    "integer_gte": (cond("year", "gte", 2022), {"b", "c"}),
    "integer_lt": (cond("year", "lt", 2022), {"a"}),
    "integer_lte": (cond("year", "lte", 2022), {"a", "b"}),
    "float_eq": (cond("score", "eq", 2.0), {"b"}),
    "float_eq_matches_stored_int": (cond("score", "eq", 3.0), {"c"}),
    "float_neq": (cond("score", "neq", 1.5), ALL - {"a"}),
    "float_gt": (cond("score", "gt", 1.5), {"b", "c"}),
    "float_lte": (cond("score", "lte", 2.0), {"a", "b"}),
    "boolean_true": (ACTIVE, {"a", "c"}),
    "boolean_false": (INACTIVE, {"b"}),
    "boolean_neq_true": (cond("active", "neq", True), {"b", "d", "e"}),
    "datetime_eq_across_offsets": (cond("when", "eq", B_WHEN), {"b"}),
    "datetime_neq": (cond("when", "neq", B_WHEN), ALL - {"b"}),
    "datetime_gt": (cond("when", "gt", utc(2024, 5, 31, 21)), {"b", "c"}),
    "datetime_gte": (cond("when", "gte", B_WHEN), {"b", "c"}),
    "datetime_lt": (cond("when", "lt", B_WHEN), {"a"}),
    "datetime_lte": (cond("when", "lte", utc(2024, 6, 1)), {"a", "b"}),
    "is_null_missing_or_null": (cond("year", "is_null", True), {"d", "e"}),
    "is_not_null": (cond("year", "is_null", False), {"a", "b", "c"}),
    "is_null_on_absent_key": (cond("when", "is_null", True), {"d", "e"}),
    "all_of": (AllOf((cond("year", "gt", 2021), ACTIVE)), {"c"}),
    "any_of": (AnyOf((INACTIVE, cond("name", "eq", "alpha"))), {"a", "b"}),
    "negation": (Negation(AnyOf((INACTIVE, cond("name", "eq", "alpha")))), {"c", "d", "e"}),
    "nested": (
        AnyOf((AllOf((ACTIVE, Negation(cond("year", "lt", 2021)))), cond("year", "is_null", True))),
        {"c", "d", "e"},
    ),
    "in_integers": (cond("year", "in", (2020, 2023)), {"a", "c"}),
    "in_strings": (cond("name", "in", ("beta", "gamma", "zeta")), {"b", "c"}),
    "in_mixed_types": (cond("year", "in", ("2020", 2022)), {"b"}),
    "in_booleans": (cond("active", "in", (False,)), {"b"}),
    "in_floats": (cond("score", "in", (1.5, 3.0)), {"a", "c"}),
    "in_datetimes": (cond("when", "in", (B_WHEN, utc(2025, 1, 1, 12))), {"b", "c"}),
    "in_nothing": (cond("year", "in", ()), set()),
    "parsed_and_typed_string_form": (
        typed(parse_filter('year > 2021 AND (active = true OR name != "beta")'), INDEXES),
        {"c"},
    ),
    "parsed_and_typed_datetime_range": (
        typed(parse_filter('when >= "2024-05-31T22:00:00" AND when < "2025-01-01"'), INDEXES),
        {"b"},
    ),
}

OTHER_CASES: dict[str, tuple[PointFilter, set[str]]] = {
    "tags_any": (PointFilter(tags=("big",)), {"a", "c"}),
    "tags_any_of_two": (PointFilter(tags=("red", "blue")), {"a", "b", "c"}),
    "tags_all": (PointFilter(tags=("red", "big"), tags_match_all=True), {"a"}),
    "tags_all_none_has": (PointFilter(tags=("blue", "red"), tags_match_all=True), set()),
    "doc_ids": (PointFilter(doc_ids=("a", "c", "ghost")), {"a", "c"}),
    "doc_ids_empty": (PointFilter(doc_ids=()), set()),
    "every_part_must_hold": (
        PointFilter(metadata=ACTIVE, tags=("big",), doc_ids=("c", "b", "d")),
        {"c"},
    ),
    "nothing_restricted": (PointFilter(), ALL),
}
CASES: dict[str, tuple[PointFilter, set[str]]] = {
    **{name: (PointFilter(metadata=expr), want) for name, (expr, want) in METADATA_CASES.items()},
    **OTHER_CASES,
}


async def make_corpus(store: Store) -> None:
    await store.create_collection(COLLECTION, INDEXED)
    await store.upsert(COLLECTION, [point(d, **payload) for d, payload in CORPUS.items()])


def doc_ids(points: list) -> set[str]:
    return {p.doc_id for p in points}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_filter_selects_exactly_the_matching_documents_in_scroll_and_arms(
    store: Store, case: str
) -> None:
    point_filter, want = CASES[case]
    await make_corpus(store)
    page = await store.scroll(COLLECTION, point_filter, None, 100)
    assert doc_ids(page.points) == want
    assert page.after is None
    arms = [
        ArmQuery("dense", [1.0, 0, 0, 0], 10, point_filter),
        ArmQuery("lex", point_sparse(), 10, point_filter),
        ArmQuery("dense", [1.0, 0, 0, 0], 10),  # an arm without a filter sees everything
    ]
    dense, lex, unfiltered = await store.query_arms(COLLECTION, arms)
    assert {h.doc_id for h in dense} == want
    assert {h.doc_id for h in lex} == want
    assert {h.doc_id for h in unfiltered} == ALL


def point_sparse() -> Any:
    return point("x").vectors["lex"]  # the sparse vector every corpus point holds


async def test_scroll_pages_see_every_point_once_in_a_stable_order(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point(f"d{i}", n=i) for i in range(250)])
    seen: list[str] = []
    after, pages = None, 0
    while True:
        page = await docs.scroll(COLLECTION, None, after, 30)
        seen.extend(p.doc_id for p in page.points)
        pages += 1
        assert len(page.points) == (30 if page.after is not None else 250 - 30 * (pages - 1))
        if page.after is None:
            break
        after = page.after
    assert pages == 9
    assert sorted(seen) == sorted(f"d{i}" for i in range(250))
    assert len(set(seen)) == 250
    again = await docs.scroll(COLLECTION, None, None, 250)
    assert [p.doc_id for p in again.points] == seen  # the same order every time


async def test_scroll_pages_apply_the_filter_and_end_with_no_cursor(docs: Store) -> None:
    await docs.upsert(
        COLLECTION, [point(f"d{i}", tags=["even" if i % 2 == 0 else "odd"]) for i in range(101)]
    )
    seen: list[str] = []
    after = None
    for _ in range(20):
        page = await docs.scroll(COLLECTION, PointFilter(tags=("even",)), after, 10)
        seen.extend(p.doc_id for p in page.points)
        after = page.after
        if after is None:
            break
    assert after is None
    assert sorted(seen) == sorted(f"d{i}" for i in range(0, 101, 2))


async def test_scroll_page_of_exactly_the_remaining_points_is_the_last(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point(f"d{i}") for i in range(20)])
    first = await docs.scroll(COLLECTION, None, None, 10)
    assert first.after is not None
    second = await docs.scroll(COLLECTION, None, first.after, 10)
    assert len(second.points) == 10 and second.after is None
    assert doc_ids(first.points) | doc_ids(second.points) == {f"d{i}" for i in range(20)}


async def test_scroll_returns_payload_and_vectors_on_request(docs: Store) -> None:
    await docs.upsert(COLLECTION, [point("a", [0, 1.0, 0, 0], {3: 0.5}, title="A")])
    bare = (await docs.scroll(COLLECTION, None, None, 10)).points[0]
    assert bare.payload == {"title": "A"} and bare.vectors is None
    full = (await docs.scroll(COLLECTION, None, None, 10, with_vectors=True)).points[0]
    assert full.vectors is not None
    assert full.vectors["dense"] == pytest.approx([0, 1.0, 0, 0], abs=1e-6)
    assert set(full.vectors) == {"dense", "lex", "raw"}


async def test_scroll_of_empty_or_missing_collection(docs: Store) -> None:
    page = await docs.scroll(COLLECTION, None, None, 10)
    assert page.points == [] and page.after is None
    with pytest.raises(CollectionMissing):
        await docs.scroll("nope", None, None, 10)


# --- payload indexes in the embedded store ---


def payload_schema(edge: EdgeStore) -> dict[str, qe.PayloadSchemaType]:
    engine = edge._shard(COLLECTION).engine
    return {k: v.data_type for k, v in engine.info().payload_schema.items()}


EXPECTED_INDEXES = {
    "metadata.name": qe.PayloadSchemaType.Keyword,
    "metadata.year": qe.PayloadSchemaType.Integer,
    "metadata.score": qe.PayloadSchemaType.Float,
    "metadata.active": qe.PayloadSchemaType.Bool,
    "metadata.when": qe.PayloadSchemaType.Datetime,
    "tags": qe.PayloadSchemaType.Keyword,
}


async def test_edge_payload_indexes_survive_reopen_and_empty(store_root: Path) -> None:
    first = await EdgeStore.open(store_root)
    await make_corpus(first)
    assert payload_schema(first) == EXPECTED_INDEXES
    await first.close()
    again = await EdgeStore.open(store_root)
    try:
        assert again._shard(COLLECTION).schema.metadata_indexes == INDEXES
        assert payload_schema(again) == EXPECTED_INDEXES
        page = await again.scroll(COLLECTION, PointFilter(metadata=ACTIVE), None, 10)
        assert doc_ids(page.points) == {"a", "c"}
        await again.empty(COLLECTION)
        assert payload_schema(again) == EXPECTED_INDEXES
    finally:
        await again.close()


async def test_edge_schema_written_before_metadata_indexes_loads_and_gains_tag_index(
    store_root: Path,
) -> None:
    first = await EdgeStore.open(store_root)
    await first.create_collection(COLLECTION, SCHEMA)
    await first.upsert(COLLECTION, [point("a", tags=["x"])])
    await first.close()
    # as the schema file and shard were before this change: no metadata_indexes, no indexes
    schema_file = store_root / COLLECTION / edge_folder.SCHEMA_FILE
    raw = json.loads(schema_file.read_text())
    del raw["metadata_indexes"]
    schema_file.write_text(json.dumps(raw))
    engine = qe.EdgeShard.load(str(store_root / COLLECTION))
    engine.update(qe.UpdateOperation.delete_field_index("tags"))
    engine.flush()
    engine.close()
    again = await EdgeStore.open(store_root)
    try:
        assert again._shard(COLLECTION).schema.metadata_indexes == {}
        assert payload_schema(again) == {"tags": qe.PayloadSchemaType.Keyword}
        page = await again.scroll(COLLECTION, PointFilter(tags=("x",)), None, 10)
        assert doc_ids(page.points) == {"a"}
    finally:
        await again.close()
