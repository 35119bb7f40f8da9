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
from store.protocol import ArmHit, summed_ranking

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
        scores = [score for _, score in ranking]
        fused_scores = retriever_scores(scores, retriever.weight, mode, len(scores), floor)
        for (doc_id, _), score in zip(ranking, fused_scores, strict=True):
            fused[doc_id].score += score
    return sorted(fused.values(), key=lambda f: (-f.score, -f.raw_sum, f.doc_id))


def retriever_scores(
    scores: list[float], weight: float, mode: FusionMode, top: int, floor: float | None = None
) -> list[float]:
    """What one retriever adds to the fused score of each of its first `top` candidates, from
    every candidate's score, best first: weight ÷ (RRF_K + rank), or its min-max normalised
    score (down to `floor` when given) times the weight."""
    if mode is not FusionMode.LINEAR:
        return [weight / (RRF_K + rank) for rank in range(1, min(top, len(scores)) + 1)]
    normalise = _min_max(scores, floor)
    return [weight * normalise(score) for score in scores[:top]]


def _ranking(hits: list[list[ArmHit]], retriever: Retriever) -> list[tuple[str, float]]:
    """The retriever's (doc, score) best first: one arm's hits as the store ranked them, or the
    field-weighted sum over its arms."""
    return summed_ranking([hits[arm] for arm in retriever.arms], retriever.field_weights)


def _min_max(scores: list[float], floor: float | None) -> Callable[[float], float]:
    if not scores:
        return lambda score: 0.0
    low = min(scores)
    if floor is not None:
        low = min(low, floor)
    high = max(scores)
    if high == low:
        return lambda score: 1.0
    return lambda score: (score - low) / (high - low)
