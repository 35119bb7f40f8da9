"""What each key of /v1/metrics/current and /trends means, derived from core.metrics.

A counter or a gauge is one key; a histogram gives `<name>_count`, `<name>_sum` (seconds,
averaged over the count: the sample's `n`) and, for one marked for percentiles,
`<name>_bucket{le=…}`. A key may carry the labels the metric keeps for trends
(`…{status="503"}`); its meaning is the base's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from core.metrics import VOCABULARY, MetricKind


@dataclass(frozen=True)
class MetricDefinition:
    key: str
    unit: str
    description: str
    # For a `_sum`: the key it is averaged over (sent as the sample's `n`).
    count_key: str | None = None
    gauge: bool = False  # a level: windows and trend buckets show it as it was at their end


def _definitions() -> tuple[MetricDefinition, ...]:
    out: list[MetricDefinition] = []
    for metric in VOCABULARY:
        if not metric.trended:
            continue
        if metric.kind is MetricKind.COUNTER:
            out.append(MetricDefinition(metric.name, "count", metric.help))
        elif metric.kind is MetricKind.GAUGE:
            out.append(MetricDefinition(metric.name, "level", metric.help, gauge=True))
        elif metric.kind is MetricKind.HISTOGRAM:
            count = f"{metric.name}_count"
            out.append(MetricDefinition(count, "count", f"How many: {metric.help}"))
            out.append(MetricDefinition(f"{metric.name}_sum", "s", f"Total: {metric.help}", count))
            if metric.trend_buckets:
                out.append(
                    MetricDefinition(
                        f"{metric.name}_bucket", "count", f"How many at or below le: {metric.help}"
                    )
                )
    return tuple(out)


DEFINITIONS = _definitions()
BY_KEY = {d.key: d for d in DEFINITIONS}


@functools.lru_cache(maxsize=4096)  # a day of trends asks for each key once per bucket
def definition(key: str) -> MetricDefinition:
    """The definition of a key, labels and all; the count key of a `_sum` keeps its labels."""
    base, brace, labels = key.partition("{")
    found = BY_KEY.get(base)
    if found is None:
        return MetricDefinition(key, "count", f"Counter '{key}'")
    count_key = found.count_key + brace + labels if found.count_key else None
    return MetricDefinition(key, found.unit, found.description, count_key, found.gauge)
