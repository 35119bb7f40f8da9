"""Conversions between Braid's store types and the embedded engine's (qdrant-edge)."""

from __future__ import annotations

import enum
from typing import Any
from uuid import UUID

import numpy as np
import orjson
import qdrant_edge as qe

from core.vectors import SparseVector
from store.conditions import METADATA, TAGS, build_filter
from store.ids import DOC_ID_KEY, DocIds, stored_payload, stored_point
from store.protocol import (
    ArmHit,
    ArmQuery,
    CollectionSchema,
    PointFilter,
    PointWrite,
    StoredPoint,
    VectorValue,
)

# This process's point ids and document ids, both ways: queries read no payloads (`to_hits`).
_IDS = DocIds()

# The payload keys the engine itself reads: filters, facets and payload indexes (tags and
# metadata, `store.conditions`) and the document id of a point met by a query (`learn`). Every
# other field goes in as one JSON string under PACKED: the binding spends ~5 µs on each string
# it converts, so a seed document's payload cost 98 µs to build as it stood and 27 µs packed, in
# each of the three copies a write makes (the worker's and one a search node); the engine's own
# update and flush are ~60 µs (docs/benchmarks.md, issue 32).
ENGINE_KEYS = frozenset({TAGS, METADATA, DOC_ID_KEY})
PACKED = "_packed"


def point_id(doc_id: str) -> Any:
    """The engine's point id of a document (ids.point_id's, remembered)."""
    return _IDS.point(doc_id)


def to_point(point: PointWrite) -> qe.Point:
    return stored_to_point(stored_form(point))


def stored_form(point: PointWrite) -> PointWrite:
    """The point with its payload as the engine keeps it (`to_payload`): what the worker writes
    and what its replicas apply (store/replication/wire.py), worked out once for all of them."""
    return PointWrite(point.doc_id, to_payload(point.doc_id, point.payload), point.vectors)


def stored_to_point(point: PointWrite) -> qe.Point:
    """The engine's point of a `stored_form` point."""
    vectors = {slot: to_edge_vector(v) for slot, v in point.vectors.items()}
    return edge_point(point.doc_id, vectors, point.payload)


def edge_point(doc_id: str, vectors: dict[str, Any], payload: dict[str, Any]) -> qe.Point:
    """A point of the engine's own vectors and a payload as the engine keeps it."""
    return qe.Point(_IDS.point(doc_id), vectors, payload)


