"""Conversions between Braid's store types and the embedded engine's (qdrant-edge)."""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
import qdrant_edge as qe

from core.vectors import SparseVector
from worker.store.conditions import build_filter
from worker.store.ids import DOC_ID_KEY, point_id, split_payload, stored_payload
from worker.store.protocol import (
    ArmHit,
    ArmQuery,
    PointFilter,
    PointWrite,
    StoredPoint,
    VectorValue,
)


def to_point(point: PointWrite) -> qe.Point:
    vectors = {slot: to_edge_vector(v) for slot, v in point.vectors.items()}
    return qe.Point(point_id(point.doc_id), vectors, stored_payload(point.doc_id, point.payload))


def to_edge_vector(value: VectorValue) -> Any:
    if isinstance(value, SparseVector):
        return qe.SparseVector(value.indices, value.values)
    return value


def from_edge_vector(value: Any) -> VectorValue:
    if isinstance(value, qe.SparseVector):
        return SparseVector(indices=list(value.indices), values=list(value.values))
    return list(value)


def to_stored(record: qe.Record, with_vectors: bool) -> StoredPoint:
    doc_id, payload = split_payload(record.payload)
    if not with_vectors:
        return StoredPoint(doc_id, payload)
    raw = record.vector if isinstance(record.vector, dict) else {}
    return StoredPoint(doc_id, payload, {k: from_edge_vector(v) for k, v in raw.items()})


class Idf(enum.Enum):
    """How a sparse arm's IDF is counted (worker/store/edge.py chooses per shard)."""

    NONE = "none"  # the slot has no IDF modifier
    LIVE = "live"  # over the live points that have this vector: exact, costs a pass over postings
    INDEX = "index"  # the engine's index statistics: free, and count deleted versions until vacuum


def to_request(arm: ArmQuery, idf: Idf) -> qe.QueryRequest:
    query = qe.Query.Nearest(to_edge_vector(arm.vector), using=arm.slot)
    params = None
    if idf is Idf.LIVE:
        # The engine then counts, per query term, the postings whose point has this vector:
        # 4.4 of 5.6 CPU-ms of a two-arm keyword search at 80,000 documents (docs/benchmarks.md).
        live = qe.Filter(must=[qe.HasVectorCondition(arm.slot)])
        params = qe.SearchParams(idf=qe.IdfParams(corpus=live))
    return qe.QueryRequest(
        limit=arm.limit,
        query=query,
        filter=to_filter(arm.filter),
        with_payload=[DOC_ID_KEY],
        params=params,
    )


def to_hit(point: qe.ScoredPoint) -> ArmHit:
    return ArmHit(doc_id=str((point.payload or {})[DOC_ID_KEY]), score=point.score)


class _EdgeParts:
    """The engine's filter classes, for worker.store.conditions.build_filter."""

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

    def has_id(self, ids: list[str]) -> Any:
        return qe.HasIdCondition(set(ids))


_PARTS = _EdgeParts()


def to_filter(point_filter: PointFilter | None) -> qe.Filter | None:
    filter_: qe.Filter | None = build_filter(point_filter, _PARTS)
    return filter_
