"""Fusion of per-arm hit lists into one ranking: weighted RRF (k=2) or min-max linear."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.enums import FusionMode
from worker.store.protocol import ArmHit

RRF_K = 2


@dataclass
class Fused:
    doc_id: str
    score: float = 0.0
    raw_sum: float = 0.0
    arm_scores: dict[int, tuple[float, int]] = field(default_factory=dict)  # arm -> (raw, rank)


def fuse(hits: list[list[ArmHit]], weights: list[float], mode: FusionMode) -> list[Fused]:
    """Best first; ties by the larger sum of raw arm scores, then by id."""
    fused: dict[str, Fused] = {}
    for arm, (arm_hits, weight) in enumerate(zip(hits, weights, strict=True)):
        normalise = _min_max(arm_hits) if mode is FusionMode.LINEAR else None
        for rank, hit in enumerate(arm_hits, start=1):
            entry = fused.setdefault(hit.doc_id, Fused(hit.doc_id))
            entry.arm_scores[arm] = (hit.score, rank)
            entry.raw_sum += hit.score
            if normalise is None:
                entry.score += weight / (RRF_K + rank)
            else:
                entry.score += weight * normalise(hit.score)
    return sorted(fused.values(), key=lambda f: (-f.score, -f.raw_sum, f.doc_id))


def _min_max(arm_hits: list[ArmHit]):  # type: ignore[no-untyped-def]
    if not arm_hits:
        return lambda score: 0.0
    low = min(h.score for h in arm_hits)
    high = max(h.score for h in arm_hits)
    if high == low:
        return lambda score: 1.0
    return lambda score: (score - low) / (high - low)
