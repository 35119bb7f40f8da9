"""Fusion of per-arm hit lists into one ranking: weighted RRF (k=2) or min-max linear.

Fusion ranks retrievers, not arms. A vector searched over several fields (every vector when the
request has no `vector_options`, or an option that names no field) is one retriever whose score
is the field-weighted sum of its arms' raw scores, so a short title arm cannot outvote the
content arm of the same vector (docs/relevance.md); an option that names a field is an arm alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.enums import FusionMode
from worker.store.protocol import ArmHit

RRF_K = 2


@dataclass(frozen=True)
class Retriever:
    """One ranked list for fusion: the arms it sums (by index) with their field weights."""

    arms: tuple[int, ...]
    weight: float
    field_weights: tuple[float, ...] = (1.0,)


@dataclass(slots=True)
class Fused:
    doc_id: str
    score: float = 0.0
    raw_sum: float = 0.0
    arm_scores: dict[int, tuple[float, int]] = field(default_factory=dict)  # arm -> (raw, rank)


def fuse(
    hits: list[list[ArmHit]],
    retrievers: list[Retriever],
    mode: FusionMode,
    pool: int | None = None,
) -> list[Fused]:
    """Best first; ties by the larger sum of raw arm scores, then by id.

    `pool`: the hits are each arm's scores over a pool of that many documents (Braid's default
    fusion), so a pool document missing from a retriever's list scored 0 there, and linear
    fusion's min-max reaches down to 0 (Amgix's linear spans only the list's own scores)."""
    fused: dict[str, Fused] = {}
    for arm, arm_hits in enumerate(hits):
        for rank, hit in enumerate(arm_hits, start=1):
            entry = fused.get(hit.doc_id)
            if entry is None:  # not setdefault: that builds a record for every hit
                entry = fused[hit.doc_id] = Fused(hit.doc_id)
            entry.arm_scores[arm] = (hit.score, rank)
            entry.raw_sum += hit.score
    for retriever in retrievers:
        ranking = _ranking(hits, retriever)
        floor = 0.0 if pool is not None and len(ranking) < pool else None
        normalise = _min_max(ranking, floor) if mode is FusionMode.LINEAR else None
        for rank, (doc_id, score) in enumerate(ranking, start=1):
            entry = fused[doc_id]
            if normalise is None:
                entry.score += retriever.weight / (RRF_K + rank)
            else:
                entry.score += retriever.weight * normalise(score)
    return sorted(fused.values(), key=lambda f: (-f.score, -f.raw_sum, f.doc_id))


def _ranking(hits: list[list[ArmHit]], retriever: Retriever) -> list[tuple[str, float]]:
    """The retriever's (doc, score) best first: one arm's hits as the store ranked them, or the
    field-weighted sum over its arms (a document missing from an arm's list adds 0 there)."""
    if len(retriever.arms) == 1:  # a field weight alone changes no rank and no min-max
        return [(h.doc_id, h.score) for h in hits[retriever.arms[0]]]
    summed: dict[str, float] = {}
    for arm, weight in zip(retriever.arms, retriever.field_weights, strict=True):
        for hit in hits[arm]:
            summed[hit.doc_id] = summed.get(hit.doc_id, 0.0) + weight * hit.score
    return sorted(summed.items(), key=lambda item: (-item[1], item[0]))


def _min_max(ranking: list[tuple[str, float]], floor: float | None) -> Callable[[float], float]:
    if not ranking:
        return lambda score: 0.0
    low = min(score for _, score in ranking)
    if floor is not None:
        low = min(low, floor)
    high = max(score for _, score in ranking)
    if high == low:
        return lambda score: 1.0
    return lambda score: (score - low) / (high - low)