def to_payload(doc_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as the engine keeps it: the keys it reads, the rest packed (see PACKED)."""
    stored = stored_payload(doc_id, payload)
    engine = {key: value for key, value in stored.items() if key in ENGINE_KEYS}
    packed = {key: value for key, value in stored.items() if key not in ENGINE_KEYS}
    engine[PACKED] = orjson.dumps(packed).decode()
    return engine


def from_payload(payload: dict[str, Any] | None) -> dict[str, Any] | None:
    """A payload as `to_payload` kept it, whole again; one stored before packing as it is."""
    if not payload or PACKED not in payload:
        return payload
    whole: dict[str, Any] = orjson.loads(payload[PACKED])
    whole.update((key, value) for key, value in payload.items() if key != PACKED)
    return whole


def to_edge_vector(value: VectorValue) -> Any:
    if isinstance(value, SparseVector):
        return qe.SparseVector(value.indices, value.values)
    return value


def from_edge_vector(value: Any) -> VectorValue:
    if isinstance(value, qe.SparseVector):
        return SparseVector(indices=list(value.indices), values=list(value.values))
    return list(value)


def to_stored(record: qe.Record, with_vectors: bool) -> StoredPoint:
    return stored_point(from_payload(record.payload), record.vector, with_vectors, from_edge_vector)


class Idf(enum.Enum):
    """How a sparse arm's IDF is counted (`to_batch` chooses per shard)."""

    NONE = "none"  # the slot has no IDF modifier
    LIVE = "live"  # over the live points that have this vector: exact, costs a pass over postings
    INDEX = "index"  # the engine's index statistics: free, and count deleted versions until vacuum


# From this many live points a shard's sparse arms take IDF from the engine's index statistics
# instead of counting the live points per query term (4.4 of 5.6 CPU-ms of a keyword search at
# 80,000 documents). The statistics also count versions deleted or overwritten since the last
# optimize, which vacuums them: from here on an optimize is due after at most 20 % changes
# (5,000 ÷ 0.2; store/edge/shard.py), so at most about a fifth of what IDF counts is gone, as
# Lucene's document frequencies count deleted documents until a merge. Smaller shards stay
# exact, and cheap: the count costs in proportion to the postings.
INDEX_IDF_FROM = 25_000


def to_batch(arms: list[ArmQuery], schema: CollectionSchema, large: bool) -> qe.QueryBatchRequest:
    """One engine batch for a search's arms; a sparse arm with IDF counts it from the index
    statistics when the shard is large (INDEX_IDF_FROM points or more), else over live points."""
    modes = _idf_modes(arms, schema, large)
    return qe.QueryBatchRequest(
        [to_request(arm, idf) for arm, idf in zip(arms, modes, strict=True)]
    )


def to_summed(
    arms: list[ArmQuery], weights: tuple[float, ...], schema: CollectionSchema, large: bool
) -> qe.QueryRequest:
    """One engine query ranking the arms' candidates by the weighted sum of their scores, 0 for an
    arm whose window missed the candidate (protocol.summed_ranking): each arm is a prefetch and a
    formula sums them. It returns every candidate, so the lowest sum is known (min-max)."""
    modes = _idf_modes(arms, schema, large)
    if len(arms) == 1:
        return to_request(arms[0], modes[0])
    prefetches = [
        qe.Prefetch(
            limit=arm.limit,
            query=_nearest(arm),
            params=_params(arm, idf),
            filter=to_filter(arm.filter),
        )
        for arm, idf in zip(arms, modes, strict=True)
    ]
    scores = [f"$score[{index}]" for index in range(len(arms))]
    terms = [
        qe.Expression.Mult([qe.Expression.Constant(weight), qe.Expression.Variable(score)])
        for weight, score in zip(weights, scores, strict=True)
    ]
    formula = qe.Formula(qe.Expression.Sum(terms), dict.fromkeys(scores, 0.0))
    return qe.QueryRequest(
        limit=sum(arm.limit for arm in arms),
        prefetches=prefetches,
        query=formula,
        with_payload=False,
    )


def _idf_modes(arms: list[ArmQuery], schema: CollectionSchema, large: bool) -> list[Idf]:
    mode = Idf.INDEX if large else Idf.LIVE
    idf_slots = {slot.name for slot in schema.sparse if slot.idf}
    return [mode if arm.slot in idf_slots else Idf.NONE for arm in arms]


def to_request(arm: ArmQuery, idf: Idf) -> qe.QueryRequest:
    return qe.QueryRequest(
        limit=arm.limit,
        query=_nearest(arm),
        filter=to_filter(arm.filter),
        with_payload=False,  # the hits' document ids come from DocIds (`to_hits`)
        params=_params(arm, idf),
    )


def _nearest(arm: ArmQuery) -> qe.Query:
    return qe.Query.Nearest(to_edge_vector(arm.vector), using=arm.slot)


def _params(arm: ArmQuery, idf: Idf) -> qe.SearchParams | None:
    if idf is not Idf.LIVE:
        return None
    # The engine then counts, per query term, the postings whose point has this vector.
    live = qe.Filter(must=[qe.HasVectorCondition(arm.slot)])
    return qe.SearchParams(idf=qe.IdfParams(corpus=live))


def to_hits(results: list[list[qe.ScoredPoint]]) -> tuple[list[list[ArmHit]], list[Any]]:
    """Each arm's hits, and the point ids of those left out because this process has not met
    their document id: read those with their DOC_ID_KEY payload, `learn` them, and convert again
    (a point deleted meanwhile stays out)."""
    doc_of = _IDS.doc_of
    arms: list[list[ArmHit]] = []
    unknown: dict[Any, None] = {}  # a point found by several arms is listed once
    for points in results:
        hits = []
        for point in points:
            key = point.id  # a UUID, as Braid writes every point; a new one at every read
            doc_id = doc_of(key.int) if isinstance(key, UUID) else None
            if doc_id is None:
                unknown[key] = None
            else:
                hits.append(ArmHit(doc_id, point.score))
        arms.append(hits)
    return arms, list(unknown)


def learn(records: list[qe.Record]) -> None:
    for record in records:
        _IDS.learn(record.id, str((record.payload or {})[DOC_ID_KEY]))


class _EdgeParts:
    """The engine's filter classes, for store.conditions.build_filter."""

    def combine(self, must: list[Any], should: list[Any], must_not: list[Any]) -> Any:
        return qe.Filter(must=must or None, should=should or None, must_not=must_not or None)

    def match(self, key: str, value: str | int | bool) -> Any:
        # The binding reads a Python bool as the integer 1 or 0, which matches no stored boolean;
        # numpy's bool is the one type it takes as a boolean (qdrant-edge-py 0.9.0).
        typed: Any = np.bool_(value) if isinstance(value, bool) else value
        return qe.FieldCondition(key, match=qe.MatchValue(typed))

    def match_any(self, key: str, values: list[str] | list[int]) -> Any:
        return qe.FieldCondition(key, match=qe.MatchAny(values))

    def number_range(self, key: str, bounds: dict[str, float]) -> Any:
        return qe.FieldCondition(key, range=qe.RangeFloat(**bounds))

    def datetime_range(self, key: str, bounds: dict[str, str]) -> Any:
        return qe.FieldCondition(key, range=qe.RangeDateTime(**bounds))

    def is_empty(self, key: str) -> Any:
        return qe.IsEmptyCondition(key)

    def has_documents(self, doc_ids: list[str]) -> Any:
        return qe.HasIdCondition({_IDS.point(d) for d in doc_ids})


_PARTS = _EdgeParts()


def to_filter(point_filter: PointFilter | None) -> qe.Filter | None:
    filter_: qe.Filter | None = build_filter(point_filter, _PARTS)
    return filter_
