"""Small timing helpers shared by the benchmark runners."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), nearest-rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def spread(values: Sequence[float], digits: int = 1) -> str:
    """'median (min–max)' of repeated measurements."""
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def slope(samples: Sequence[tuple[float, float]]) -> float:
    """Least-squares growth per unit of time of (time, value) samples; 0 with fewer than two."""
    if len(samples) < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / len(samples)
    mean_v = sum(v for _, v in samples) / len(samples)
    variance = sum((t - mean_t) ** 2 for t, _ in samples)
    if variance == 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in samples) / variance
